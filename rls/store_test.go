package rls

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist"
)

// startSharedService is a Service deciding in shared mode's store (a
// miniredis), served over gRPC.
func startSharedService(t *testing.T) *testService {
	t.Helper()
	return startSharedServiceAhead(t, 0)
}

// startSharedServiceAhead is startSharedService on a store whose clock is
// ahead of this instance's by ahead.
func startSharedServiceAhead(t *testing.T, ahead time.Duration) *testService {
	t.Helper()
	m := miniredis.RunT(t)
	if ahead != 0 {
		m.SetTime(time.Now().Add(ahead))
	}
	client := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	local := engine.New(engine.Options{})
	t.Cleanup(local.Close)
	sh := persist.NewShared(client, persist.SharedOptions{Timeout: 5 * time.Second, Local: local, Fallback: persist.FallbackError})
	if err := sh.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	// Day-long windows: the table must not cross a window's boundary.
	limits := testLimits()
	for i := range limits {
		if limits[i].limit.Rule.Family == engine.FamilyFW {
			limits[i].limit.Rule.Window.Window = int64(24 * time.Hour)
		}
	}
	svc := New(Options{Decider: StoreDecider(sh), Limits: limits, Timeout: 10 * time.Second})
	return &testService{svc: svc, client: serveGRPC(t, svc)}
}

// TestShouldRateLimitShared runs the statuses table in shared mode: every
// step, descriptors with different hits_addend values included, answers
// as the engine's single pass does.
func TestShouldRateLimitShared(t *testing.T) {
	ts := startSharedService(t)
	runSteps(t, ts, statusSteps(), true)
}

// TestConcurrentCallersShared: 50 callers at once through the store admit
// exactly the limit.
func TestConcurrentCallersShared(t *testing.T) {
	concurrentCallers(t, startSharedService(t))
}

// TestSharedResetAtStoreClock: a fixed window's end is the store's, for a
// descriptor counted and for one only checked (hits_addend 0, nothing
// counted: its end read from the Decider's clock), though this instance's
// clock is 30 s behind the store's.
func TestSharedResetAtStoreClock(t *testing.T) {
	ts := startSharedServiceAhead(t, 30*time.Second)
	req := &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("api", "x"), withAddend(desc("user", "y"), 0)}}
	resp := ts.call(t, req)
	counted := resp.Statuses[0].DurationUntilReset.AsDuration()
	checked := resp.Statuses[1].DurationUntilReset.AsDuration()
	if d := counted - checked; d > time.Second || d < -time.Second {
		t.Errorf("two fixed windows of a day in one request end %v apart (counted %v, checked %v)", d, counted, checked)
	}
}
