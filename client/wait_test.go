package client

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestLeakyBucketQuota(t *testing.T) {
	tests := []struct {
		q       Quota
		want    string
		wantErr string
	}{
		{q: LeakyBucket(25, time.Second, time.Second), want: "LB 25 1000ms MAXWAIT 1000ms"},
		{q: LeakyBucket(1, 250*time.Millisecond, 0), want: "LB 1 250ms MAXWAIT 0ms"},
		{q: LeakyBucket(0, time.Second, time.Second), wantErr: "client: invalid quota: LB.THROTTLE count 0: want 1 to 4294967295"},
		{q: LeakyBucket(1<<32, time.Second, time.Second), wantErr: "client: invalid quota: LB.THROTTLE count 4294967296: want 1 to 4294967295"},
		{q: LeakyBucket(5, 1500*time.Microsecond, time.Second), wantErr: "client: invalid quota: LB.THROTTLE period 1.5ms: want whole milliseconds, 1ms to 100 years"},
		{q: LeakyBucket(5, 0, time.Second), wantErr: "client: invalid quota: LB.THROTTLE period 0s: want whole milliseconds, 1ms to 100 years"},
		{q: LeakyBucket(5, time.Second, -time.Millisecond), wantErr: "client: invalid quota: LB.THROTTLE max wait -1ms: want whole milliseconds, 0 to 100 years"},
		{q: LeakyBucket(5, time.Second, time.Microsecond), wantErr: "client: invalid quota: LB.THROTTLE max wait 1µs: want whole milliseconds, 0 to 100 years"},
	}
	for _, tt := range tests {
		err := tt.q.Err()
		switch {
		case tt.wantErr == "" && (err != nil || tt.q.String() != tt.want):
			t.Errorf("%v: Err %v, String %q, want %q", tt.q, err, tt.q.String(), tt.want)
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrInvalidQuota)):
			t.Errorf("Err() = %v, want %q", err, tt.wantErr)
		}
	}
}

// TestWaitPaces: 10 goroutines each Wait 10 times on one key at 50/s, as a
// fleet's workers would; the times Wait returned, all 100 together, are
// one interval (20 ms) apart, less the timers' jitter, and span 99
// intervals (1.98 s) within 10%.
func TestWaitPaces(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 2 s")
	}
	s := startWallClockServer(t)
	l := s.limiter(t)
	const (
		workers  = 10
		waits    = 10
		interval = 20 * time.Millisecond
		// jitter is how much closer than an interval two departures may
		// be: each is late by its reply's trip, its timer's lateness and
		// its goroutine's scheduling, which under -race on a loaded
		// 2-core machine reach several milliseconds. Without pacing the
		// 100 waits would leave together; the span below checks the rate.
		jitter = interval / 2
	)
	q := LeakyBucket(50, time.Second, time.Second)
	ctx := context.Background()
	var (
		mu         sync.Mutex // guards departures
		departures []time.Time
		wg         sync.WaitGroup
	)
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range waits {
				if err := l.Wait(ctx, "stripe-api", q); err != nil {
					errs <- err
					return
				}
				now := time.Now()
				mu.Lock()
				departures = append(departures, now)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.SortFunc(departures, func(a, b time.Time) int { return a.Compare(b) })
	minGap := time.Duration(1<<63 - 1)
	for i := 1; i < len(departures); i++ {
		minGap = min(minGap, departures[i].Sub(departures[i-1]))
	}
	span := departures[len(departures)-1].Sub(departures[0])
	want := (workers*waits - 1) * interval
	t.Logf("%d departures: closest %v apart, first to last %v (want %v)", len(departures), minGap, span, want)
	if minGap < interval-jitter {
		t.Errorf("two departures %v apart, want at least %v - %v", minGap, interval, jitter)
	}
	if span < want*9/10 || span > want*11/10 {
		t.Errorf("first to last departure %v, want %v within 10%%", span, want)
	}
}

// TestWaitRefused: a full queue refuses a Wait at once with the server's
// retry time and reserves nothing; so does one whose ctx deadline comes
// before its departure.
func TestWaitRefused(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	ctx := context.Background()
	q := LeakyBucket(10, time.Second, 200*time.Millisecond) // every 100 ms, 3 places

	// Fill the queue: departures now, in 100 ms and in 200 ms.
	if r, err := l.ThrottleN(ctx, "api", q, 3); err != nil || r.Limited || r.RetryAfter != 0 || r.Limit != 3 || r.Remaining != 0 {
		t.Fatalf("filling the queue: %+v %v", r, err)
	}
	err := l.Wait(ctx, "api", q)
	var lim *LimitedError
	if !errors.As(err, &lim) || lim.Key != "api" || lim.RetryAfter != 100*time.Millisecond {
		t.Fatalf("full queue: %v, want a *LimitedError retrying in 100ms", err)
	}
	if want := `client: LB.THROTTLE "api": queue full; retry in 100ms`; err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
	if r, _ := l.ThrottleN(ctx, "api", q, 0); r.RetryAfter != 300*time.Millisecond {
		t.Errorf("after the refusal, a departure in %v, want 300ms: nothing reserved", r.RetryAfter)
	}

	// A deadline 150 ms away, with the next departure 200 ms away.
	s.clock.Advance(100 * time.Millisecond)
	dctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = l.Wait(dctx, "api", q)
	if !errors.As(err, &lim) || lim.RetryAfter < 50*time.Millisecond || lim.RetryAfter > 200*time.Millisecond {
		t.Errorf("departure after the deadline: %v, want a *LimitedError", err)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("refused after %v, want at once", took)
	}
	if r, _ := l.ThrottleN(ctx, "api", q, 0); r.RetryAfter != 200*time.Millisecond {
		t.Errorf("after the refusal, a departure in %v, want 200ms: nothing reserved", r.RetryAfter)
	}

	// Once the queue has drained, Wait returns at once.
	s.clock.Advance(200 * time.Millisecond)
	if err := l.Wait(ctx, "api", q); err != nil {
		t.Errorf("empty queue: %v", err)
	}
}

// TestWaitCancel: a Wait whose ctx ends during its wait returns ctx.Err()
// at once, and its departure stays taken; a ctx done before the call
// reserves nothing.
func TestWaitCancel(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	ctx := context.Background()
	q := LeakyBucket(10, time.Second, 10*time.Second) // every 100 ms

	if r, err := l.ThrottleN(ctx, "api", q, 20); err != nil || r.Limited {
		t.Fatalf("queueing 2 s of departures: %+v %v", r, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	if err := l.Wait(cctx, "api", q); err != context.Canceled {
		t.Errorf("cancelled during the wait: %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("returned %v after the call, want soon after the cancel", took)
	}
	if r, _ := l.ThrottleN(ctx, "api", q, 0); r.RetryAfter != 2100*time.Millisecond {
		t.Errorf("after the cancel, a departure in %v, want 2.1s: the cancelled one stays taken", r.RetryAfter)
	}

	if err := l.Wait(cctx, "api", q); err != context.Canceled {
		t.Errorf("ctx done before the call: %v, want context.Canceled", err)
	}
	if r, _ := l.ThrottleN(ctx, "api", q, 0); r.RetryAfter != 2100*time.Millisecond {
		t.Errorf("after a call on a done ctx, a departure in %v, want 2.1s: nothing reserved", r.RetryAfter)
	}
}

// TestWaitErrors: Wait takes only a valid LeakyBucket quota; Middleware
// and ThrottleAll refuse one.
func TestWaitErrors(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	ctx := context.Background()
	for _, q := range []Quota{GCRA(15, 30, time.Minute), LeakyBucket(0, time.Second, 0), {}} {
		if err := l.Wait(ctx, "k", q); !errors.Is(err, ErrInvalidQuota) {
			t.Errorf("Wait with %v: %v, want ErrInvalidQuota", q, err)
		}
	}
	if err := l.Wait(ctx, "k", GCRA(15, 30, time.Minute)); err.Error() != "client: invalid quota: Wait takes a LeakyBucket quota, not CL 15 30 60, which admits or refuses now" {
		t.Errorf("Wait with a GCRA quota: %v", err)
	}

	func() {
		defer func() {
			if err, _ := recover().(error); !errors.Is(err, ErrInvalidQuota) {
				t.Errorf("Middleware with a LeakyBucket quota panicked with %v, want ErrInvalidQuota", err)
			}
		}()
		Middleware(l, LeakyBucket(25, time.Second, time.Second), MiddlewareOptions{}, http.NotFoundHandler())
	}()

	_, err := l.ThrottleAll(ctx, []Rule{{Key: "k", Quota: LeakyBucket(25, time.Second, time.Second)}}, 1)
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		t.Errorf("ThrottleAll with an LB rule: %v, want the server's refusal", err)
	}
}
