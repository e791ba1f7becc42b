package engine

import (
	"math"
	"testing"
	"time"
)

// start is an arbitrary instant with a sub-second part, so rounding shows.
var start = time.Unix(1_795_336_191, 675_642_640).UnixNano()

func ms(n int64) int64 { return n * 1_000_000 }

// TestGCRARedisCellTable replays redis-cell's own it_rate_limits table: a
// limit of 5 per second with max_burst 4, on one key, at fixed instants.
func TestGCRARedisCellTable(t *testing.T) {
	q := GCRAQuota{MaxBurst: 4, Count: 1, Period: 1}
	steps := []struct {
		at, quantity         int64
		limited              bool
		remaining            int64
		resetNanos, retryMsg int64 // exact spans before rounding; retry -1 means none
	}{
		{0, 6, true, 5, 0, -1},
		{0, 1, false, 4, ms(1000), -1},
		{0, 1, false, 3, ms(2000), -1},
		{0, 1, false, 2, ms(3000), -1},
		{0, 1, false, 1, ms(4000), -1},
		{0, 1, false, 0, ms(5000), -1},
		{0, 1, true, 0, ms(5000), 1000},
		{ms(3000), 1, false, 2, ms(3000), -1},
		{ms(3100), 1, false, 1, ms(3900), -1},
		{ms(4000), 1, false, 1, ms(4000), -1},
		{ms(8000), 1, false, 4, ms(1000), -1},
		{ms(9500), 1, false, 4, ms(1000), -1},
		{ms(9500), 0, false, 4, ms(1000), -1},
		{ms(9500), 2, false, 2, ms(3000), -1},
		{ms(9500), 5, true, 2, ms(3000), 3000},
	}
	var st gcraState
	for i, s := range steps {
		step, err := gcra(start+s.at, st, q, s.quantity)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		r := step.result
		wantRetry := int64(-1)
		if s.retryMsg >= 0 {
			wantRetry = s.retryMsg / 1000
		}
		wantReset := (s.resetNanos + ms(1000) - 1) / ms(1000) // whole ms here: round up
		if r.Limited != s.limited || r.Limit != 5 || r.Remaining != s.remaining ||
			r.ResetAfter != wantReset || r.RetryAfter != wantRetry {
			t.Errorf("step %d: got %+v, want limited=%v remaining=%d reset=%d retry=%d",
				i, r, s.limited, s.remaining, wantReset, wantRetry)
		}
		if step.store {
			st = gcraState{tat: step.tat, ok: true}
		}
	}
}

// TestGCRAReference checks the replies captured from redis-cell 0.5
// (docs/redis-cell-replies.md), on a fresh key or after one hit.
func TestGCRAReference(t *testing.T) {
	const max, min = math.MaxInt64, math.MinInt64
	cases := []struct {
		row           string
		afterOneHit   bool
		burst, count  int64
		period, qty   int64
		want          Result
		wantErr       error
		wantStored    bool
		wantTTLMillis int64
	}{
		{"1", false, 15, 30, 60, 1, Result{false, 16, 15, -1, 2}, nil, true, 2000},
		{"1b", true, 15, 30, 60, 1, Result{false, 16, 14, -1, 4}, nil, true, 4000},
		{"4c -0", false, 0, 30, 60, 1, Result{false, 1, 0, -1, 2}, nil, true, 2000},
		{"5", false, -1, 30, 60, 1, Result{true, 0, 0, -1, 0}, nil, false, 0},
		{"5b", false, -2, 30, 60, 1, Result{true, -1, 0, -1, 0}, nil, false, 0},
		{"5b-100", false, -100, 30, 60, 1, Result{true, -99, 0, -1, 0}, nil, false, 0},
		{"6", false, 15, 0, 60, 1, Result{}, ErrZeroRate, false, 0},
		{"7", false, 15, 30, 0, 1, Result{}, ErrZeroRate, false, 0},
		{"7b count", false, 15, -30, 60, 1, Result{true, 16, 0, -1, 0}, nil, false, 0},
		{"7b period", false, 15, 30, -60, 1, Result{true, 16, 0, -1, 0}, nil, false, 0},
		{"7c", false, 0, 30, 60, 1, Result{false, 1, 0, -1, 2}, nil, true, 2000},
		{"8", false, 15, 30, 60, 0, Result{false, 16, 16, -1, 0}, nil, true, 0},
		{"8b", true, 15, 30, 60, 0, Result{false, 16, 15, -1, 2}, nil, true, 2000},
		{"9", false, 15, 30, 60, 16, Result{false, 16, 0, -1, 32}, nil, true, 32000},
		{"9b", false, 15, 30, 60, 17, Result{true, 16, 16, -1, 0}, nil, false, 0},
		{"9b 100", false, 15, 30, 60, 100, Result{true, 16, 16, -1, 0}, nil, false, 0},
		{"10", false, 15, 30, 60, -1, Result{}, ErrExpire, false, 0},
		{"10b", true, 15, 30, 60, -1, Result{false, 16, 16, -1, 0}, nil, true, 0},
		{"14", false, max, 30, 60, 1, Result{true, min, 0, -1, 0}, nil, false, 0},
		{"14b", false, max - 1, 30, 60, 1, Result{true, max, 0, -1, 0}, nil, false, 0},
		{"14c", false, 15, max, 60, 1, Result{}, ErrZeroRate, false, 0},
		{"14d", false, 15, 30, max, 1, Result{true, 16, 0, -1, 0}, nil, false, 0},
		{"14e", false, 15, 30, 60, max, Result{}, ErrExpire, false, 0},
		{"14f", false, 15, 30, 60, min, Result{false, 16, 16, -1, 0}, nil, true, 0},
		{"14j 1e9", false, 15, 30, 60, 1_000_000_000, Result{true, 16, 16, -1, 0}, nil, false, 0},
		{"14j 1e12", false, 15, 30, 60, 1_000_000_000_000, Result{true, 16, 16, -1, 0}, nil, false, 0},
	}
	for _, c := range cases {
		t.Run(c.row, func(t *testing.T) {
			q := GCRAQuota{MaxBurst: c.burst, Count: c.count, Period: c.period}
			now := start
			var st gcraState
			if c.afterOneHit {
				step, err := gcra(now, st, q, 1)
				if err != nil || !step.store {
					t.Fatalf("first hit: %+v %v", step, err)
				}
				st = gcraState{tat: step.tat, ok: true}
				now += 1_000 // a microsecond later, as over the wire
			}
			step, err := gcra(now, st, q, c.qty)
			if err != c.wantErr {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if err != nil {
				return
			}
			if step.result != c.want {
				t.Errorf("result = %+v, want %+v", step.result, c.want)
			}
			if step.store != c.wantStored {
				t.Errorf("store = %v, want %v", step.store, c.wantStored)
			}
			if step.store && step.ttlMillis != c.wantTTLMillis && !(c.afterOneHit && step.ttlMillis == c.wantTTLMillis-1) {
				t.Errorf("ttl = %dms, want %dms", step.ttlMillis, c.wantTTLMillis)
			}
		})
	}
}

// TestGCRAStoredTAT checks the stored value is the new TAT in nanoseconds
// (reference row 2: GET gives now + 2s after one hit of 15/30/60).
func TestGCRAStoredTAT(t *testing.T) {
	step, err := gcra(start, gcraState{}, GCRAQuota{15, 30, 60}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(start + 2_000_000_000); step.tat != want {
		t.Errorf("tat = %d, want %d", step.tat, want)
	}
}

// TestGCRARetryAfterRounding: partial seconds round up at millisecond
// granularity, and a sub-millisecond remainder does not.
func TestGCRARetryAfterRounding(t *testing.T) {
	q := GCRAQuota{MaxBurst: 0, Count: 1, Period: 2} // one per 2s, no burst
	first, _ := gcra(start, gcraState{}, q, 1)
	st := gcraState{tat: first.tat, ok: true}
	cases := []struct {
		elapsed   int64
		wantRetry int64
	}{
		{ms(500), 2},          // 1.5s left → 2
		{ms(1000), 1},         // exactly 1s left → 1
		{ms(1000) + 1_000, 1}, // 0.999999s left: ms part 999 → 0+1 = 1
	}
	for _, c := range cases {
		step, _ := gcra(start+c.elapsed, st, q, 1)
		if !step.result.Limited {
			if c.elapsed < ms(2000) {
				continue
			}
			t.Fatalf("elapsed %d: not limited", c.elapsed)
		}
		if step.result.RetryAfter != c.wantRetry {
			t.Errorf("elapsed %dns: retry_after %d, want %d", c.elapsed, step.result.RetryAfter, c.wantRetry)
		}
	}
	// 0.0005s left: limited, and sub-millisecond parts do not round up.
	step, _ := gcra(start+ms(2000)-500_000, st, q, 1)
	if !step.result.Limited || step.result.RetryAfter != 0 || step.result.ResetAfter != 0 {
		t.Errorf("sub-ms remainder: %+v, want limited with retry 0 reset 0", step.result)
	}
}

func TestEmissionInterval(t *testing.T) {
	cases := []struct{ count, period, want int64 }{
		{30, 60, 2_000_000_000},
		{3, 1, 333_333_333},
		{0, 60, 0},
		{30, 0, 0},
		{math.MaxInt64, 60, 0},
		{30, math.MaxInt64, math.MaxInt64},
		{-30, 60, -2_000_000_000},
		{1, math.MinInt64, math.MinInt64},
		// period*1e9 overflows int64: one rounding of the 128-bit product,
		// not float64(period)*1e9 (which gives ...992 and ...330).
		{1_000_000_000, 9_007_199_254_740_993, 9_007_199_254_740_994},
		{3_000_000_000, 9_007_199_254_740_993, 3_002_399_751_580_331},
	}
	for _, c := range cases {
		if got := emissionInterval(c.count, c.period); got != c.want {
			t.Errorf("emissionInterval(%d, %d) = %d, want %d", c.count, c.period, got, c.want)
		}
	}
}
