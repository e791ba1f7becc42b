package main

import (
	"context"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/rls"
	rlsconfig "github.com/cellserver/cellserver/rls/config"
)

// TestRLSMetricLabels: the service labels a limit's metrics with the
// metric key the configuration builds for the request, as
// envoyproxy/ratelimit does: value_to_metric names the values it asks for
// and no others, share_threshold the shared pattern even with
// detailed_metric.
func TestRLSMetricLabels(t *testing.T) {
	c, err := rlsconfig.Parse("labels.yaml", []byte(`
domain: d
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit: {unit: minute, requests_per_unit: 10}
  - key: svc
    descriptors:
      - key: user
        value_to_metric: true
        rate_limit: {unit: minute, requests_per_unit: 10}
  - key: files
    value: files/*
    share_threshold: true
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	descriptors := [][]rlsconfig.Entry{
		{{Key: "route", Value: "/foo"}, {Key: "method", Value: "GET"}},
		{{Key: "svc", Value: "auth"}, {Key: "user", Value: "u1"}},
		{{Key: "files", Value: "files/a.pdf"}},
	}
	svc := rls.New(rls.Options{Decider: rls.EngineDecider(engine.New(engine.Options{})), Limits: configMatcher{c}})
	want := map[string]bool{}
	for _, entries := range descriptors {
		l, _ := c.Match("d", entries)
		if l == nil {
			t.Fatalf("%v matches no limit", entries)
		}
		want[l.FullKey] = true
		d := &ratelimitv3.RateLimitDescriptor{}
		for _, e := range entries {
			d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: e.Key, Value: e.Value})
		}
		if _, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{d}}); err != nil {
			t.Fatal(err)
		}
	}
	if !want["d.route_/foo.method"] || !want["d.svc.user_u1"] || !want["d.files_files/*"] {
		t.Fatalf("configuration's metric keys %v", want)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(svc.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "cellserver_rls_total_hits_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "descriptor" {
					got[lp.GetValue()] = true
				}
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("descriptor labels %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("descriptor labels %v, want %v", got, want)
			break
		}
	}
}
