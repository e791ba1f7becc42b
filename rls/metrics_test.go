package rls

import (
	"fmt"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// detailedMatcher matches every descriptor to l, with a MetricKey carrying
// the request's values, as detailed_metric does.
type detailedMatcher struct{ l Limit }

func (m detailedMatcher) Match(domain string, entries []Entry) *Limit {
	l := m.l
	l.MetricKey = domain
	for _, e := range entries {
		l.MetricKey += "." + e.Key + "_" + e.Value
	}
	l.Rule.Key = []byte("rls:" + l.MetricKey)
	return &l
}

// TestMetricSeriesBound: detailed_metric labels carry request values, yet
// the series stop growing at MaxMetricSeries; the rest go to the overflow
// series.
func TestMetricSeriesBound(t *testing.T) {
	detailed := fw("detailed", 1000, rlsv3.RateLimitResponse_RateLimit_MINUTE, time.Minute)
	ts := startService(t, Options{Limits: detailedMatcher{detailed}})
	for i := range MaxMetricSeries + 10 {
		ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("ip", fmt.Sprint(i))}})
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(ts.svc.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, f := range families {
		series[f.GetName()] = len(f.GetMetric())
		if f.GetName() == "cellserver_rls_requests_total" {
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == "ok" && m.GetCounter().GetValue() != MaxMetricSeries+10 {
					t.Errorf("ok requests %v", m.GetCounter().GetValue())
				}
			}
		}
	}
	if n := series["cellserver_rls_total_hits_total"]; n != MaxMetricSeries+1 {
		t.Errorf("%d series, want %d", n, MaxMetricSeries+1)
	}
	if c := ts.svc.metrics.counters(seriesKey{"", OverflowLabel}); c.total.Load() != 10 {
		t.Errorf("overflow series has %d hits, want 10", c.total.Load())
	}
}

// TestReplaces: a matched limit that replaces another makes the request
// ignore it.
func TestReplaces(t *testing.T) {
	minute := rlsv3.RateLimitResponse_RateLimit_MINUTE
	premium := fw("premium", 100, minute, time.Minute)
	premium.Replaces = []string{"per_user"}
	limits := append(testLimits(), testRule{"test", []Entry{{"plan", "premium"}}, premium})
	ts := startService(t, Options{Limits: limits})
	for range 3 {
		resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "r"), desc("plan", "premium")}})
		if resp.OverallCode != ok || resp.Statuses[0].CurrentLimit != nil {
			t.Fatalf("replaced limit applied: %v", resp)
		}
	}
}

// TestCollectDoesNotBlockCounting: a scrape that stops reading in the
// middle of the per-limit series holds back no request's counting.
func TestCollectDoesNotBlockCounting(t *testing.T) {
	m := newServiceMetrics()
	for i := range 3 {
		m.counters(seriesKey{"test", fmt.Sprint(i)})
	}
	ch := make(chan prometheus.Metric)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Collect(ch)
		close(ch)
	}()
	for metric := range ch {
		if metric.Desc() == m.totalDesc {
			break // Collect is now sending the per-limit series
		}
	}
	counted := make(chan struct{})
	go func() {
		m.counters(seriesKey{"test", "new"}).total.Add(1)
		close(counted)
	}()
	select {
	case <-counted:
	case <-time.After(2 * time.Second):
		t.Error("counting waited for the scrape")
	}
	for range ch {
	}
	<-done
	<-counted
}

// TestNearLimitCountsHitsPastThreshold: near_limit counts the hits past
// 80% of the limit, as envoyproxy/ratelimit's checkNearLimitThreshold
// does, not every hit of a request that ends past it.
func TestNearLimitCountsHitsPastThreshold(t *testing.T) {
	ts := startService(t, Options{})
	for _, c := range []struct {
		value  string
		addend uint64
	}{
		{"n1", 5},  // 5 of 10: not near
		{"n1", 4},  // 9 of 10: the 9th hit is past 8
		{"n2", 10}, // 10 of 10: the 9th and the 10th
	} {
		resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{withAddend(desc("many", c.value), c.addend)}})
		if resp.OverallCode != ok {
			t.Fatalf("%s +%d: %v", c.value, c.addend, resp)
		}
	}
	m := ts.svc.metrics.counters(seriesKey{"test", "many"})
	if m.near.Load() != 3 || m.within.Load() != 19 {
		t.Errorf("near %d within %d, want 3 and 19", m.near.Load(), m.within.Load())
	}
}
