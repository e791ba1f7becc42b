package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestWindowQuotas(t *testing.T) {
	tests := []struct {
		q       Quota
		want    string
		wantErr string
	}{
		{q: SlidingLog(100, 10*time.Second), want: "SW 100 10000ms"},
		{q: SlidingCounter(5, 250*time.Millisecond), want: "SWC 5 250ms"},
		{q: FixedWindow(1000, 24*time.Hour), want: "FW 1000 86400000ms"},
		{q: SlidingLog(0, time.Second), wantErr: "client: invalid quota: SW.THROTTLE limit 0: want 1 to 4294967295"},
		{q: FixedWindow(1<<32, time.Second), wantErr: "client: invalid quota: FW.THROTTLE limit 4294967296: want 1 to 4294967295"},
		{q: SlidingCounter(5, 1500*time.Microsecond), wantErr: "client: invalid quota: SWC.THROTTLE window 1.5ms: want whole milliseconds, 1ms to 100 years"},
		{q: SlidingLog(5, 0), wantErr: "client: invalid quota: SW.THROTTLE window 0s: want whole milliseconds, 1ms to 100 years"},
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

// TestThrottleWindowFamilies: each window family through the server, with
// times in milliseconds.
func TestThrottleWindowFamilies(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	ctx := context.Background()
	for _, q := range []Quota{SlidingLog(2, 500*time.Millisecond), SlidingCounter(2, 500*time.Millisecond), FixedWindow(2, 500*time.Millisecond)} {
		key := q.String()
		for i := int64(0); i < 2; i++ {
			r, err := l.Throttle(ctx, key, q)
			if err != nil || r.Limited || r.Limit != 2 || r.Remaining != 1-i || r.RetryAfter != NoRetry {
				t.Fatalf("%s hit %d: %+v %v", key, i, r, err)
			}
		}
		r, err := l.Throttle(ctx, key, q)
		if err != nil || !r.Limited || r.RetryAfter <= 0 || r.RetryAfter > time.Second || r.RetryAfter%time.Millisecond != 0 {
			t.Errorf("%s limited: %+v %v, want a retry in whole ms under 1s", key, r, err)
		}
		if r, _ := l.ThrottleN(ctx, key, q, 3); !r.Limited || r.RetryAfter != NoRetry {
			t.Errorf("%s quantity above the limit: %+v, want NoRetry", key, r)
		}
	}
}

// TestThrottleAll: all or nothing across a GCRA and a window rule.
func TestThrottleAll(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	ctx := context.Background()
	rules := []Rule{
		{Key: "u:sec", Quota: SlidingLog(2, time.Second)},
		{Key: "u:burst", Quota: GCRA(15, 30, time.Minute)},
	}
	for i := 0; i < 2; i++ {
		if r, err := l.ThrottleAll(ctx, rules, 1); err != nil || r.Limited {
			t.Fatalf("hit %d: %+v %v", i, r, err)
		}
	}
	r, err := l.ThrottleAll(ctx, rules, 1)
	if err != nil || !r.Limited || r.Limit != 2 || r.Remaining != 0 || r.RetryAfter != time.Second {
		t.Fatalf("third: %+v %v, want limited by the 2/s rule, retry 1s", r, err)
	}
	// The GCRA rule recorded only the two admitted calls.
	if g, _ := l.ThrottleN(ctx, "u:burst", rules[1].Quota, 0); g.Remaining != 14 {
		t.Errorf("GCRA remaining %d, want 14", g.Remaining)
	}
	if _, err := l.ThrottleAll(ctx, nil, 1); !errors.Is(err, ErrInvalidQuota) {
		t.Errorf("no rules: %v", err)
	}
	if _, err := l.ThrottleAll(ctx, []Rule{{Key: "x", Quota: SlidingLog(0, time.Second)}}, 1); !errors.Is(err, ErrInvalidQuota) {
		t.Errorf("bad rule: %v", err)
	}
}

// TestSetHeadersRoundUp: millisecond times become whole seconds, rounded up.
func TestSetHeadersRoundUp(t *testing.T) {
	h := http.Header{}
	Result{Limited: true, Limit: 2, RetryAfter: 1500 * time.Millisecond, ResetAfter: 2001 * time.Millisecond}.SetHeaders(h)
	if h.Get(HeaderRetryAfter) != "2" || h.Get(HeaderReset) != "3" {
		t.Errorf("headers %v, want Retry-After 2 and Reset 3", h)
	}
}
