package engine

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// leakyStep is one LB call in a table: at an offset from epochDay, a
// quantity, and the exact decision in nanoseconds and the key's PTTL after.
type leakyStep struct {
	at        time.Duration
	qty       int64
	limited   bool
	remaining int64
	wait      time.Duration // RetryAfter: the wait when reserved, -1 never
	reset     time.Duration
	pttl      int64
}

// runLeakyTable runs steps against one LB key on a fresh engine.
func runLeakyTable(t *testing.T, q LeakyQuota, limit int64, steps []leakyStep) {
	t.Helper()
	e, c := newTestEngine(t)
	key := []byte("k")
	r := Rule{Key: key, Family: FamilyLB, Leaky: q}
	for i, s := range steps {
		c.Set(time.Unix(0, epochDay+int64(s.at)))
		d, err := e.ThrottleWindow(nil, r, s.qty)
		if err != nil {
			t.Fatalf("step %d (%v, qty %d): %v", i, s.at, s.qty, err)
		}
		want := Decision{Limited: s.limited, Limit: limit, Remaining: s.remaining,
			RetryAfter: int64(s.wait), ResetAfter: int64(s.reset)}
		if d != want {
			t.Errorf("step %d (%v, qty %d):\n got %s\nwant %s", i, s.at, s.qty, fmtDecision(d), fmtDecision(want))
		}
		if got := e.PTTL(nil, key); got != s.pttl {
			t.Errorf("step %d (%v, qty %d): PTTL %d, want %d", i, s.at, s.qty, got, s.pttl)
		}
	}
}

// TestLeakyBucketTable: 10 per second (one departure every 100ms), waiting
// at most a second: a queue of 11 (now's departure and the 10 within the
// second).
func TestLeakyBucketTable(t *testing.T) {
	q := LeakyQuota{Count: 10, Period: int64(sec), MaxWait: int64(sec)}
	runLeakyTable(t, q, 11, []leakyStep{
		// A peek on a fresh key: the whole queue is free, a call goes now.
		{at: 0, qty: 0, remaining: 11, wait: 0, reset: 0, pttl: noKey},
		// Steady: the first goes now, the next 100ms later.
		{at: 0, qty: 1, remaining: 10, wait: 0, reset: 100 * msD, pttl: 99},
		{at: 0, qty: 1, remaining: 9, wait: 100 * msD, reset: 200 * msD, pttl: 199},
		// A burst of 9 queues up to MAXWAIT: its last departs at exactly 1s.
		{at: 0, qty: 9, remaining: 0, wait: 200 * msD, reset: 1100 * msD, pttl: 1099},
		// The queue is full: refused until its head has left.
		{at: 0, qty: 1, limited: true, remaining: 0, wait: 100 * msD, reset: 1100 * msD, pttl: 1099},
		{at: 100 * msD, qty: 1, remaining: 0, wait: sec, reset: 1100 * msD, pttl: 1099},
		// Above the queue's capacity: never.
		{at: 100 * msD, qty: 12, limited: true, remaining: 0, wait: never, reset: 1100 * msD, pttl: 1099},
		// The whole capacity: once the queue has drained.
		{at: 100 * msD, qty: 11, limited: true, remaining: 0, wait: 1100 * msD, reset: 1100 * msD, pttl: 1099},
		// A peek as the queue drains: a call would wait 500ms.
		{at: 700 * msD, qty: 0, remaining: 6, wait: 500 * msD, reset: 500 * msD, pttl: 499},
		// At its tail the queue is empty and the key gone.
		{at: 1200 * msD, qty: 0, remaining: 11, wait: 0, reset: 0, pttl: noKey},
		// Off the 100ms grid: departures follow the tail, not the clock.
		{at: 1250 * msD, qty: 1, remaining: 10, wait: 0, reset: 100 * msD, pttl: 99},
		{at: 1290 * msD, qty: 2, remaining: 8, wait: 60 * msD, reset: 260 * msD, pttl: 259},
		// The whole capacity on an empty queue.
		{at: 5 * sec, qty: 11, remaining: 0, wait: 0, reset: 1100 * msD, pttl: 1099},
	})
}

// TestLeakyBucketNoWait: MAXWAIT 0 admits only a call that departs now, one
// every interval, like a GCRA without burst.
func TestLeakyBucketNoWait(t *testing.T) {
	q := LeakyQuota{Count: 2, Period: int64(sec), MaxWait: 0}
	runLeakyTable(t, q, 1, []leakyStep{
		{at: 0, qty: 1, remaining: 0, wait: 0, reset: 500 * msD, pttl: 499},
		{at: 100 * msD, qty: 1, limited: true, remaining: 0, wait: 400 * msD, reset: 400 * msD, pttl: 399},
		{at: 100 * msD, qty: 2, limited: true, remaining: 0, wait: never, reset: 400 * msD, pttl: 399},
		{at: 500 * msD, qty: 1, remaining: 0, wait: 0, reset: 500 * msD, pttl: 499},
	})
}

// TestLeakyIntervalRoundsUp: the interval is rounded up to whole
// nanoseconds, so the rate never exceeds count per period.
func TestLeakyIntervalRoundsUp(t *testing.T) {
	q := LeakyQuota{Count: 3, Period: int64(sec), MaxWait: int64(sec)}
	if got := q.Interval(); got != 333_333_334 {
		t.Fatalf("Interval = %d, want 333333334", got)
	}
	// A second holds now's departure and two more: 3 per second.
	d, _ := leakyBucket(epochDay, 0, q, 1)
	if d.Limit != 3 {
		t.Errorf("limit %d, want 3", d.Limit)
	}
}

// TestLeakyRoundingAndErrors: waits round up in seconds and milliseconds;
// out-of-range quotas and negative quantities are refused, writing nothing;
// another family's key is the wrong type, both ways.
func TestLeakyRoundingAndErrors(t *testing.T) {
	d, _ := leakyBucket(epochDay, epochDay+1_500_000_001, LeakyQuota{Count: 1, Period: int64(sec), MaxWait: 5 * int64(sec)}, 1)
	if r := d.Seconds(); r.RetryAfter != 2 || r.ResetAfter != 3 {
		t.Errorf("seconds %+v, want wait 2, reset 3", r)
	}
	if r := d.Millis(); r.RetryAfter != 1501 || r.ResetAfter != 2501 {
		t.Errorf("millis %+v, want wait 1501, reset 2501", r)
	}
	e, _ := newTestEngine(t)
	for _, q := range []LeakyQuota{{Count: 0, Period: 1}, {Count: 1, Period: 0}, {Count: 1, Period: 1, MaxWait: -1},
		{Count: 1, Period: MaxWindow + 1}, {Count: 1, Period: 1, MaxWait: MaxWindow + 1}} {
		if _, err := e.ThrottleWindow(nil, Rule{Key: []byte("k"), Family: FamilyLB, Leaky: q}, 1); err != ErrLeakyQuota {
			t.Errorf("%+v: err %v, want ErrLeakyQuota", q, err)
		}
	}
	lb := Rule{Key: []byte("k"), Family: FamilyLB, Leaky: LeakyQuota{Count: 1, Period: 1e9}}
	if _, err := e.ThrottleWindow(nil, lb, -1); err != ErrNegativeQuantity {
		t.Errorf("negative quantity: err %v", err)
	}
	if e.Len(nil) != 0 {
		t.Fatalf("an error wrote a key")
	}
	if _, err := e.ThrottleWindow(nil, lb, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Throttle(nil, []byte("k"), GCRAQuota{Count: 1, Period: 1}, 1); err != ErrWrongType {
		t.Errorf("CL on an LB key: err %v", err)
	}
	fw := Rule{Key: []byte("f"), Family: FamilyFW, Window: WindowQuota{Limit: 1, Window: 1e9}}
	if _, err := e.ThrottleWindow(nil, fw, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ThrottleWindow(nil, Rule{Key: []byte("f"), Family: FamilyLB, Leaky: lb.Leaky}, 1); err != ErrWrongType {
		t.Errorf("LB on an FW key: err %v", err)
	}
	if _, err := e.ThrottleAll(nil, []Rule{fw, lb}, 1); err != ErrLeakyInAll {
		t.Errorf("ThrottleAll with an LB rule: err %v", err)
	}
}

// TestLeakyConcurrentDepartures: 50 callers at one instant get 50 different
// departures, exactly one interval apart, the first now.
func TestLeakyConcurrentDepartures(t *testing.T) {
	e, c := newTestEngine(t)
	now := epochDay + 123_456_789
	c.Set(time.Unix(0, now))
	q := LeakyQuota{Count: 7, Period: int64(sec), MaxWait: 10 * int64(sec)} // 142857143ns apart
	r := Rule{Key: []byte("k"), Family: FamilyLB, Leaky: q}
	const callers = 50
	departures := make([]int64, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := e.ThrottleWindow(nil, r, 1)
			if err != nil || d.Limited {
				t.Errorf("caller %d: %s, %v", i, fmtDecision(d), err)
				return
			}
			departures[i] = now + d.RetryAfter
		}()
	}
	wg.Wait()
	slices.Sort(departures)
	for i, dep := range departures {
		if want := now + int64(i)*q.Interval(); dep != want {
			t.Fatalf("departure %d at now+%d, want now+%d", i, dep-now, want-now)
		}
	}
}

// TestLeakyRestoreKeepsLongerQueue: Changes gives an LB key's tail, and
// Restore keeps the later of two tails.
func TestLeakyRestoreKeepsLongerQueue(t *testing.T) {
	c := NewManualClock(time.Unix(0, epochDay))
	e := New(Options{Now: c.Now, SweepInterval: -1, TrackChanges: true})
	defer e.Close()
	r := Rule{Key: []byte("k"), Family: FamilyLB, Leaky: LeakyQuota{Count: 10, Period: 1e9, MaxWait: 1e9}}
	if _, err := e.ThrottleWindow(nil, r, 3); err != nil {
		t.Fatal(err)
	}
	e.MarkChanged([]string{"k"})
	recs := e.Changes(nil, 10)
	if len(recs) != 1 || recs[0].Family != FamilyLB || recs[0].Tail != epochDay+300_000_000 {
		t.Fatalf("Changes = %+v", recs)
	}
	shorter := recs[0]
	shorter.Tail -= 100_000_000
	if e.Restore(shorter) {
		t.Errorf("a shorter queue was taken")
	}
	longer := recs[0]
	longer.Tail += 100_000_000
	longer.ExpireAtMs += 100
	if !e.Restore(longer) {
		t.Errorf("a longer queue was not taken")
	}
	d, _ := e.ThrottleWindow(nil, r, 0)
	if d.RetryAfter != 400_000_000 {
		t.Errorf("after restore: %s, want a 400ms wait", fmtDecision(d))
	}
}
