package engine

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// peek returns rule r's decision for quantity 0, which changes nothing.
func peek(t *testing.T, e *Engine, r Rule) Decision {
	t.Helper()
	d, err := e.ThrottleAll(nil, []Rule{r}, 0)
	if err != nil {
		t.Fatalf("peek %s: %v", r.Key, err)
	}
	return d
}

// TestThrottleAllCombines walks three rules through admitted and limited
// calls: the least remaining (the first on a tie), the largest retry_after
// among the limiting rules (-1 if one never admits), the largest
// reset_after among all, and all or nothing.
func TestThrottleAllCombines(t *testing.T) {
	e, c := newTestEngine(t)
	rules := []Rule{
		{Key: []byte("a"), Family: FamilySW, Window: WindowQuota{Limit: 5, Window: int64(10 * sec)}},
		{Key: []byte("b"), Family: FamilyFW, Window: WindowQuota{Limit: 3, Window: int64(60 * sec)}},
		{Key: []byte("c"), Family: FamilySWC, Window: WindowQuota{Limit: 3, Window: int64(60 * sec)}},
	}
	steps := []struct {
		at   time.Duration
		qty  int64
		want Decision
		// remaining of a, b, c after the call, by peeks
		after [3]int64
	}{
		// b and c tie at 2: b, the first, is reported; c's reset (the
		// bucket after this one) is the largest.
		{0, 1, Decision{Limit: 3, Remaining: 2, RetryAfter: -1, ResetAfter: int64(120 * sec)}, [3]int64{4, 2, 2}},
		{sec, 2, Decision{Limit: 3, Remaining: 0, RetryAfter: -1, ResetAfter: int64(119 * sec)}, [3]int64{2, 0, 0}},
		// b and c limit: b until its bucket ends (58s), c until the 3 of
		// this bucket weigh 2 in the next (58s + 20s). a would admit: it
		// reports its remaining without the quantity, as nothing is
		// recorded (2, not 1), and its reset of 1s + 10s.
		{2 * sec, 1, Decision{Limited: true, Limit: 3, Remaining: 0, RetryAfter: int64(78 * sec), ResetAfter: int64(118 * sec)}, [3]int64{2, 0, 0}},
		// b and c can never admit 4: the whole request never can.
		{2 * sec, 4, Decision{Limited: true, Limit: 3, Remaining: 0, RetryAfter: -1, ResetAfter: int64(118 * sec)}, [3]int64{2, 0, 0}},
		// In the next minute: b is fresh, c's previous 3 weigh 3*(50/60),
		// so c has 0 left, a has 5.
		{70 * sec, 1, Decision{Limited: true, Limit: 3, Remaining: 0, RetryAfter: int64(10 * sec), ResetAfter: int64(50 * sec)}, [3]int64{5, 3, 0}},
		{80 * sec, 1, Decision{Limit: 3, Remaining: 0, RetryAfter: -1, ResetAfter: int64(100 * sec)}, [3]int64{4, 2, 0}},
	}
	for i, s := range steps {
		c.Set(time.Unix(0, epochDay+int64(s.at)))
		d, err := e.ThrottleAll(nil, rules, s.qty)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if d != s.want {
			t.Errorf("step %d (%v, qty %d):\n got %s\nwant %s", i, s.at, s.qty, fmtDecision(d), fmtDecision(s.want))
		}
		for j, r := range rules {
			if got := peek(t, e, r).Remaining; got != s.after[j] {
				t.Errorf("step %d: %s remaining %d after, want %d", i, r.Key, got, s.after[j])
			}
		}
	}
}

// TestThrottleAllLimitedReportsUnrecordedState: when the call is limited, a
// rule that would have admitted reports the state that stays. Before the
// fix, rule A (10 per minute, 6 used) answered 1 left for quantity 3 (as if
// recorded) and won the least-remaining choice over B, the limiting rule;
// and a fresh key C reported the reset of a key that was never written.
func TestThrottleAllLimitedReportsUnrecordedState(t *testing.T) {
	e, _ := newTestEngine(t)
	A := Rule{Key: []byte("A"), Family: FamilySW, Window: WindowQuota{Limit: 10, Window: int64(time.Minute)}}
	B := Rule{Key: []byte("B"), Family: FamilySW, Window: WindowQuota{Limit: 4, Window: int64(time.Minute)}}
	C := Rule{Key: []byte("C"), Family: FamilySW, Window: WindowQuota{Limit: 4, Window: int64(time.Hour)}}
	e.ThrottleWindow(nil, A, 6)
	e.ThrottleWindow(nil, B, 2)
	d, _ := e.ThrottleAll(nil, []Rule{A, B}, 3)
	if want := (Decision{Limited: true, Limit: 4, Remaining: 2, RetryAfter: int64(time.Minute), ResetAfter: int64(time.Minute)}); d != want {
		t.Errorf("A (4 left after the call) and B (2 left, limiting):\n got %s\nwant %s", fmtDecision(d), fmtDecision(want))
	}
	d, _ = e.ThrottleAll(nil, []Rule{B, C}, 3)
	if want := (Decision{Limited: true, Limit: 4, Remaining: 2, RetryAfter: int64(time.Minute), ResetAfter: int64(time.Minute)}); d != want {
		t.Errorf("B limiting, C fresh and not written:\n got %s\nwant %s", fmtDecision(d), fmtDecision(want))
	}
	if _, ok := e.Get(nil, C.Key); ok {
		t.Error("a limited call created C")
	}
}

// TestThrottleAllSameShardNewKey: a rule's new key can grow the shard's
// slab, moving every entry. Before the fix, the other rules wrote through
// pointers taken before it moved, and their requests were lost: a CL, SWC
// or FW key hit 10 times beside 10 new keys counted 7. Key b must end
// exactly as on an engine where it is hit alone.
func TestThrottleAllSameShardNewKey(t *testing.T) {
	q := WindowQuota{Limit: 20, Window: int64(time.Minute)}
	for _, f := range []Family{FamilyCL, FamilySW, FamilySWC, FamilyFW} {
		b := Rule{Key: []byte("b"), Family: f, Window: q, GCRA: quota}
		var got, want [2]any
		for _, alone := range []bool{false, true} {
			c := NewManualClock(time.Unix(0, epochDay))
			e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 1})
			for i := range 10 {
				rules := []Rule{b}
				if !alone { // a new key in the same shard, judged first
					rules = []Rule{{Key: fmt.Appendf(nil, "a%d", i), Family: f, Window: q, GCRA: quota}, b}
				}
				if _, err := e.ThrottleAll(nil, rules, 1); err != nil {
					t.Fatal(err)
				}
				c.Advance(sec)
			}
			d := peek(t, e, b)
			res := [2]any{fmtDecision(d), e.PTTL(nil, b.Key)}
			if alone {
				want = res
			} else {
				got = res
			}
			e.Close()
		}
		if got != want {
			t.Errorf("%s: b after 10 requests beside new keys %v, alone %v", f.Name(), got, want)
		}
	}
}

// TestThrottleAllCLRounding: a CL rule's times keep redis-cell's rounding
// (whole seconds, plus one only for a partial millisecond), others round up.
func TestThrottleAllCLRounding(t *testing.T) {
	e, c := newTestEngine(t)
	cl := Rule{Key: []byte("cl"), Family: FamilyCL, GCRA: GCRAQuota{MaxBurst: 0, Count: 1, Period: 1}}
	sw := Rule{Key: []byte("sw"), Family: FamilySW, Window: WindowQuota{Limit: 5, Window: int64(2 * sec)}}
	e.ThrottleAll(nil, []Rule{cl}, 1)
	// 0.5ms before the TAT: CL limits for 0.5ms, which redis-cell reports
	// as 0 seconds; sw is fresh and not written, so the CL rule's reset is
	// the largest.
	c.Advance(sec - 500*time.Microsecond)
	d, _ := e.ThrottleAll(nil, []Rule{sw, cl}, 1)
	if d.RetryAfter != 500_000 || d.ResetAfter != 500_000 {
		t.Fatalf("decision %s, want retry and reset 0.5ms", fmtDecision(d))
	}
	if got, want := d.Seconds(), (Result{Limited: true, Limit: 1, Remaining: 0, RetryAfter: 0, ResetAfter: 0}); got != want {
		t.Errorf("Seconds = %+v, want redis-cell's %+v", got, want)
	}
	if got, want := d.Millis(), (Result{Limited: true, Limit: 1, Remaining: 0, RetryAfter: 1, ResetAfter: 1}); got != want {
		t.Errorf("Millis = %+v, want %+v", got, want)
	}
	// Admitted 0.5ms after the TAT: the SW rule's reset (2s) is the
	// largest; the CL rule has the least remaining (0 of 1).
	c.Advance(time.Millisecond)
	d, _ = e.ThrottleAll(nil, []Rule{sw, cl}, 1)
	if got, want := d.Seconds(), (Result{Limit: 1, Remaining: 0, RetryAfter: -1, ResetAfter: 2}); got != want {
		t.Errorf("Seconds = %+v, want %+v", got, want)
	}
	// 0.5ms before the new TAT: CL's retry (0 s in redis-cell's rounding)
	// with SW's reset, 1.0005s rounded up to 2.
	c.Advance(sec - 500*time.Microsecond)
	d, _ = e.ThrottleAll(nil, []Rule{sw, cl}, 1)
	if got, want := d.Seconds(), (Result{Limited: true, Limit: 1, Remaining: 0, RetryAfter: 0, ResetAfter: 2}); got != want || d.RetryAfter != 500_000 {
		t.Errorf("Seconds = %+v (%s), want %+v", got, fmtDecision(d), want)
	}
}

func TestThrottleAllErrors(t *testing.T) {
	e, _ := newTestEngine(t)
	if _, err := e.ThrottleAll(nil, nil, 1); err != ErrNoRules {
		t.Errorf("no rules: %v, want ErrNoRules", err)
	}
	sw := Rule{Key: []byte("k"), Family: FamilySW, Window: WindowQuota{Limit: 5, Window: int64(sec)}}
	fw := Rule{Key: []byte("f"), Family: FamilyFW, Window: WindowQuota{Limit: 5, Window: int64(sec)}}
	_, err := e.ThrottleAll(nil, []Rule{sw, fw, sw}, 1)
	var dup *DuplicateKeyError
	if !errors.Is(err, ErrDuplicateKey) || !errors.As(err, &dup) || *dup != (DuplicateKeyError{First: 0, Second: 2}) {
		t.Errorf("duplicate: %v, want rules 0 and 2", err)
	}
	e.ThrottleWindow(nil, sw, 1)
	wrong := Rule{Key: []byte("k"), Family: FamilyFW, Window: sw.Window}
	_, err = e.ThrottleAll(nil, []Rule{fw, wrong}, 1)
	var wrongType *RuleWrongTypeError
	if !errors.Is(err, ErrWrongType) || !errors.As(err, &wrongType) || wrongType.Rule != 1 {
		t.Errorf("wrong type: %v, want rule 1's ErrWrongType", err)
	}
	if _, ok := e.Get(nil, fw.Key); ok {
		t.Error("a failed ThrottleAll wrote a key")
	}
	// A negative quantity would wrap a window's 32-bit counts.
	if _, err := e.ThrottleAll(nil, []Rule{fw}, -1); err != ErrNegativeQuantity {
		t.Errorf("negative quantity: %v", err)
	}
	if _, err := e.ThrottleWindow(nil, sw, -1); err != ErrNegativeQuantity {
		t.Errorf("negative quantity on SW: %v", err)
	}
	if d, _ := e.ThrottleWindow(nil, sw, 0); d.Remaining != 4 {
		t.Errorf("SW after a negative quantity: %+v", d)
	}
	cl := Rule{Key: []byte("z"), Family: FamilyCL, GCRA: GCRAQuota{MaxBurst: 1, Count: 0, Period: 1}}
	if _, err := e.ThrottleAll(nil, []Rule{fw, cl}, 1); err != ErrZeroRate {
		t.Errorf("zero rate: %v", err)
	}
	if _, ok := e.Get(nil, fw.Key); ok {
		t.Error("a failed ThrottleAll wrote a key")
	}
}

// TestThrottleAllConcurrent: 50 goroutines on a per-second FW rule and a
// per-minute SW rule over shared keys, on a clock moving 0.2ms a call: no
// rule ever records more than its limit in a window, and every request is
// recorded under both rules or neither.
func TestThrottleAllConcurrent(t *testing.T) {
	e, c := newTestEngine(t)
	c.Set(time.Unix(0, epochDay))
	perSec := Rule{Key: []byte("user:sec"), Family: FamilyFW, Window: WindowQuota{Limit: 10, Window: int64(sec)}}
	perMin := Rule{Key: []byte("user:min"), Family: FamilySW, Window: WindowQuota{Limit: 15, Window: int64(time.Minute)}}
	var (
		mu       sync.Mutex
		admitted int64
		wg       sync.WaitGroup
	)
	for g := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rules := []Rule{perSec, perMin}
			if g%2 == 1 {
				rules = []Rule{perMin, perSec} // either order
			}
			for range 200 {
				c.Advance(200 * time.Microsecond)
				d, err := e.ThrottleAll(nil, rules, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if !d.Limited {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// 10,000 calls over 2s of fake time: 10 admitted in the first second,
	// 5 in the next (the minute's limit). The SW log holds every request
	// the minute admitted, with its time.
	s := e.shards[e.shardIndex(perMin.Key)]
	s.mu.Lock()
	log := s.log(s.lookup(perMin.Key, c.Now().UnixMilli()))
	ring := s.logs.ring(log)
	perBucket := map[int64]int64{}
	var recorded int64
	for i := range log.size {
		at, n := log.get(ring, i)
		perBucket[(at-epochDay)/int64(sec)] += int64(n)
		recorded += int64(n)
	}
	s.mu.Unlock()
	if recorded != admitted || admitted != 15 {
		t.Errorf("admitted %d, SW recorded %d, want 15 each", admitted, recorded)
	}
	for b, n := range perBucket {
		if n > 10 {
			t.Errorf("second %d: %d requests recorded, over the per-second limit", b, n)
		}
	}
	now := (c.Now().UnixNano() - epochDay) / int64(sec)
	if got := 10 - peek(t, e, perSec).Remaining; got != perBucket[now] {
		t.Errorf("FW counts %d in second %d, SW recorded %d there: a rule recorded what another rejected",
			got, now, perBucket[now])
	}
}
