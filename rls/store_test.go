package rls

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist"
)

// startSharedService is a Service deciding in shared mode's store (a
// miniredis), served over gRPC.
func startSharedService(t *testing.T) *testService {
	t.Helper()
	m := miniredis.RunT(t)
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
