package engine

import (
	"fmt"
	"testing"
	"time"
)

// epochDay is an instant that is a whole number of days since the Unix
// epoch, so a multiple of every window the tables use: FW and SWC buckets
// start on it.
const epochDay = int64(1_795_305_600) * 1_000_000_000

// never is a retry_after of -1: admitted, or never admissible.
const never = time.Duration(-1)

// noKey is a wanted PTTL meaning the key does not exist.
const noKey = -2

// windowStep is one call in a table: at an offset from epochDay, a quantity
// and the limit of that call (0: the table's), and the exact decision in
// nanoseconds and the key's PTTL after it.
type windowStep struct {
	at        time.Duration
	qty       int64
	limit     int64
	limited   bool
	remaining int64
	retry     time.Duration
	reset     time.Duration
	pttl      int64
}

// runWindowTable runs steps against one key of family f on a fresh engine
// and checks each decision and the key's PTTL after it.
func runWindowTable(t *testing.T, f Family, q WindowQuota, steps []windowStep) *Engine {
	t.Helper()
	e, c := newTestEngine(t)
	key := []byte("k")
	for i, s := range steps {
		c.Set(time.Unix(0, epochDay+int64(s.at)))
		r := Rule{Key: key, Family: f, Window: q}
		if s.limit != 0 {
			r.Window.Limit = s.limit
		}
		d, err := e.ThrottleWindow(nil, r, s.qty)
		if err != nil {
			t.Fatalf("step %d (%v, qty %d): %v", i, s.at, s.qty, err)
		}
		want := Decision{Limited: s.limited, Limit: r.Window.Limit, Remaining: s.remaining,
			RetryAfter: int64(s.retry), ResetAfter: int64(s.reset)}
		if d != want {
			t.Errorf("step %d (%v, qty %d):\n got %s\nwant %s", i, s.at, s.qty, fmtDecision(d), fmtDecision(want))
		}
		if got := e.PTTL(nil, key); got != s.pttl {
			t.Errorf("step %d (%v, qty %d): PTTL %d, want %d", i, s.at, s.qty, got, s.pttl)
		}
	}
	return e
}

func fmtDecision(d Decision) string {
	return fmt.Sprintf("limited=%t limit=%d remaining=%d retry=%v reset=%v",
		d.Limited, d.Limit, d.Remaining, time.Duration(d.RetryAfter), time.Duration(d.ResetAfter))
}

const (
	sec = time.Second
	msD = time.Millisecond
)

// TestFixedWindowTable: buckets aligned to multiples of the window since the
// epoch; a request at exactly the window's end is in the next bucket;
// quantity > 1; peeks; quantity above the limit; a lowered limit.
func TestFixedWindowTable(t *testing.T) {
	q := WindowQuota{Limit: 3, Window: int64(10 * sec)}
	e := runWindowTable(t, FamilyFW, q, []windowStep{
		// A peek on a fresh key creates nothing.
		{at: 3 * sec, qty: 0, remaining: 3, retry: never, reset: 0, pttl: noKey},
		// The first request at 3s is in the bucket [0s, 10s): 7s to go.
		{at: 3 * sec, qty: 1, remaining: 2, retry: never, reset: 7 * sec, pttl: 6999},
		{at: 4 * sec, qty: 2, remaining: 0, retry: never, reset: 6 * sec, pttl: 5999},
		{at: 5 * sec, qty: 1, limited: true, remaining: 0, retry: 5 * sec, reset: 5 * sec, pttl: 4999},
		// A peek at a full bucket is admitted and changes nothing.
		{at: 5 * sec, qty: 0, remaining: 0, retry: never, reset: 5 * sec, pttl: 4999},
		{at: 10*sec - 1, qty: 1, limited: true, remaining: 0, retry: 1, reset: 1, pttl: 0},
		// Exactly at the window's end: a new bucket.
		{at: 10 * sec, qty: 1, remaining: 2, retry: never, reset: 10 * sec, pttl: 9999},
		// Above the limit: never admitted, nothing recorded.
		{at: 11 * sec, qty: 4, limited: true, remaining: 2, retry: never, reset: 9 * sec, pttl: 8999},
		{at: 11 * sec, qty: 3, limited: true, remaining: 2, retry: 9 * sec, reset: 9 * sec, pttl: 8999},
		{at: 11 * sec, qty: 2, remaining: 0, retry: never, reset: 9 * sec, pttl: 8999},
		// The limit lowered to 2 with 3 counted: remaining clamps at 0, and
		// even a peek is limited until the bucket ends.
		{at: 12 * sec, qty: 0, limit: 2, limited: true, remaining: 0, retry: 8 * sec, reset: 8 * sec, pttl: 7999},
		{at: 12 * sec, qty: 1, limit: 2, limited: true, remaining: 0, retry: 8 * sec, reset: 8 * sec, pttl: 7999},
		// The last millisecond of the bucket: the key is still there.
		{at: 20*sec - msD, qty: 0, remaining: 0, retry: never, reset: msD, pttl: 0},
		// Gone when the bucket ends; a peek does not bring it back.
		{at: 20 * sec, qty: 0, remaining: 3, retry: never, reset: 0, pttl: noKey},
	})
	if _, ok := e.Get(nil, []byte("k")); ok {
		t.Error("FW key outlived its bucket")
	}
}

// TestFixedWindowSubSecond: a 250ms window, times in milliseconds.
func TestFixedWindowSubSecond(t *testing.T) {
	q := WindowQuota{Limit: 2, Window: int64(250 * msD)}
	runWindowTable(t, FamilyFW, q, []windowStep{
		{at: 100 * msD, qty: 1, remaining: 1, retry: never, reset: 150 * msD, pttl: 149},
		{at: 200 * msD, qty: 1, remaining: 0, retry: never, reset: 50 * msD, pttl: 49},
		{at: 240*msD + 500_000, qty: 1, limited: true, remaining: 0, retry: 9*msD + 500_000, reset: 9*msD + 500_000, pttl: 9},
		{at: 250 * msD, qty: 2, remaining: 0, retry: never, reset: 250 * msD, pttl: 249},
		{at: 499 * msD, qty: 1, limited: true, remaining: 0, retry: msD, reset: msD, pttl: 0},
		{at: 500 * msD, qty: 1, remaining: 1, retry: never, reset: 250 * msD, pttl: 249},
	})
	// Rounding: 9.5ms is 10 in milliseconds and 1 in seconds.
	d := Decision{Limited: true, Limit: 2, RetryAfter: int64(9*msD + 500_000), ResetAfter: int64(9*msD + 500_000)}
	if got, want := d.Millis(), (Result{Limited: true, Limit: 2, RetryAfter: 10, ResetAfter: 10}); got != want {
		t.Errorf("Millis = %+v, want %+v", got, want)
	}
	if got, want := d.Seconds(), (Result{Limited: true, Limit: 2, RetryAfter: 1, ResetAfter: 1}); got != want {
		t.Errorf("Seconds = %+v, want %+v", got, want)
	}
}

// TestSlidingCounterTable: the previous bucket weighs what the sliding
// window still covers of it; retry_after crosses into the next bucket, and
// reset_after is the end of the bucket after the last request's.
func TestSlidingCounterTable(t *testing.T) {
	q := WindowQuota{Limit: 10, Window: int64(10 * sec)}
	e := runWindowTable(t, FamilySWC, q, []windowStep{
		{at: 0, qty: 0, remaining: 10, retry: never, reset: 0, pttl: noKey},
		// A request counts until the end of the bucket after its own.
		{at: 0, qty: 10, remaining: 0, retry: never, reset: 20 * sec, pttl: 19999},
		// Full: in the next bucket, 10 weighs 9 at 11s, leaving room for 1.
		{at: 5 * sec, qty: 1, limited: true, remaining: 0, retry: 6 * sec, reset: 15 * sec, pttl: 14999},
		// The whole limit waits for the bucket after the next, when the 10
		// weigh nothing: 15s.
		{at: 5 * sec, qty: 10, limited: true, remaining: 0, retry: 15 * sec, reset: 15 * sec, pttl: 14999},
		{at: 11*sec - 1, qty: 1, limited: true, remaining: 0, retry: 1, reset: 9*sec + 1, pttl: 9000},
		{at: 11 * sec, qty: 1, remaining: 0, retry: never, reset: 19 * sec, pttl: 18999},
		// At 12s the previous bucket weighs 8: 8 + 1 + 1 fits, one more
		// waits 1s within this bucket (7 + 2 + 1 at 13s).
		{at: 12 * sec, qty: 1, remaining: 0, retry: never, reset: 18 * sec, pttl: 17999},
		{at: 12 * sec, qty: 1, limited: true, remaining: 0, retry: sec, reset: 18 * sec, pttl: 17999},
		// quantity 3 at 12s: 8 + 2 + 3 = 13, fits at 15s (5 + 2 + 3).
		{at: 12 * sec, qty: 3, limited: true, remaining: 0, retry: 3 * sec, reset: 18 * sec, pttl: 17999},
		// Quantity 9 waits for the next bucket, where this one's 2 weigh 1
		// at 25s: 13s.
		{at: 12 * sec, qty: 9, limited: true, remaining: 0, retry: 13 * sec, reset: 18 * sec, pttl: 17999},
		// Above the limit: never.
		{at: 12 * sec, qty: 11, limited: true, remaining: 0, retry: never, reset: 18 * sec, pttl: 17999},
		// A peek: 5 + 2 = 7 counted at 15s.
		{at: 15 * sec, qty: 0, remaining: 3, retry: never, reset: 15 * sec, pttl: 14999},
		// At 20s: 2 in the previous bucket, weighing 2; a peek does not
		// extend the key, which goes at 30s.
		{at: 20 * sec, qty: 0, remaining: 8, retry: never, reset: 10 * sec, pttl: 9999},
		// A lowered limit: 2*(1/2) = 1 counted against a limit of 1 at 25s.
		{at: 25 * sec, qty: 0, limit: 1, remaining: 0, retry: never, reset: 5 * sec, pttl: 4999},
		{at: 25 * sec, qty: 1, limit: 1, limited: true, remaining: 0, retry: 5 * sec, reset: 5 * sec, pttl: 4999},
		{at: 30 * sec, qty: 0, remaining: 10, retry: never, reset: 0, pttl: noKey},
	})
	if _, ok := e.Get(nil, []byte("k")); ok {
		t.Error("SWC key outlived the bucket after its last request's")
	}
}

// TestSlidingCounterSubSecond: a 250ms window; buckets start at multiples of
// 250ms since the epoch.
func TestSlidingCounterSubSecond(t *testing.T) {
	q := WindowQuota{Limit: 4, Window: int64(250 * msD)}
	runWindowTable(t, FamilySWC, q, []windowStep{
		{at: 200 * msD, qty: 4, remaining: 0, retry: never, reset: 300 * msD, pttl: 299},
		// At 250ms, 4 weighs 4; room for 1 once it weighs 3: at 312.5ms.
		{at: 250 * msD, qty: 1, limited: true, remaining: 0, retry: 62*msD + 500_000, reset: 250 * msD, pttl: 249},
		// Counted now, 1 lasts until the end of the next bucket, 750ms.
		{at: 312*msD + 500_000, qty: 1, remaining: 0, retry: never, reset: 437*msD + 500_000, pttl: 437},
		{at: 500 * msD, qty: 0, remaining: 3, retry: never, reset: 250 * msD, pttl: 249},
	})
}

// TestSlidingLogTable: the exact log. Rejected requests are not recorded, so
// a client that keeps retrying while blocked gets in once its old requests
// leave; retry_after is exactly when enough of them have left.
func TestSlidingLogTable(t *testing.T) {
	q := WindowQuota{Limit: 3, Window: int64(10 * sec)}
	e := runWindowTable(t, FamilySW, q, []windowStep{
		{at: 0, qty: 0, remaining: 3, retry: never, reset: 0, pttl: noKey},
		{at: 0, qty: 1, remaining: 2, retry: never, reset: 10 * sec, pttl: 9999},
		{at: 2 * sec, qty: 1, remaining: 1, retry: never, reset: 10 * sec, pttl: 9999},
		{at: 4 * sec, qty: 1, remaining: 0, retry: never, reset: 10 * sec, pttl: 9999},
		// Blocked: the request of 0s leaves at 10s.
		{at: 5 * sec, qty: 1, limited: true, remaining: 0, retry: 5 * sec, reset: 9 * sec, pttl: 8999},
		// Retrying while blocked records nothing and extends nothing.
		{at: 6 * sec, qty: 1, limited: true, remaining: 0, retry: 4 * sec, reset: 8 * sec, pttl: 7999},
		{at: 7 * sec, qty: 1, limited: true, remaining: 0, retry: 3 * sec, reset: 7 * sec, pttl: 6999},
		// Two need the requests of 0s and 2s to leave: at 12s.
		{at: 7 * sec, qty: 2, limited: true, remaining: 0, retry: 5 * sec, reset: 7 * sec, pttl: 6999},
		{at: 7 * sec, qty: 4, limited: true, remaining: 0, retry: never, reset: 7 * sec, pttl: 6999},
		// A peek: admitted, nothing extended.
		{at: 8 * sec, qty: 0, remaining: 0, retry: never, reset: 6 * sec, pttl: 5999},
		{at: 10*sec - 1, qty: 1, limited: true, remaining: 0, retry: 1, reset: 4*sec + 1, pttl: 4000},
		// Exactly one window after the first request, it has left.
		{at: 10 * sec, qty: 1, remaining: 0, retry: never, reset: 10 * sec, pttl: 9999},
		{at: 10 * sec, qty: 1, limited: true, remaining: 0, retry: 2 * sec, reset: 10 * sec, pttl: 9999},
		{at: 12 * sec, qty: 1, remaining: 0, retry: never, reset: 10 * sec, pttl: 9999},
		// A lowered limit: 3 counted against 2; one must leave first (4s's,
		// at 14s), and remaining clamps at 0.
		{at: 13 * sec, qty: 0, limit: 2, limited: true, remaining: 0, retry: sec, reset: 9 * sec, pttl: 8999},
		{at: 13 * sec, qty: 1, limit: 2, limited: true, remaining: 0, retry: 7 * sec, reset: 9 * sec, pttl: 8999},
		// The newest request (12s) leaves at 22s: the key lives until then.
		{at: 22*sec - msD, qty: 0, remaining: 2, retry: never, reset: msD, pttl: 0},
		{at: 22 * sec, qty: 0, remaining: 3, retry: never, reset: 0, pttl: noKey},
	})
	if _, ok := e.Get(nil, []byte("k")); ok {
		t.Error("SW key outlived its newest request")
	}
}

// TestSlidingLogSubSecond: a 250ms window with quantities above 1.
func TestSlidingLogSubSecond(t *testing.T) {
	q := WindowQuota{Limit: 5, Window: int64(250 * msD)}
	runWindowTable(t, FamilySW, q, []windowStep{
		{at: 0, qty: 2, remaining: 3, retry: never, reset: 250 * msD, pttl: 249},
		{at: 100 * msD, qty: 3, remaining: 0, retry: never, reset: 250 * msD, pttl: 249},
		{at: 200 * msD, qty: 2, limited: true, remaining: 0, retry: 50 * msD, reset: 150 * msD, pttl: 149},
		{at: 200 * msD, qty: 3, limited: true, remaining: 0, retry: 150 * msD, reset: 150 * msD, pttl: 149},
		// The 2 of 0ms leave at 250ms exactly.
		{at: 250 * msD, qty: 2, remaining: 0, retry: never, reset: 250 * msD, pttl: 249},
		// Sub-millisecond: the 3 of 100ms leave at 350ms exactly.
		{at: 350*msD - 1, qty: 2, limited: true, remaining: 0, retry: 1, reset: 150*msD + 1, pttl: 150},
		{at: 350 * msD, qty: 2, remaining: 1, retry: never, reset: 250 * msD, pttl: 249},
	})
}

// TestWindowPeekNeverCreatesNorExtends: for every family, a peek on a fresh
// key leaves no key, and a peek on a live key leaves its PTTL as it was.
func TestWindowPeekNeverCreatesNorExtends(t *testing.T) {
	for _, f := range []Family{FamilySW, FamilySWC, FamilyFW} {
		t.Run(f.Name(), func(t *testing.T) {
			e, c := newTrackingEngine(t)
			c.Set(time.Unix(0, epochDay+int64(3*sec)))
			r := Rule{Key: []byte("p"), Family: f, Window: WindowQuota{Limit: 5, Window: int64(10 * sec)}}
			if d, err := e.ThrottleWindow(nil, r, 0); err != nil || d.Limited || d.Remaining != 5 || d.ResetAfter != 0 {
				t.Fatalf("peek on a fresh key: %+v %v", d, err)
			}
			if _, ok := e.Get(nil, r.Key); ok || e.Len(nil) != 0 || e.Pending() != 0 {
				t.Fatal("a peek created a key, or noted a change")
			}
			e.ThrottleWindow(nil, r, 1)
			drain(e)
			before := e.PTTL(nil, r.Key)
			c.Advance(2 * sec)
			e.ThrottleWindow(nil, r, 0)
			if got := e.PTTL(nil, r.Key); got != before-2000 {
				t.Errorf("PTTL after a peek 2s later = %d, want %d", got, before-2000)
			}
			if n := e.Pending(); n != 0 {
				t.Errorf("a peek that changed nothing noted %d changes", n)
			}
		})
	}
}

// TestWindowKeysExpireAndSweep: every family's key is gone when it no
// longer limits anything; the sweep removes it and counts it.
func TestWindowKeysExpireAndSweep(t *testing.T) {
	e, c := newTestEngine(t)
	c.Set(time.Unix(0, epochDay))
	w := int64(10 * sec)
	for _, f := range []Family{FamilySW, FamilySWC, FamilyFW} {
		r := Rule{Key: []byte(f.Name()), Family: f, Window: WindowQuota{Limit: 5, Window: w}}
		if _, err := e.ThrottleWindow(nil, r, 1); err != nil {
			t.Fatal(err)
		}
	}
	lives := map[string]time.Duration{"sw": 10 * sec, "fw": 10 * sec, "swc": 20 * sec}
	for name, life := range lives {
		if got := e.PTTL(nil, []byte(name)); got != int64(life/msD)-1 {
			t.Errorf("%s: PTTL %d, want %d", name, got, int64(life/msD)-1)
		}
	}
	c.Set(time.Unix(0, epochDay+int64(10*sec)))
	if n := e.Sweep(); n != 2 {
		t.Errorf("Sweep at 10s removed %d keys, want 2 (sw, fw)", n)
	}
	if got := e.Counts(nil); got[FamilySWC] != 1 || len(got) != 1 {
		t.Errorf("Counts at 10s = %v, want one swc key", got)
	}
	c.Set(time.Unix(0, epochDay+int64(20*sec)-1))
	if n := e.Sweep(); n != 0 {
		t.Errorf("Sweep at 20s-1ns removed %d keys, want 0", n)
	}
	c.Set(time.Unix(0, epochDay+int64(20*sec)))
	if _, ok := e.Get(nil, []byte("swc")); ok {
		t.Error("swc key visible at 20s")
	}
	if n := e.Sweep() + int(e.ExpiredKeys()); n != 3 {
		t.Errorf("expired keys %d, want 3", n)
	}
	if e.Len(nil) != 0 || e.Used() != 0 {
		t.Errorf("after expiry: Len %d, Used %d", e.Len(nil), e.Used())
	}
}

// TestWindowWrongType: a key belongs to one family.
func TestWindowWrongType(t *testing.T) {
	e, _ := newTestEngine(t)
	q := WindowQuota{Limit: 5, Window: int64(sec)}
	fams := []Family{FamilySW, FamilySWC, FamilyFW}
	for _, f := range fams {
		key := []byte("k" + f.Name())
		e.ThrottleWindow(nil, Rule{Key: key, Family: f, Window: q}, 1)
		for _, g := range fams {
			_, err := e.ThrottleWindow(nil, Rule{Key: key, Family: g, Window: q}, 1)
			if (err == ErrWrongType) != (f != g) {
				t.Errorf("%s key, %s rule: %v", f.Name(), g.Name(), err)
			}
		}
		if _, err := e.Throttle(nil, key, quota, 0); err != ErrWrongType {
			t.Errorf("CL on a %s key: %v", f.Name(), err)
		}
	}
}

// TestWindowFutureStateStands: a key restored from a clock ahead of ours
// (an SW request, an FW or SWC bucket later than now) keeps limiting until
// that time's window has passed. A request now never expires the SW key
// before the later request leaves its window, nor makes an FW or SWC key
// forget the later bucket's counts; either let the later window take
// twice its limit.
func TestWindowFutureStateStands(t *testing.T) {
	const w = int64(time.Minute)
	now, later := epochDay+w/2, epochDay+w // later: the next bucket's start
	for _, f := range []Family{FamilySW, FamilySWC, FamilyFW} {
		t.Run(f.Name(), func(t *testing.T) {
			e, c := newTestEngine(t)
			c.Set(time.Unix(0, now))
			rec := Record{Key: "k", Family: f, ExpireAtMs: expireMs(later + 2*w)}
			if f == FamilySW {
				rec.Log, rec.Quantities = []int64{later}, []uint32{1}
			} else {
				rec.Start, rec.Cur = later, 2
			}
			if !e.Restore(rec) {
				t.Fatal("Restore not taken")
			}
			r := Rule{Key: []byte("k"), Family: f, Window: WindowQuota{Limit: 2, Window: w}}
			if _, err := e.ThrottleWindow(nil, r, 1); err != nil {
				t.Fatal(err)
			}
			// SW: the window ending half a window after the later request
			// holds it, so admits 1 more at most (the request made now has
			// left it, but sits behind the later one in the log); FW, SWC:
			// the later bucket is full.
			c.Set(time.Unix(0, later+w/2))
			admitted := int64(0)
			for range 3 {
				d, err := e.ThrottleWindow(nil, r, 1)
				if err != nil {
					t.Fatal(err)
				}
				if !d.Limited {
					admitted++
				}
			}
			if most := int64(map[Family]int{FamilySW: 1}[f]); admitted > most {
				t.Errorf("admitted %d beside the restored requests, at most %d", admitted, most)
			}
		})
	}
}

// TestSWResetAfterCountsLaterRequest: an SW key whose log holds a request
// later than now (restored from a clock ahead of ours) limits until that
// request leaves its window, and its reset_after says so, as its PTTL
// does, whether the call records a request, peeks or is refused; Decide
// answers the same on the stored state.
func TestSWResetAfterCountsLaterRequest(t *testing.T) {
	const w = int64(time.Minute)
	now := epochDay
	later := now + w/2
	e, c := newTestEngine(t)
	c.Set(time.Unix(0, now))
	rec := Record{Key: "k", Family: FamilySW, Log: []int64{later}, Quantities: []uint32{1}, ExpireAtMs: expireMs(later + w)}
	if !e.Restore(rec) {
		t.Fatal("Restore not taken")
	}
	r := Rule{Key: []byte("k"), Family: FamilySW, Window: WindowQuota{Limit: 2, Window: w}}
	want := later + w - now
	dd, err := Decide(now, OpWindow, []Rule{r}, []Record{rec}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if dd.ResetAfter != want {
		t.Errorf("Decide: reset_after %v, want %v", time.Duration(dd.ResetAfter), time.Duration(want))
	}
	for _, qty := range []int64{1, 0, 1} { // recorded, a peek, refused
		d, err := e.ThrottleWindow(nil, r, qty)
		if err != nil {
			t.Fatal(err)
		}
		if d.ResetAfter != want {
			t.Errorf("quantity %d (limited %v): reset_after %v, want %v", qty, d.Limited, time.Duration(d.ResetAfter), time.Duration(want))
		}
		if pttl := e.PTTL(nil, r.Key); pttl+1 < want/1e6 { // gone once the clock is past PTTL
			t.Errorf("quantity %d: PTTL %d ms, want the key to live until reset_after", qty, pttl)
		}
	}
}
