package engine

import (
	"reflect"
	"testing"
	"time"
)

// windowRules are one key of each window family, with windows that leave
// each key's state non-trivial after hitWindowKeys.
var windowRules = []Rule{
	{Key: []byte("sw"), Family: FamilySW, Window: WindowQuota{Limit: 10, Window: int64(10 * sec)}},
	{Key: []byte("swc"), Family: FamilySWC, Window: WindowQuota{Limit: 10, Window: int64(10 * sec)}},
	{Key: []byte("fw"), Family: FamilyFW, Window: WindowQuota{Limit: 10, Window: int64(10 * sec)}},
}

// hitWindowKeys spends some of each window rule, across a bucket edge.
func hitWindowKeys(t *testing.T, e *Engine, c *ManualClock) {
	t.Helper()
	for i, at := range []time.Duration{7 * sec, 8*sec + 1, 9*sec + 500*msD, 11 * sec, 12*sec + 250*msD} {
		c.Set(time.Unix(0, epochDay+int64(at)))
		for _, r := range windowRules {
			if _, err := e.ThrottleWindow(nil, r, int64(1+i%2)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// peekAll returns each window rule's peek and PTTL.
func peekAll(t *testing.T, e *Engine) map[string][2]any {
	t.Helper()
	out := map[string][2]any{}
	for _, r := range windowRules {
		d, err := e.ThrottleWindow(nil, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[string(r.Key)] = [2]any{d, e.PTTL(nil, r.Key)}
	}
	return out
}

// TestChangesWindowFamilies: Changes gives each window family's state, and
// a fresh engine restoring the records answers exactly as the first.
func TestChangesWindowFamilies(t *testing.T) {
	e, c := newTrackingEngine(t)
	hitWindowKeys(t, e, c)
	recs := drain(e)
	start := epochDay + int64(10*sec)
	want := map[string]Record{
		"sw": {Key: "sw", Family: FamilySW, ExpireAtMs: expireMs(epochDay + int64(22*sec+250*msD)),
			Log: []int64{epochDay + int64(7*sec), epochDay + int64(8*sec) + 1, epochDay + int64(9*sec+500*msD),
				epochDay + int64(11*sec), epochDay + int64(12*sec+250*msD)},
			Quantities: []uint32{1, 2, 1, 2, 1}},
		"swc": {Key: "swc", Family: FamilySWC, ExpireAtMs: expireMs(start + int64(20*sec)), Start: start, Cur: 3, Prev: 4},
		"fw":  {Key: "fw", Family: FamilyFW, ExpireAtMs: expireMs(start + int64(10*sec)), Start: start, Cur: 3},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("Changes:\n got %+v\nwant %+v", recs, want)
	}
	// The records are copies: changing one changes nothing in the engine.
	recs["sw"].Log[0] = 0
	before := peekAll(t, e)
	// A fresh engine at the same instant takes them and answers the same.
	e2, c2 := newTrackingEngine(t)
	c2.Set(c.Now())
	for _, r := range want {
		if !e2.Restore(r) {
			t.Fatalf("Restore(%s) not taken", r.Key)
		}
	}
	if n := e2.Pending(); n != 0 {
		t.Errorf("restored keys noted as changed: %d", n)
	}
	if got := peekAll(t, e2); !reflect.DeepEqual(got, before) {
		t.Errorf("after Restore:\n got %v\nwant %v", got, before)
	}
	if e2.Used() != e.Used() {
		t.Errorf("Used %d after Restore, %d in the first engine", e2.Used(), e.Used())
	}
	// And they go on alike.
	for _, at := range []time.Duration{14 * sec, 17*sec + 1, 21 * sec} {
		c.Set(time.Unix(0, epochDay+int64(at)))
		c2.Set(time.Unix(0, epochDay+int64(at)))
		for _, r := range windowRules {
			d1, _ := e.ThrottleWindow(nil, r, 2)
			d2, _ := e2.ThrottleWindow(nil, r, 2)
			if d1 != d2 {
				t.Errorf("%s at %v: %s after restore, %s before", r.Key, at, fmtDecision(d2), fmtDecision(d1))
			}
		}
	}
}

// TestChangesSWPeek: a peek that drops requests that left the window notes
// the key as changed (the stored log shrinks); one that drops nothing does
// not; a peek that finds every request gone removes the key.
func TestChangesSWPeek(t *testing.T) {
	e, c := newTrackingEngine(t)
	r := windowRules[0]
	c.Set(time.Unix(0, epochDay))
	e.ThrottleWindow(nil, r, 1)
	c.Set(time.Unix(0, epochDay+int64(sec+500*time.Microsecond)))
	e.ThrottleWindow(nil, r, 1)
	drain(e)
	e.ThrottleWindow(nil, r, 0)
	if n := e.Pending(); n != 0 {
		t.Errorf("a peek that dropped nothing: %d pending", n)
	}
	c.Set(time.Unix(0, epochDay+int64(10*sec)))
	e.ThrottleWindow(nil, r, 0)
	if rec := drain(e)["sw"]; len(rec.Log) != 1 || rec.Log[0] != epochDay+int64(sec+500*time.Microsecond) {
		t.Errorf("after a peek that dropped the first request: %+v", rec)
	}
	// The last request left at 11.0005s; the key lives to the end of that
	// millisecond.
	c.Set(time.Unix(0, epochDay+int64(11*sec+700*time.Microsecond)))
	e.ThrottleWindow(nil, r, 0)
	if _, ok := e.Get(nil, r.Key); ok {
		t.Error("an SW key without requests left")
	}
	if rec := drain(e)["sw"]; !rec.Deleted {
		t.Errorf("record %+v, want the key deleted", rec)
	}
}

// TestRestoreMergesWindowFamilies: a key in memory and in the backing
// store keeps the conservative state (Restore's doc).
func TestRestoreMergesWindowFamilies(t *testing.T) {
	e, c := newTrackingEngine(t)
	c.Set(time.Unix(0, epochDay+int64(12*sec)))
	nowMs := c.Now().UnixMilli()
	w := int64(10 * sec)
	b0, b1 := epochDay, epochDay+w // two buckets
	steps := []struct {
		name    string
		rec     Record
		taken   bool
		changed bool // memory's state noted for the backing store
		want    Record
	}{
		{"SWC into a fresh key", Record{Key: "swc", Family: FamilySWC, Start: b1, Cur: 2, Prev: 5, ExpireAtMs: nowMs + 18_000},
			true, false, Record{Key: "swc", Family: FamilySWC, Start: b1, Cur: 2, Prev: 5, ExpireAtMs: nowMs + 18_000}},
		{"SWC of an earlier bucket: memory's stays", Record{Key: "swc", Family: FamilySWC, Start: b0, Cur: 9, Prev: 9, ExpireAtMs: nowMs + 8_000},
			false, true, Record{Key: "swc", Family: FamilySWC, Start: b1, Cur: 2, Prev: 5, ExpireAtMs: nowMs + 18_000}},
		{"SWC of the same bucket: the larger counts", Record{Key: "swc", Family: FamilySWC, Start: b1, Cur: 4, Prev: 1, ExpireAtMs: nowMs + 17_000},
			true, true, Record{Key: "swc", Family: FamilySWC, Start: b1, Cur: 4, Prev: 5, ExpireAtMs: nowMs + 18_000}},
		{"SWC restored twice changes nothing", Record{Key: "swc", Family: FamilySWC, Start: b1, Cur: 4, Prev: 5, ExpireAtMs: nowMs + 18_000},
			false, false, Record{Key: "swc", Family: FamilySWC, Start: b1, Cur: 4, Prev: 5, ExpireAtMs: nowMs + 18_000}},
		{"FW into a fresh key", Record{Key: "fw", Family: FamilyFW, Start: b0, Cur: 3, ExpireAtMs: nowMs + 100},
			true, false, Record{Key: "fw", Family: FamilyFW, Start: b0, Cur: 3, ExpireAtMs: nowMs + 100}},
		{"FW of a later bucket wins", Record{Key: "fw", Family: FamilyFW, Start: b1, Cur: 1, ExpireAtMs: nowMs + 8_000},
			true, false, Record{Key: "fw", Family: FamilyFW, Start: b1, Cur: 1, ExpireAtMs: nowMs + 8_000}},
		{"SW into a fresh key", Record{Key: "sw", Family: FamilySW, Log: []int64{b1, b1 + 1}, Quantities: []uint32{1, 2}, ExpireAtMs: nowMs + 8_000},
			true, false, Record{Key: "sw", Family: FamilySW, Log: []int64{b1, b1 + 1}, Quantities: []uint32{1, 2}, ExpireAtMs: nowMs + 8_000}},
		{"SW with fewer requests: memory's stays", Record{Key: "sw", Family: FamilySW, Log: []int64{b1 + 5}, Quantities: []uint32{2}, ExpireAtMs: nowMs + 8_000},
			false, true, Record{Key: "sw", Family: FamilySW, Log: []int64{b1, b1 + 1}, Quantities: []uint32{1, 2}, ExpireAtMs: nowMs + 8_000}},
		{"SW with as many, newer: it wins", Record{Key: "sw", Family: FamilySW, Log: []int64{b1 + 5}, Quantities: []uint32{3}, ExpireAtMs: nowMs + 8_001},
			true, false, Record{Key: "sw", Family: FamilySW, Log: []int64{b1 + 5}, Quantities: []uint32{3}, ExpireAtMs: nowMs + 8_001}},
		{"SW with more requests wins", Record{Key: "sw", Family: FamilySW, Log: []int64{b1, b1 + 1, b1 + 2}, Quantities: []uint32{1, 1, 2}, ExpireAtMs: nowMs + 8_000},
			true, false, Record{Key: "sw", Family: FamilySW, Log: []int64{b1, b1 + 1, b1 + 2}, Quantities: []uint32{1, 1, 2}, ExpireAtMs: nowMs + 8_000}},
		{"SW without requests is skipped", Record{Key: "sw2", Family: FamilySW, ExpireAtMs: nowMs + 8_000},
			false, false, Record{Key: "sw2", Deleted: true}},
		{"SW with lengths that differ is skipped", Record{Key: "sw2", Family: FamilySW, Log: []int64{b1}, Quantities: []uint32{1, 1}, ExpireAtMs: nowMs + 8_000},
			false, false, Record{Key: "sw2", Deleted: true}},
		{"another family in memory stays", Record{Key: "sw", Family: FamilyFW, Start: b1, Cur: 1, ExpireAtMs: nowMs + 8_000},
			false, false, Record{Key: "sw", Family: FamilySW, Log: []int64{b1, b1 + 1, b1 + 2}, Quantities: []uint32{1, 1, 2}, ExpireAtMs: nowMs + 8_000}},
	}
	for _, s := range steps {
		drain(e)
		if got := e.Restore(s.rec); got != s.taken {
			t.Errorf("%s: Restore = %v, want %v", s.name, got, s.taken)
		}
		changed := e.Pending() > 0
		if changed != s.changed {
			t.Errorf("%s: noted as changed %v, want %v", s.name, changed, s.changed)
		}
		s0 := e.shards[e.shardIndex([]byte(s.rec.Key))]
		s0.mu.Lock()
		got := s0.snapshot(s.rec.Key, nowMs)
		s0.mu.Unlock()
		if !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", s.name, got, s.want)
		}
	}
	// The restored SW log is accounted for in Used: 3 requests in a ring of
	// 4 one-word (8-byte) slots.
	if got, want := e.Used(), keyCost(FamilySWC, len("swc"))+keyCost(FamilyFW, len("fw"))+keyCost(FamilySW, len("sw"))+4*8; got != want {
		t.Errorf("Used = %d, want %d", got, want)
	}
}
