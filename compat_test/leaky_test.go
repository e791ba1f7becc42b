package compat_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestLBThrottlePacesAFleet: 20 goroutines share one LB.THROTTLE key of 50
// per second, each reserving a departure, waiting for it, and reserving
// the next, 100 calls in all. The departures, computed from the replies
// (the call's time plus its wait in ms), are never closer than the 20ms
// interval, and the last is 99 intervals (1.98s ± 5%) after the first: the
// queue stays full, so the fleet leaves at exactly the rate.
func TestLBThrottlePacesAFleet(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	rdb := srv.goRedis(t, func(o *redis.Options) { o.PoolSize = 20 })
	ctx := context.Background()
	const (
		workers  = 20
		calls    = 100
		interval = 20 * time.Millisecond
	)
	var (
		mu         sync.Mutex
		departures []time.Time
		maxRTT     time.Duration
		wg         sync.WaitGroup
	)
	next := make(chan struct{}, calls)
	for range calls {
		next <- struct{}{}
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				sent := time.Now()
				r, err := rdb.Do(ctx, "LB.THROTTLE", "fleet", 50, "1s", 1, "MS").Int64Slice()
				rtt := time.Since(sent)
				if err != nil || len(r) != 5 || r[0] != 0 {
					t.Errorf("LB.THROTTLE: %v, %v", r, err)
					return
				}
				dep := sent.Add(time.Duration(r[3]) * time.Millisecond)
				mu.Lock()
				departures, maxRTT = append(departures, dep), max(maxRTT, rtt)
				mu.Unlock()
				time.Sleep(time.Until(dep)) // the request goes now
			}
		}()
	}
	wg.Wait()
	if len(departures) != calls {
		t.Fatalf("%d departures, want %d", len(departures), calls)
	}
	slices.SortFunc(departures, func(a, b time.Time) int { return a.Compare(b) })
	// A departure computed from a reply is off by less than the wait's
	// rounding up to a ms plus the call's round trip, either way.
	slack := time.Millisecond + maxRTT
	for i := 1; i < calls; i++ {
		if gap := departures[i].Sub(departures[i-1]); gap < interval-slack {
			t.Errorf("departures %d and %d %v apart, under the interval %v (slack %v)", i-1, i, gap, interval, slack)
		}
	}
	span, want := departures[calls-1].Sub(departures[0]), (calls-1)*interval
	if tolerance := want/20 + slack; span < want-tolerance || span > want+tolerance {
		t.Errorf("first to last departure %v, want %v ± 5%% + %v", span, want, slack)
	}
	t.Logf("100 departures over %v, largest round trip %v", span, maxRTT)
}
