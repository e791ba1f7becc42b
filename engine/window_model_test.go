package engine

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// This file checks the three window families against models that keep every
// admitted request and recompute each decision from scratch: a plain slice
// of (time, quantity), exact rationals (math/big) where SWC weighs a bucket,
// and a search over time where the engine solves for retry_after.

// arrival is one admitted request in a model's history.
type arrival struct{ at, qty int64 }

// modelDecision is what a model answers, in nanoseconds, and the key's
// expiry instant (0: no key).
type modelDecision struct {
	Decision
	end int64
}

// modelSW is the sliding log by brute force: the requests admitted in
// (now-window, now], every time from the whole history.
func modelSW(hist []arrival, now int64, q WindowQuota, qty int64) (modelDecision, []arrival) {
	live := func(t int64) (total, newest int64, any bool) {
		for _, a := range hist {
			if a.at > t-q.Window {
				total += a.qty
				newest, any = max(newest, a.at), true
			}
		}
		return
	}
	total, newest, any := live(now)
	d := modelDecision{Decision: Decision{Limit: q.Limit, RetryAfter: -1}}
	if total+qty <= q.Limit {
		if qty > 0 {
			hist = append(hist, arrival{now, qty})
			newest, any = max(newest, now), true // a later request may be held
		}
		d.Remaining = q.Limit - total - qty
	} else {
		d.Limited = true
		d.Remaining = max(q.Limit-total, 0)
		if qty <= q.Limit {
			// The first instant, among those when a request leaves, at
			// which the quantity fits.
			d.RetryAfter = -2
			for _, a := range hist {
				t := a.at + q.Window
				if t <= now {
					continue
				}
				if tot, _, _ := live(t); tot+qty <= q.Limit && (d.RetryAfter == -2 || t-now < d.RetryAfter) {
					d.RetryAfter = t - now
				}
			}
		}
	}
	if any {
		d.ResetAfter = newest + q.Window - now
		d.end = newest + q.Window
	}
	return d, hist
}

// bucketOf is the index of the bucket holding t, floor(t/w).
func bucketOf(t, w int64) int64 {
	b := t / w
	if t%w < 0 {
		b--
	}
	return b
}

// modelFW is the fixed window from the whole history.
func modelFW(hist []arrival, now int64, q WindowQuota, qty int64) (modelDecision, []arrival) {
	b := bucketOf(now, q.Window)
	end := (b + 1) * q.Window
	count := int64(0)
	for _, a := range hist {
		if bucketOf(a.at, q.Window) == b {
			count += a.qty
		}
	}
	d := modelDecision{Decision: Decision{Limit: q.Limit, RetryAfter: -1}}
	if count+qty <= q.Limit {
		if qty > 0 {
			hist = append(hist, arrival{now, qty})
		}
		count += qty
	} else {
		d.Limited = true
		if qty <= q.Limit {
			d.RetryAfter = end - now
		}
	}
	d.Remaining = max(q.Limit-count, 0)
	if count > 0 {
		d.ResetAfter, d.end = end-now, end
	}
	return d, hist
}

// swcEstimate is SWC's count at t as an exact rational: the requests in t's
// bucket plus those of the bucket before, weighted by how much of it the
// sliding window (t-w, t] still covers.
func swcEstimate(hist []arrival, t, w int64) *big.Rat {
	b := bucketOf(t, w)
	var cur, prev int64
	for _, a := range hist {
		switch bucketOf(a.at, w) {
		case b:
			cur += a.qty
		case b - 1:
			prev += a.qty
		}
	}
	elapsed := t - b*w
	est := big.NewRat(prev*(w-elapsed), 1) // prev * (w-elapsed) / w, + cur
	est.Quo(est, big.NewRat(w, 1))
	return est.Add(est, big.NewRat(cur, 1))
}

// swcFitsAt reports whether qty fits at t: estimate + qty <= limit.
func swcFitsAt(hist []arrival, t int64, q WindowQuota, qty int64) bool {
	est := swcEstimate(hist, t, q.Window)
	return est.Add(est, big.NewRat(qty, 1)).Cmp(big.NewRat(q.Limit, 1)) <= 0
}

// modelSWC is the sliding counter from the whole history, in rationals.
// retry_after is the earliest instant the quantity fits, found by a search
// that assumes nothing of the engine's closed forms: the estimate only falls
// as time passes with nothing arriving (checked by TestSWCRetryBruteForce
// on a fine grid), so a binary search over [now, now+2w] finds it.
func modelSWC(hist []arrival, now int64, q WindowQuota, qty int64) (modelDecision, []arrival) {
	d := modelDecision{Decision: Decision{Limit: q.Limit, RetryAfter: -1}}
	if swcFitsAt(hist, now, q, qty) {
		if qty > 0 {
			hist = append(hist, arrival{now, qty})
		}
	} else {
		d.Limited = true
		if qty <= q.Limit {
			lo, hi := now, now+2*q.Window // fits at hi: both buckets are gone
			for lo+1 < hi {
				mid := lo + (hi-lo)/2
				if swcFitsAt(hist, mid, q, qty) {
					hi = mid
				} else {
					lo = mid
				}
			}
			d.RetryAfter = hi - now
		}
	}
	// remaining: the largest r that fits, floor(limit - estimate).
	rem := new(big.Rat).Sub(big.NewRat(q.Limit, 1), swcEstimate(hist, now, q.Window))
	fl := new(big.Int).Quo(rem.Num(), rem.Denom()) // truncates toward zero
	if rem.Sign() < 0 {
		fl.SetInt64(0)
	}
	d.Remaining = fl.Int64()
	// A request in bucket b counts until the end of bucket b+1.
	b := bucketOf(now, q.Window)
	for _, a := range hist {
		if ab := bucketOf(a.at, q.Window); ab >= b-1 {
			d.end = max(d.end, (ab+2)*q.Window)
		}
	}
	if d.end > 0 {
		d.ResetAfter = d.end - now
	}
	return d, hist
}

type windowModel func(hist []arrival, now int64, q WindowQuota, qty int64) (modelDecision, []arrival)

// traceGen draws a random trace's steps: time steps that are sub-ms, exactly
// the window, around it, or anything up to two windows; quantities of 0, 1,
// up to the limit and above it.
type traceGen struct {
	rng *rand.Rand
	q   WindowQuota
}

func (g traceGen) step() time.Duration {
	w := g.q.Window
	switch g.rng.IntN(10) {
	case 0:
		return 0
	case 1:
		return time.Duration(g.rng.Int64N(1_000_000)) // sub-millisecond
	case 2:
		return time.Duration(w)
	case 3:
		return time.Duration(w + g.rng.Int64N(3) - 1)
	case 4:
		return time.Duration(g.rng.Int64N(2*w + 1))
	}
	return time.Duration(g.rng.Int64N(w/max(g.q.Limit, 1) + 1))
}

func (g traceGen) qty() int64 {
	switch g.rng.IntN(8) {
	case 0:
		return 0
	case 1:
		return g.q.Limit + 1 + g.rng.Int64N(3)
	case 2, 3:
		return 1 + g.rng.Int64N(g.q.Limit)
	}
	return 1
}

// traceWindows are the windows the traces draw from: sub-millisecond odd
// ones, 250ms, whole seconds, a minute.
var traceWindows = []int64{1, 7, 999_983, 1_000_000, 3_500_000, int64(250 * time.Millisecond),
	int64(time.Second), int64(10 * time.Second), int64(time.Minute)}

// checkAgainstModel runs traces random traces of steps calls each against
// family f and the model, and fails at the first difference in a decision
// or in the key's PTTL.
func checkAgainstModel(t *testing.T, f Family, model windowModel, traces, steps int) {
	if raceEnabled {
		traces /= 4 // the race detector slows the models tenfold
	}
	rng := rand.New(rand.NewPCG(uint64(f), 20261122))
	e, c := newTestEngine(t)
	var admitted, limited, retried, nevers, peeks int
	for tr := range traces {
		q := WindowQuota{Limit: 1 + rng.Int64N(8), Window: traceWindows[rng.IntN(len(traceWindows))]}
		if tr%10 == 0 {
			q.Limit = 50 + rng.Int64N(100)
		}
		g := traceGen{rng, q}
		key := []byte("trace")
		e.Delete(nil, key)
		now := epochDay + rng.Int64N(int64(time.Hour))
		var hist []arrival
		var calls []string
		for i := range steps {
			now += int64(g.step())
			qty := g.qty()
			r := Rule{Key: key, Family: f, Window: q}
			if tr%7 == 3 && i%5 == 4 { // a limit changed between calls
				r.Window.Limit = 1 + rng.Int64N(q.Limit+2)
			}
			c.Set(time.Unix(0, now))
			got, err := e.ThrottleWindow(nil, r, qty)
			if err != nil {
				t.Fatal(err)
			}
			var want modelDecision
			want, hist = model(hist, now, r.Window, qty)
			calls = append(calls, fmtCall(now, r.Window, qty))
			switch {
			case qty == 0:
				peeks++
			case !got.Limited:
				admitted++
			case got.RetryAfter >= 0:
				limited++
				retried++
			default:
				limited++
				nevers++
			}
			if got != want.Decision {
				t.Fatalf("trace %d, call %d:\n got %s\nwant %s\ncalls (time since the trace's first bucket, limit, window, qty):\n%s",
					tr, i, fmtDecision(got), fmtDecision(want.Decision), lastCalls(calls, 12))
			}
			nowMs := now / 1_000_000
			wantPTTL := int64(-2)
			if want.end > now {
				wantPTTL = expireMs(want.end) - nowMs
			}
			if gotPTTL := e.PTTL(nil, key); gotPTTL != wantPTTL && !(wantPTTL == -2 && gotPTTL >= 0 && nowMs <= expireMs(lastEnd(hist, f, q))) {
				t.Fatalf("trace %d, call %d: PTTL %d, want %d\ncalls:\n%s", tr, i, gotPTTL, wantPTTL, lastCalls(calls, 12))
			}
		}
	}
	t.Logf("%d traces, %d calls: %d admitted, %d limited (%d with a retry, %d never), %d peeks",
		traces, traces*steps, admitted, limited, retried, nevers, peeks)
	if retried < traces || nevers < traces/10 || admitted < traces*steps/4 {
		t.Errorf("the traces do not exercise every outcome")
	}
}

// lastEnd is when the key of the history's newest request goes, by the
// expiry rule of its family, for a key that limits nothing any more but
// whose last millisecond has not passed.
func lastEnd(hist []arrival, f Family, q WindowQuota) int64 {
	if len(hist) == 0 {
		return 0
	}
	at := hist[len(hist)-1].at
	switch f {
	case FamilySW:
		return at + q.Window
	case FamilyFW:
		return (bucketOf(at, q.Window) + 1) * q.Window
	}
	return (bucketOf(at, q.Window) + 2) * q.Window
}

func fmtCall(now int64, q WindowQuota, qty int64) string {
	return time.Duration(now-epochDay).String() + " limit " + fmtInt(q.Limit) + " window " +
		time.Duration(q.Window).String() + " qty " + fmtInt(qty)
}

func fmtInt(n int64) string { return big.NewInt(n).String() }

func lastCalls(calls []string, n int) string {
	s := ""
	for _, c := range calls[max(len(calls)-n, 0):] {
		s += "  " + c + "\n"
	}
	return s
}

// TestSlidingLogMatchesModel: random traces against SW give exactly the
// decisions (limited, remaining, retry_after and reset_after in ns) and the
// PTTL of a model that keeps every timestamp.
func TestSlidingLogMatchesModel(t *testing.T) {
	traces := 4000
	if testing.Short() {
		traces = 400
	}
	checkAgainstModel(t, FamilySW, modelSW, traces, 60)
}

// TestFixedWindowMatchesModel: likewise for FW, counted from the history.
func TestFixedWindowMatchesModel(t *testing.T) {
	traces := 4000
	if testing.Short() {
		traces = 400
	}
	checkAgainstModel(t, FamilyFW, modelFW, traces, 60)
}

// TestSlidingCounterMatchesModel: likewise for SWC, weighed in rationals.
func TestSlidingCounterMatchesModel(t *testing.T) {
	traces := 2000
	if testing.Short() {
		traces = 200
	}
	checkAgainstModel(t, FamilySWC, modelSWC, traces, 60)
}

// TestSWCRetryBruteForce checks swcRetry on a fine grid: for random states
// of a small window (so that every nanosecond can be tried), retry_after is
// the first instant at which the same request would be admitted, searched
// one nanosecond at a time over the current bucket, the next and the one
// after; and once admitted it stays admitted (the estimate never rises
// while nothing arrives, which modelSWC's binary search relies on). Each of
// swcRetry's three cases is met.
func TestSWCRetryBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := map[string]int{}
	for range 20_000 {
		w := 1 + rng.Int64N(400)
		q := WindowQuota{Limit: 1 + rng.Int64N(12), Window: w}
		start := epochDay + rng.Int64N(1_000)*w
		st := counterState{start: start, cur: rng.Int64N(q.Limit + 1), prev: rng.Int64N(2*q.Limit + 1), ok: true}
		if rng.IntN(5) == 0 {
			st.prev = 0
		}
		now := start + rng.Int64N(w)
		qty := 1 + rng.Int64N(q.Limit)
		d, _ := slidingCounter(now, st, q, qty)
		first := int64(-1)
		for dt := int64(0); dt <= 2*w; dt++ {
			dd, _ := slidingCounter(now+dt, st, q, qty)
			if !dd.Limited && first < 0 {
				first = dt
			}
			if dd.Limited && first >= 0 {
				t.Fatalf("state %+v %+v qty %d: admitted at +%d, limited again at +%d", st, q, qty, first, dt)
			}
		}
		if !d.Limited {
			if first != 0 {
				t.Fatalf("admitted now but the search says +%d", first)
			}
			continue
		}
		if d.RetryAfter != first {
			t.Fatalf("state %+v %+v, now at +%d, qty %d: retry %d, the search finds %d",
				st, q, now-start, qty, d.RetryAfter, first)
		}
		next := start + w - now
		switch {
		case d.RetryAfter < next:
			cases["this bucket"]++
		case d.RetryAfter < next+w:
			cases["the next bucket"]++
		default:
			cases["the bucket after"]++
		}
	}
	for _, c := range []string{"this bucket", "the next bucket", "the bucket after"} {
		if cases[c] < 100 {
			t.Errorf("only %d states retried in %s", cases[c], c)
		}
	}
	t.Logf("retries found in: %v", cases)
}

// TestSWCRetryLargeWindows checks swcRetry with real windows (up to the
// largest) where a nanosecond grid is out of reach: the request is limited
// one nanosecond before retry_after and admitted at it.
func TestSWCRetryLargeWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
	windows := []int64{int64(250 * time.Millisecond), int64(time.Second), int64(time.Hour), int64(24 * time.Hour), MaxWindow}
	for range 20_000 {
		w := windows[rng.IntN(len(windows))]
		q := WindowQuota{Limit: 1 + rng.Int64N(1_000_000), Window: w}
		if rng.IntN(4) == 0 {
			q.Limit = MaxWindowLimit - rng.Int64N(3)
		}
		start := (epochDay / w) * w
		st := counterState{start: start, cur: rng.Int64N(q.Limit + 1), prev: rng.Int64N(q.Limit + 1), ok: true}
		now := start + rng.Int64N(w)
		qty := 1 + rng.Int64N(q.Limit)
		d, _ := slidingCounter(now, st, q, qty)
		if !d.Limited {
			continue
		}
		at, _ := slidingCounter(now+d.RetryAfter, st, q, qty)
		before, _ := slidingCounter(now+d.RetryAfter-1, st, q, qty)
		if at.Limited || !before.Limited {
			t.Fatalf("state %+v %+v qty %d: retry %d; limited at it %v, a ns before %v",
				st, q, qty, d.RetryAfter, at.Limited, before.Limited)
		}
		checked++
	}
	if checked < 5_000 {
		t.Errorf("only %d limited states checked", checked)
	}
}

// TestModelsAgreeOnTables keeps the models honest: they answer the
// hand-written tables' first steps as the tables do.
func TestModelsAgreeOnTables(t *testing.T) {
	q := WindowQuota{Limit: 3, Window: int64(10 * sec)}
	var hist []arrival
	var d modelDecision
	for _, at := range []time.Duration{0, 2 * sec, 4 * sec} {
		d, hist = modelSW(hist, epochDay+int64(at), q, 1)
	}
	d, _ = modelSW(hist, epochDay+int64(7*sec), q, 2)
	if want := (Decision{Limited: true, Limit: 3, RetryAfter: int64(5 * sec), ResetAfter: int64(7 * sec)}); d.Decision != want {
		t.Errorf("modelSW: %s, want %s", fmtDecision(d.Decision), fmtDecision(want))
	}
	hist = slices.Clip([]arrival{{epochDay, 10}})
	d, _ = modelSWC(hist, epochDay+int64(5*sec), WindowQuota{Limit: 10, Window: int64(10 * sec)}, 1)
	if want := (Decision{Limited: true, Limit: 10, RetryAfter: int64(6 * sec), ResetAfter: int64(15 * sec)}); d.Decision != want {
		t.Errorf("modelSWC: %s, want %s", fmtDecision(d.Decision), fmtDecision(want))
	}
}
