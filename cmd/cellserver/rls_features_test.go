package main

import (
	"context"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// featuresConfig has one limit per feature of the configuration format,
// envoyproxy/ratelimit's and cellserver's extensions, each small enough to
// reach in a few calls.
const featuresConfig = `domain: f
descriptors:
  - key: nested
    value: a
    descriptors:
      - key: inner
        rate_limit: {unit: hour, requests_per_unit: 1}
  - key: wild
    value: "pre*"
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: shared
    value: "pre*"
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: unl
    rate_limit: {unlimited: true}
  - key: week
    rate_limit: {unit: week, requests_per_unit: 1}
  - key: month
    rate_limit: {unit: month, requests_per_unit: 1}
  - key: year
    rate_limit: {unit: year, requests_per_unit: 1}
  - key: mult
    rate_limit: {unit: minute, unit_multiplier: 90, requests_per_unit: 1}
  - key: sw
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: sliding_window}
  - key: swc
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: sliding_counter}
  - key: fw
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: fixed_window}
  - key: gcra
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: gcra, burst: 1}
  - key: rep_a
    rate_limit: {name: a, unit: hour, requests_per_unit: 1}
  - key: rep_b
    rate_limit: {unit: hour, requests_per_unit: 100, replaces: [{name: a}]}
  - key: addend
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: aon1
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: aon2
    rate_limit: {unit: hour, requests_per_unit: 5}
`

// desc is one descriptor of a request: "key=value" entries, "key" alone
// for an empty value, and its own hits_addend when addend is set.
type desc struct {
	entries []string
	addend  *wrapperspb.UInt64Value
}

func d(entries ...string) desc { return desc{entries: entries} }

// TestRunRLSFeatures: every feature of the configuration format, loaded
// from a file by the real server and asked over gRPC, in a table of
// requests and the statuses they get.
func TestRunRLSFeatures(t *testing.T) {
	client := startRLS(t, featuresConfig, "--addr", "127.0.0.1:0").client
	call := func(hits uint32, ds ...desc) *rlsv3.RateLimitResponse {
		t.Helper()
		req := &rlsv3.RateLimitRequest{Domain: "f", HitsAddend: hits}
		for _, x := range ds {
			rd := &ratelimitv3.RateLimitDescriptor{}
			for _, e := range x.entries {
				k, v, _ := strings.Cut(e, "=")
				rd.Entries = append(rd.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: k, Value: v})
			}
			rd.HitsAddend = x.addend
			req.Descriptors = append(req.Descriptors, rd)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := client.ShouldRateLimit(ctx, req)
		if err != nil {
			t.Fatalf("ShouldRateLimit %v: %v", ds, err)
		}
		return resp
	}
	// codes is the overall code, then each descriptor's.
	codes := func(r *rlsv3.RateLimitResponse) string {
		s := []string{r.OverallCode.String()}
		for _, st := range r.Statuses {
			s = append(s, st.Code.String())
		}
		return strings.Join(s, " ")
	}
	steps := []struct {
		name string
		hits uint32
		ds   []desc
		want string
	}{
		{"nested: first", 0, []desc{d("nested=a", "inner=x")}, "OK OK"},
		{"nested: over", 0, []desc{d("nested=a", "inner=x")}, "OVER_LIMIT OVER_LIMIT"},
		{"nested: another value has no rule", 0, []desc{d("nested=b", "inner=x")}, "OK OK"},
		{"nested: the outer entry alone has no limit", 0, []desc{d("nested=a")}, "OK OK"},
		{"wildcard: pre1", 0, []desc{d("wild=pre1")}, "OK OK"},
		{"wildcard: pre1 over", 0, []desc{d("wild=pre1")}, "OVER_LIMIT OVER_LIMIT"},
		{"wildcard: pre2 has its own limit", 0, []desc{d("wild=pre2")}, "OK OK"},
		{"wildcard: no match", 0, []desc{d("wild=other")}, "OK OK"},
		{"share_threshold: pre1", 0, []desc{d("shared=pre1")}, "OK OK"},
		{"share_threshold: pre2 shares it", 0, []desc{d("shared=pre2")}, "OVER_LIMIT OVER_LIMIT"},
		{"shadow: first", 0, []desc{d("shadow")}, "OK OK"},
		{"shadow: over, answered OK", 0, []desc{d("shadow")}, "OK OK"},
		{"unlimited", 0, []desc{d("unl"), d("unl")}, "OK OK OK"},
		{"week", 0, []desc{d("week")}, "OK OK"},
		{"week: over", 0, []desc{d("week")}, "OVER_LIMIT OVER_LIMIT"},
		{"month", 0, []desc{d("month")}, "OK OK"},
		{"month: over", 0, []desc{d("month")}, "OVER_LIMIT OVER_LIMIT"},
		{"year", 0, []desc{d("year")}, "OK OK"},
		{"year: over", 0, []desc{d("year")}, "OVER_LIMIT OVER_LIMIT"},
		{"unit_multiplier", 0, []desc{d("mult")}, "OK OK"},
		{"unit_multiplier: over", 0, []desc{d("mult")}, "OVER_LIMIT OVER_LIMIT"},
		{"sliding_window", 0, []desc{d("sw")}, "OK OK"},
		{"sliding_window: over", 0, []desc{d("sw")}, "OVER_LIMIT OVER_LIMIT"},
		{"sliding_counter", 0, []desc{d("swc")}, "OK OK"},
		{"sliding_counter: over", 0, []desc{d("swc")}, "OVER_LIMIT OVER_LIMIT"},
		{"fixed_window", 0, []desc{d("fw")}, "OK OK"},
		{"fixed_window: over", 0, []desc{d("fw")}, "OVER_LIMIT OVER_LIMIT"},
		{"gcra: burst 1 allows 2", 0, []desc{d("gcra")}, "OK OK"},
		{"gcra: second of the burst", 0, []desc{d("gcra")}, "OK OK"},
		{"gcra: over", 0, []desc{d("gcra")}, "OVER_LIMIT OVER_LIMIT"},
		{"replaces: a is replaced beside b", 0, []desc{d("rep_a"), d("rep_b")}, "OK OK OK"},
		{"replaces: again, a still replaced", 0, []desc{d("rep_a"), d("rep_b")}, "OK OK OK"},
		{"replaces: a alone counts", 0, []desc{d("rep_a")}, "OK OK"},
		{"replaces: a alone over", 0, []desc{d("rep_a")}, "OVER_LIMIT OVER_LIMIT"},
		{"hits_addend 0 checks without counting", 0, []desc{{entries: []string{"addend"}, addend: wrapperspb.UInt64(0)}}, "OK OK"},
		{"request's hits_addend 2", 2, []desc{d("addend")}, "OK OK"},
		{"the 2 were counted", 0, []desc{d("addend")}, "OVER_LIMIT OVER_LIMIT"},
		{"all or nothing: both admitted", 0, []desc{d("aon1"), d("aon2")}, "OK OK OK"},
		{"all or nothing: aon1 over, aon2 not counted", 0, []desc{d("aon1"), d("aon2")}, "OVER_LIMIT OVER_LIMIT OK"},
		{"aon2 had 1 of 5: 4 left", 4, []desc{d("aon2")}, "OK OK"},
		{"aon2 full", 0, []desc{d("aon2")}, "OVER_LIMIT OVER_LIMIT"},
	}
	for _, s := range steps {
		if got := codes(call(s.hits, s.ds...)); got != s.want {
			t.Errorf("%s: %s, want %s", s.name, got, s.want)
		}
	}
	// The units as the response reports them.
	for key, unit := range map[string]rlsv3.RateLimitResponse_RateLimit_Unit{
		"week": rlsv3.RateLimitResponse_RateLimit_WEEK, "month": rlsv3.RateLimitResponse_RateLimit_MONTH,
		"year": rlsv3.RateLimitResponse_RateLimit_YEAR, "mult": rlsv3.RateLimitResponse_RateLimit_MINUTE,
	} {
		st := call(0, d(key)).Statuses[0]
		if st.CurrentLimit == nil || st.CurrentLimit.Unit != unit || st.CurrentLimit.RequestsPerUnit != 1 {
			t.Errorf("%s: current_limit %v, want 1 per %v", key, st.CurrentLimit, unit)
		}
	}
}
