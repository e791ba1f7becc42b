package client

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestGCRAQuota(t *testing.T) {
	tests := []struct {
		name    string
		q       Quota
		want    string // String(), for a valid quota
		wantErr string // Err(), for an invalid one
	}{
		{name: "redis-cell README", q: GCRA(15, 30, time.Minute), want: "CL 15 30 60"},
		{name: "no burst", q: GCRA(0, 1, time.Second), want: "CL 0 1 1"},
		{name: "a day", q: GCRA(99, 1000, 24*time.Hour), want: "CL 99 1000 86400"},
		{name: "zero", q: Quota{}, wantErr: "client: invalid quota: the zero Quota; make one with GCRA, SlidingLog, SlidingCounter, FixedWindow or LeakyBucket"},
		{name: "negative burst", q: GCRA(-1, 30, time.Minute), wantErr: "client: invalid quota: GCRA max burst -1: want 0 to 9223372036854775806"},
		{name: "burst overflows limit", q: GCRA(math.MaxInt64, 30, time.Minute), wantErr: "client: invalid quota: GCRA max burst 9223372036854775807: want 0 to 9223372036854775806"},
		{name: "zero count", q: GCRA(15, 0, time.Minute), wantErr: "client: invalid quota: GCRA count 0: want 1 or more"},
		{name: "zero period", q: GCRA(15, 30, 0), wantErr: "client: invalid quota: GCRA period 0s: CL.THROTTLE takes whole seconds, 1s or more"},
		{name: "sub-second period", q: GCRA(15, 30, 500*time.Millisecond), wantErr: "client: invalid quota: GCRA period 500ms: CL.THROTTLE takes whole seconds, 1s or more"},
		{name: "fractional period", q: GCRA(15, 30, 1500*time.Millisecond), wantErr: "client: invalid quota: GCRA period 1.5s: CL.THROTTLE takes whole seconds, 1s or more"},
		{name: "negative period", q: GCRA(15, 30, -time.Minute), wantErr: "client: invalid quota: GCRA period -1m0s: CL.THROTTLE takes whole seconds, 1s or more"},
		{name: "count above nanoseconds", q: GCRA(15, 2e9, time.Second), wantErr: "client: invalid quota: GCRA count 2000000000 per 1s: more than one request per nanosecond"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Err()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				if got := tt.q.String(); got != tt.want {
					t.Errorf("String() = %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Err() = %v, want %q", err, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidQuota) {
				t.Errorf("Err() = %v, does not wrap ErrInvalidQuota", err)
			}
			if got := tt.q.String(); got != "invalid quota" {
				t.Errorf("String() = %q, want %q", got, "invalid quota")
			}
		})
	}
}

// TestThrottleBurst walks redis-cell's README example on the server's fake
// clock: 16 requests at once, the 17th limited for 2 s, then one more.
func TestThrottleBurst(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	ctx := context.Background()
	q := GCRA(15, 30, time.Minute)
	for i := int64(1); i <= 16; i++ {
		got, err := l.Throttle(ctx, "user:42", q)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		want := Result{Limit: 16, Remaining: 16 - i, RetryAfter: NoRetry, ResetAfter: time.Duration(2*i) * time.Second}
		if got != want {
			t.Fatalf("request %d: %+v, want %+v", i, got, want)
		}
	}
	steps := []struct {
		name    string
		advance time.Duration
		want    Result
	}{
		{"17th, limited", 0, Result{Limited: true, Limit: 16, Remaining: 0, RetryAfter: 2 * time.Second, ResetAfter: 32 * time.Second}},
		{"1.5 s later, still limited", 1500 * time.Millisecond, Result{Limited: true, Limit: 16, Remaining: 0, RetryAfter: time.Second, ResetAfter: 31 * time.Second}},
		{"2 s after the burst", 500 * time.Millisecond, Result{Limit: 16, Remaining: 0, RetryAfter: NoRetry, ResetAfter: 32 * time.Second}},
	}
	for _, st := range steps {
		s.clock.Advance(st.advance)
		got, err := l.Throttle(ctx, "user:42", q)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got != st.want {
			t.Errorf("%s: %+v, want %+v", st.name, got, st.want)
		}
	}
}

func TestThrottleN(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	ctx := context.Background()
	q := GCRA(15, 30, time.Minute)
	steps := []struct {
		name     string
		quantity int64
		want     Result
	}{
		{"peek at a fresh key", 0, Result{Limit: 16, Remaining: 16, RetryAfter: NoRetry, ResetAfter: 0}},
		{"10 at once", 10, Result{Limit: 16, Remaining: 6, RetryAfter: NoRetry, ResetAfter: 20 * time.Second}},
		{"peek spends nothing", 0, Result{Limit: 16, Remaining: 6, RetryAfter: NoRetry, ResetAfter: 20 * time.Second}},
		{"7 do not fit", 7, Result{Limited: true, Limit: 16, Remaining: 6, RetryAfter: 2 * time.Second, ResetAfter: 20 * time.Second}},
		{"above the limit, never", 17, Result{Limited: true, Limit: 16, Remaining: 6, RetryAfter: NoRetry, ResetAfter: 20 * time.Second}},
		{"the 6 left", 6, Result{Limit: 16, Remaining: 0, RetryAfter: NoRetry, ResetAfter: 32 * time.Second}},
	}
	for _, st := range steps {
		got, err := l.ThrottleN(ctx, "k", q, st.quantity)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got != st.want {
			t.Errorf("%s: %+v, want %+v", st.name, got, st.want)
		}
	}
}

// TestThrottleErrors checks that nothing is sent for a bad call, and that a
// server error or a stopped server is an error, not a decision.
func TestThrottleErrors(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	ctx := context.Background()
	q := GCRA(15, 30, time.Minute)

	if _, err := l.Throttle(ctx, "k", GCRA(15, 30, 500*time.Millisecond)); !errors.Is(err, ErrInvalidQuota) {
		t.Errorf("sub-second period: %v, want ErrInvalidQuota", err)
	}
	if _, err := l.Throttle(ctx, "k", Quota{}); !errors.Is(err, ErrInvalidQuota) {
		t.Errorf("zero Quota: %v, want ErrInvalidQuota", err)
	}
	if _, err := l.ThrottleN(ctx, "k", q, -1); err == nil || err.Error() != "client: negative quantity -1" {
		t.Errorf("negative quantity: %v", err)
	}
	peek, err := l.ThrottleN(ctx, "k", q, 0)
	if err != nil || peek.Remaining != 16 {
		t.Errorf("after refused calls: %+v, %v; want a fresh key", peek, err)
	}

	// A reply that is not five integers.
	if _, err := resultOf([]int64{0, 16, 15, -1}, time.Second); !errors.Is(err, errReply) {
		t.Errorf("4 integers: %v, want errReply", err)
	}

	s.stop()
	_, err = l.Throttle(ctx, "k", q)
	if err == nil {
		t.Fatal("stopped server: no error")
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		t.Errorf("stopped server: %v is a server reply", err)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in   int64
		want time.Duration
	}{
		{-1, -time.Second},
		{0, 0},
		{32, 32 * time.Second},
		{math.MaxInt64, math.MaxInt64},
		{math.MinInt64, math.MinInt64},
		{9223372036, 9223372036 * time.Second},
		{9223372037, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := duration(tt.in, time.Second); got != tt.want {
			t.Errorf("duration(%d, s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
