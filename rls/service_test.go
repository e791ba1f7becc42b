package rls

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellserver/cellserver/engine"
)

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)

// want is one descriptor's expected status: its code, its remaining, and
// whether it has a current_limit.
type want struct {
	code      rlsv3.RateLimitResponse_Code
	remaining uint32
	limited   bool // has a current_limit
}

// step is one request of the statuses table and what each of its
// descriptors must get.
type step struct {
	name string
	req  *rlsv3.RateLimitRequest
	want []want
}

// TestShouldRateLimit runs the statuses table, in order, against one
// server at one instant, and checks every descriptor's status.
func TestShouldRateLimit(t *testing.T) {
	ts := startService(t, Options{})
	runSteps(t, ts, statusSteps(), false)
	// The shadow-mode limit counted its first hit and saw the second over.
	m := ts.svc.metrics.counters(seriesKey{"test", "shadow"})
	if m.total.Load() != 2 || m.shadow.Load() != 1 || m.within.Load() != 1 {
		t.Errorf("shadow metrics: total %d shadow %d within %d", m.total.Load(), m.shadow.Load(), m.within.Load())
	}
}

func statusSteps() []step {
	req := func(domain string, addend uint32, ds ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitRequest {
		return &rlsv3.RateLimitRequest{Domain: domain, HitsAddend: addend, Descriptors: ds}
	}
	return []step{
		{"per value 1", req("test", 0, desc("user", "alice")), []want{{ok, 1, true}}},
		{"per value 2", req("test", 0, desc("user", "alice")), []want{{ok, 0, true}}},
		{"per value over", req("test", 0, desc("user", "alice")), []want{{over, 0, true}}},
		{"another value", req("test", 0, desc("user", "bob")), []want{{ok, 1, true}}},
		{"nested wildcard", req("test", 0, desc("user", "carol", "path", "/abc")), []want{{ok, 0, true}}},
		{"nested wildcard over", req("test", 0, desc("user", "carol", "path", "/abc")), []want{{over, 0, true}}},
		{"nested no match", req("test", 0, desc("user", "carol", "path", "/zzz")), []want{{ok, 0, false}}},
		{"unlimited", req("test", 0, desc("unl", "1")), []want{{ok, math.MaxUint32, false}}},
		{"unlimited again", req("test", 0, desc("unl", "1")), []want{{ok, math.MaxUint32, false}}},
		{"shadow", req("test", 0, desc("shadow", "s")), []want{{ok, 0, true}}},
		{"shadow over answers OK", req("test", 0, desc("shadow", "s")), []want{{ok, 0, true}}},
		{"addend 2", req("test", 2, desc("api", "x")), []want{{ok, 1, true}}},
		// api x cannot take 2 more: nothing is counted, dave keeps 2.
		{"all or nothing", req("test", 2, desc("api", "x"), desc("user", "dave")), []want{{over, 0, true}, {ok, 2, true}}},
		{"nothing was counted", req("test", 2, desc("user", "dave")), []want{{ok, 0, true}}},
		{"addend 0 checks", req("test", 0, withAddend(desc("api", "x"), 0)), []want{{ok, 1, true}}},
		{"addend 0 did not count", req("test", 0, desc("api", "x")), []want{{ok, 0, true}}},
		{"descriptor addend wins", req("test", 5, withAddend(desc("user", "erin"), 1)), []want{{ok, 1, true}}},
		{"mixed addends", req("test", 0, withAddend(desc("user", "gus"), 2), withAddend(desc("many", "m"), 7)), []want{{ok, 0, true}, {ok, 3, true}}},
		{"mixed addends over", req("test", 0, withAddend(desc("user", "hal"), 1), withAddend(desc("many", "m"), 4)), []want{{ok, 2, true}, {over, 0, true}}},
		{"mixed addends nothing counted", req("test", 0, withAddend(desc("user", "hal"), 2)), []want{{ok, 0, true}}},
		{"same key twice sums", req("test", 0, desc("user", "frank"), desc("user", "frank")), []want{{ok, 0, true}, {ok, 0, true}}},
		{"same key over", req("test", 0, desc("user", "frank")), []want{{over, 0, true}}},
		{"no limit beside a limit", req("test", 0, desc("nothing", "here"), desc("user", "ivy")), []want{{ok, 0, false}, {ok, 1, true}}},
		{"unknown domain", req("elsewhere", 0, desc("user", "alice"), desc("api", "x")), []want{{ok, 0, false}, {ok, 0, false}}},
		{"blocks", req("test", 0, desc("blocked", "b")), []want{{over, 0, true}}},
		{"blocks beside a limit", req("test", 0, desc("user", "jay"), desc("blocked", "b")), []want{{ok, 2, true}, {over, 0, true}}},
		{"blocking counted nothing", req("test", 0, desc("user", "jay")), []want{{ok, 1, true}}},
		{"blocks beside a full limit", req("test", 0, desc("user", "jay"), desc("user", "jay"), desc("blocked", "b")), []want{{over, 0, true}, {over, 0, true}, {over, 0, true}}},
		{"blocks addend 0 checks", req("test", 0, withAddend(desc("blocked", "b"), 0)), []want{{ok, 0, true}}},
		{"cl burst", req("test", 3, desc("cl", "c")), []want{{ok, 0, true}}},
		{"cl over", req("test", 0, desc("cl", "c")), []want{{over, 0, true}}},
		// quota_mode, as envoyproxy/ratelimit: over the limit, the
		// descriptor is OK (nothing left) and limits nothing else.
		{"quota", req("test", 0, desc("quota", "q")), []want{{ok, 0, true}}},
		{"quota over", req("test", 0, desc("quota", "q"), desc("user", "quinn")), []want{{ok, 0, true}, {ok, 1, true}}},
		// A hit far larger than a GCRA bucket is refused: 5,124,096 hours
		// of emission interval would wrap around an int64 of nanoseconds.
		{"gcra huge addend", req("test", 0, withAddend(desc("slow", "s"), 5124096)), []want{{over, 0, true}}},
	}
}

// runSteps runs steps in order; shared's windows are a day long.
func runSteps(t *testing.T, ts *testService, steps []step, shared bool) {
	longest := time.Minute
	if shared {
		longest = 24 * time.Hour
	}
	t.Helper()
	for _, st := range steps {
		resp := ts.call(t, st.req)
		wantOverall := ok
		for _, w := range st.want {
			if w.code == over {
				wantOverall = over
			}
		}
		if resp.OverallCode != wantOverall || len(resp.Statuses) != len(st.want) {
			t.Fatalf("%s: overall %v with %d statuses, want %v with %d: %v", st.name, resp.OverallCode, len(resp.Statuses), wantOverall, len(st.want), resp)
		}
		for i, w := range st.want {
			s := resp.Statuses[i]
			if s.Code != w.code || s.LimitRemaining != w.remaining || (s.CurrentLimit != nil) != w.limited {
				t.Errorf("%s: status %d = %v, want %+v", st.name, i, s, w)
			}
			if w.limited && (s.DurationUntilReset == nil || s.DurationUntilReset.AsDuration() < 0 || s.DurationUntilReset.AsDuration() > longest) {
				t.Errorf("%s: status %d duration_until_reset %v", st.name, i, s.DurationUntilReset)
			}
		}
	}
}

// TestResponseHeaders: the RateLimit-* headers come from the descriptor
// with the least remaining, under the names configured.
func TestResponseHeaders(t *testing.T) {
	ts := startService(t, Options{ResponseHeaders: true, ResetHeader: "X-Reset"})
	resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("many", "h"), desc("user", "h")}})
	got := map[string]string{}
	for _, h := range resp.ResponseHeadersToAdd {
		got[h.Key] = h.Value
	}
	if got["RateLimit-Limit"] != "2" || got["RateLimit-Remaining"] != "1" || got["X-Reset"] != "60" || len(got) != 3 {
		t.Errorf("headers %v", got)
	}
	// Over its limit, a descriptor gives them (nothing left), though
	// another one before it would leave nothing either, as in
	// envoyproxy/ratelimit.
	ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{withAddend(desc("many", "h2"), 10)}})
	resp = ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		withAddend(desc("many", "h2"), 0), withAddend(desc("user", "h2"), 3)}})
	got = map[string]string{}
	for _, h := range resp.ResponseHeadersToAdd {
		got[h.Key] = h.Value
	}
	if resp.OverallCode != over || got["RateLimit-Limit"] != "2" || got["RateLimit-Remaining"] != "0" {
		t.Errorf("over the user's limit: %v, headers %v; want the user's (2, 0)", resp.OverallCode, got)
	}
	resp = ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("nothing", "h")}})
	if len(resp.ResponseHeadersToAdd) != 0 {
		t.Errorf("headers without a limit: %v", resp.ResponseHeadersToAdd)
	}
}

// TestLongValueCounted: a long value (a long path or header) is counted
// like any other, not refused, which would leave the request's every limit
// uncounted; two such values count apart. (The configuration keeps its key
// bounded: rls/config's TestLongValueKey.)
func TestLongValueCounted(t *testing.T) {
	ts := startService(t, Options{})
	long := strings.Repeat("p", 4000)
	for i, want := range []rlsv3.RateLimitResponse_Code{ok, ok, over} {
		resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", long)}})
		if resp.OverallCode != want {
			t.Fatalf("call %d with a %d-byte value: %v, want %v", i+1, len(long), resp, want)
		}
	}
	if resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", long+"x")}}); resp.OverallCode != ok {
		t.Fatalf("another long value: %v, want OK (counted apart)", resp)
	}
}

// TestConcurrentCallers: 50 callers at once on one descriptor of limit 10
// are admitted exactly 10 times.
func TestConcurrentCallers(t *testing.T) {
	concurrentCallers(t, startService(t, Options{}))
}

// concurrentCallers sends 50 calls at once on one descriptor of limit 10
// and checks that exactly 10 are admitted.
func concurrentCallers(t *testing.T, ts *testService) {
	t.Helper()
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := ts.client.ShouldRateLimit(context.Background(),
				&rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("many", "c")}})
			if err != nil {
				t.Error(err)
				return
			}
			if resp.OverallCode == ok {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 10 {
		t.Errorf("admitted %d of 50, want 10", admitted)
	}
}

// TestBadInput: requests no configuration can answer are refused with
// InvalidArgument and a message that says why; none crashes the server.
func TestBadInput(t *testing.T) {
	ts := startService(t, Options{})
	many := make([]*ratelimitv3.RateLimitDescriptor, MaxDescriptors+1)
	for i := range many {
		many[i] = desc("user", "u")
	}
	wide := desc()
	for range MaxEntries + 1 {
		wide.Entries = append(wide.Entries, desc("k", "v").Entries...)
	}
	cases := []struct {
		name string
		req  *rlsv3.RateLimitRequest
		msg  string
	}{
		{"empty domain", &rlsv3.RateLimitRequest{Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("a", "b")}}, "domain must not be empty"},
		{"no descriptors", &rlsv3.RateLimitRequest{Domain: "test"}, "descriptor list must not be empty"},
		{"no entries", &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc()}}, "has no entries"},
		{"empty key", &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("", "v")}}, "empty key"},
		{"too many descriptors", &rlsv3.RateLimitRequest{Domain: "test", Descriptors: many}, "at most 64"},
		{"too many entries", &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{wide}}, "at most 32"},
		{"NUL in a value", &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "a\x00b")}}, "without NUL"},
		{"NUL in the domain", &rlsv3.RateLimitRequest{Domain: "te\x00st", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "a")}}, "without NUL"},
		{"long value", &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", strings.Repeat("v", MaxValueLen+1))}}, "longer than"},
		{"long key", &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc(strings.Repeat("k", MaxEntryLen+1), "v")}}, "longer than"},
		{"huge addend", &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{withAddend(desc("user", "a"), math.MaxUint64)}}, "hits_addend"},
	}
	for _, c := range cases {
		_, err := ts.client.ShouldRateLimit(context.Background(), c.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), c.msg) {
			t.Errorf("%s: %v, want InvalidArgument with %q", c.name, err, c.msg)
		}
	}
	// Invalid UTF-8 never leaves a Go client (protobuf refuses to encode
	// it); a peer that sends it anyway is refused by the server's decoder,
	// and the handler itself refuses it too.
	_, err := ts.svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "\xff")}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("invalid UTF-8: %v", err)
	}
	// The server still answers.
	if resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "after")}}); resp.OverallCode != ok {
		t.Errorf("after bad input: %v", resp)
	}
}

// blockingDecider never decides: the request's deadline answers.
type blockingDecider struct{}

func (blockingDecider) Now() time.Time { return time.Now() }

func (blockingDecider) DecideAll(ctx context.Context, _ []engine.Rule, _ []int64, _ []engine.Decision) (engine.Decision, error) {
	<-ctx.Done()
	return engine.Decision{}, ctx.Err()
}

// TestTimeout: a decision that does not come within Options.Timeout is
// DeadlineExceeded.
func TestTimeout(t *testing.T) {
	ts := startService(t, Options{Decider: blockingDecider{}, Timeout: 20 * time.Millisecond})
	_, err := ts.client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "t")}})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("got %v, want DeadlineExceeded", err)
	}
}

// TestReplacesUnlimited: as in envoyproxy/ratelimit, an unlimited limit is
// never replaced, and its own replaces drop the limits they name.
func TestReplacesUnlimited(t *testing.T) {
	named := Limit{Name: "per_user", Unlimited: true}
	replacing := Limit{Name: "unl2", Unlimited: true, Replaces: []string{"per_user"}}
	limits := append(testMatcher{
		{"test", []Entry{{"unl", ""}}, named},
		{"test", []Entry{{"unl2", ""}}, replacing},
	}, testLimits()...)
	ts := startService(t, Options{Limits: limits})
	resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		desc("unl", "x"), desc("unl2", "y"), desc("user", "r"), desc("none", "z")}})
	if resp.OverallCode != ok {
		t.Fatalf("overall %v", resp.OverallCode)
	}
	for i, st := range resp.Statuses[:2] {
		if st.Code != ok || st.LimitRemaining != math.MaxUint32 || st.CurrentLimit != nil {
			t.Errorf("unlimited descriptor %d: %v, want OK with remaining MaxUint32", i, st)
		}
	}
	if st := resp.Statuses[2]; st.CurrentLimit != nil || st.LimitRemaining != 0 {
		t.Errorf("replaced descriptor: %v, want OK without a limit", st)
	}
	if st := resp.Statuses[3]; st.CurrentLimit != nil || st.LimitRemaining != 0 {
		t.Errorf("unmatched descriptor: %v", st)
	}
}

// TestFixedWindowResetWithNothingCounted: a fixed window's
// duration_until_reset, and the Reset header, are the time to the window's
// end even when nothing is counted in it (a hit larger than the limit, a
// check with hits_addend 0, a descriptor held back by another), as
// envoyproxy/ratelimit's CalculateReset always says; never 0.
func TestFixedWindowResetWithNothingCounted(t *testing.T) {
	ts := startService(t, Options{ResponseHeaders: true})
	ts.clock.Advance(15 * time.Second) // 45 s left in the minute
	for _, c := range []struct {
		name string
		ds   []*ratelimitv3.RateLimitDescriptor
	}{
		{"hit over the limit", []*ratelimitv3.RateLimitDescriptor{withAddend(desc("user", "r1"), 5)}},
		{"check", []*ratelimitv3.RateLimitDescriptor{withAddend(desc("user", "r2"), 0)}},
		{"held back", []*ratelimitv3.RateLimitDescriptor{desc("user", "r3"), withAddend(desc("many", "r3"), 11)}},
	} {
		resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: c.ds})
		for i, st := range resp.Statuses {
			if got := st.DurationUntilReset.AsDuration(); got != 45*time.Second {
				t.Errorf("%s: status %d duration_until_reset %v, want 45s", c.name, i, got)
			}
		}
		for _, h := range resp.ResponseHeadersToAdd {
			if h.Key == DefaultResetHeader && h.Value != "45" {
				t.Errorf("%s: %s: %s, want 45", c.name, h.Key, h.Value)
			}
		}
	}
}
