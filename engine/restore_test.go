package engine

import (
	"fmt"
	"testing"
	"time"
)

// TestRestoreRefusedEvictsNothing: a record that cannot fit even with
// every key that expires before it evicted is refused before any key is
// evicted, so no key loses its state for a record that is not taken.
func TestRestoreRefusedEvictsNothing(t *testing.T) {
	e, c := newBoundedEngine(t, 2, true)
	hit(t, e, "a", 1) // expires in 2s
	hit(t, e, "b", 5) // 10s
	drain(e)
	nowMs := c.Now().UnixMilli()
	// "cc" needs more than a's room, and b outlives it.
	rec := Record{Key: "cc", Family: FamilyCL, TAT: uint64(c.Now().UnixNano()), ExpireAtMs: nowMs + 5000}
	if e.Restore(rec) {
		t.Fatal("cc taken, though only a expires before it")
	}
	if got := fmt.Sprint(held(e)); got != "[a b]" {
		t.Errorf("held %s, want [a b]: a was evicted for a record not taken", got)
	}
	if recs := drain(e); len(recs) != 1 || !recs["cc"].Deleted {
		t.Errorf("changes %+v, want cc alone, deleted", recs)
	}
	// With b gone, evicting a makes room: then cc is taken.
	e.Delete(nil, []byte("b"))
	if !e.Restore(rec) {
		t.Fatal("cc not taken, though evicting a makes room")
	}
	if got := fmt.Sprint(held(e)); got != "[cc]" {
		t.Errorf("held %s, want [cc]", got)
	}
	checkShard(t, e.shards[0])
}

// TestRestoreCountsLogBytes: an SW record makes room for its log's ring as
// well as for its key, and is refused when the two cannot fit; a record
// that replaces a key's shorter log makes room for the longer one.
func TestRestoreCountsLogBytes(t *testing.T) {
	const w = int64(time.Minute)
	swRec := func(c *ManualClock, n int) Record {
		now := c.Now().UnixNano()
		rec := Record{Key: "s", Family: FamilySW, ExpireAtMs: expireMs(now + w)}
		for i := range n {
			rec.Log = append(rec.Log, now-int64(n-i)*int64(time.Millisecond))
			rec.Quantities = append(rec.Quantities, 1)
		}
		return rec
	}
	ring4 := keyCost(FamilySW, 1) + 4*8 // s with 4 requests or fewer
	t.Run("new key", func(t *testing.T) {
		c := NewManualClock(time.Unix(0, epochDay))
		budget := ring4 + keyCost(FamilyCL, 1) - 16
		e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 1, MaxMemory: budget})
		t.Cleanup(e.Close)
		hit(t, e, "a", 1) // expires in 2s, before s
		if !e.Restore(swRec(c, 4)) {
			t.Fatal("s not taken")
		}
		if got := e.Used(); got > budget {
			t.Errorf("Used = %d, over MaxMemory %d", got, budget)
		}
		if got := fmt.Sprint(held(e)); got != "[s]" {
			t.Errorf("held %s, want [s]: a expires first", got)
		}
		checkShard(t, e.shards[0])
	})
	t.Run("ring over the budget", func(t *testing.T) {
		// s alone is over the budget, as its log may have grown in
		// memory: it is taken only with every other key evicted, and only
		// when they all expire before it.
		c := NewManualClock(time.Unix(0, epochDay))
		budget := ring4 - 16
		e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 1, MaxMemory: budget})
		t.Cleanup(e.Close)
		e.Restore(Record{Key: "b", Family: FamilyCL, TAT: uint64(c.Now().UnixNano()), ExpireAtMs: c.Now().UnixMilli() + 2*w/1e6})
		if e.Restore(swRec(c, 4)) {
			t.Error("s taken, though b outlives it")
		}
		if got := fmt.Sprint(held(e)); got != "[b]" {
			t.Errorf("held %s, want [b]", got)
		}
		e.Delete(nil, []byte("b"))
		hit(t, e, "a", 1) // expires in 2s, before s
		if !e.Restore(swRec(c, 4)) {
			t.Fatal("s not taken, though a expires before it")
		}
		if got := fmt.Sprint(held(e)); got != "[s]" || e.Used() != ring4 {
			t.Errorf("held %s, Used %d; want [s] and %d", got, e.Used(), ring4)
		}
		checkShard(t, e.shards[0])
	})
	t.Run("longer log merged", func(t *testing.T) {
		c := NewManualClock(time.Unix(0, epochDay))
		budget := ring4 + keyCost(FamilyCL, 1)
		e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 1, MaxMemory: budget})
		t.Cleanup(e.Close)
		if !e.Restore(swRec(c, 1)) {
			t.Fatal("s not taken")
		}
		hit(t, e, "a", 1) // expires in 2s, before s
		// Five requests: a ring of 8 in place of 4.
		if !e.Restore(swRec(c, 5)) {
			t.Fatal("the longer log not taken")
		}
		if got := e.Used(); got > budget {
			t.Errorf("Used = %d, over MaxMemory %d", got, budget)
		}
		if got := fmt.Sprint(held(e)); got != "[s]" {
			t.Errorf("held %s, want [s]: a expires first", got)
		}
		checkShard(t, e.shards[0])
	})
}
