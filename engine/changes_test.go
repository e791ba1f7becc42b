package engine

import (
	"fmt"
	"sort"
	"testing"
	"time"
	"unsafe"
)

func newTrackingEngine(t testing.TB) (*Engine, *ManualClock) {
	t.Helper()
	c := NewManualClock(time.Unix(0, start))
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 4, TrackChanges: true})
	t.Cleanup(e.Close)
	return e, c
}

func drain(e *Engine) map[string]Record {
	out := map[string]Record{}
	for _, r := range e.Changes(nil, 1<<30) {
		out[r.Key] = r
	}
	return out
}

// TestChangesCoalesce: a key hit many times between two drains is one
// record with its latest state.
func TestChangesCoalesce(t *testing.T) {
	e, _ := newTrackingEngine(t)
	for i := 0; i < 10_000; i++ {
		e.Throttle(nil, []byte("hot"), GCRAQuota{MaxBurst: 1 << 20, Count: 1000, Period: 1}, 1)
	}
	if n := e.Pending(); n != 1 {
		t.Fatalf("Pending = %d, want 1", n)
	}
	recs := drain(e)
	v, _ := e.Get(nil, []byte("hot"))
	if r := recs["hot"]; len(recs) != 1 || r.TAT != v.TAT || r.Family != FamilyCL || r.Deleted {
		t.Fatalf("records = %+v, want one with TAT %d", recs, v.TAT)
	}
	if n := e.Pending(); n != 0 {
		t.Errorf("Pending after drain = %d", n)
	}
	if recs := drain(e); len(recs) != 0 {
		t.Errorf("second drain = %+v, want nothing", recs)
	}
}

func TestChangesDeletesAndFlush(t *testing.T) {
	e, _ := newTrackingEngine(t)
	for i := 0; i < 5; i++ {
		e.Throttle(nil, []byte(fmt.Sprint("k", i)), quota, 1)
	}
	drain(e)
	e.Delete(nil, []byte("k0"))
	e.Throttle(nil, []byte("k1"), quota, 1)
	recs := drain(e)
	if !recs["k0"].Deleted || recs["k1"].Deleted || len(recs) != 2 {
		t.Fatalf("after DEL k0 and a hit on k1: %+v", recs)
	}
	e.Flush(nil)
	recs = drain(e)
	var deleted []string
	for k, r := range recs {
		if r.Deleted {
			deleted = append(deleted, k)
		}
	}
	sort.Strings(deleted)
	if fmt.Sprint(deleted) != "[k1 k2 k3 k4]" {
		t.Errorf("FLUSHALL deleted %v, want k1..k4", deleted)
	}
}

// TestChangesBounded: Changes returns at most max records and keeps the rest.
func TestChangesBounded(t *testing.T) {
	e, _ := newTrackingEngine(t)
	for i := 0; i < 100; i++ {
		e.Throttle(nil, []byte(fmt.Sprint("k", i)), quota, 1)
	}
	if got := len(e.Changes(nil, 30)); got != 30 {
		t.Fatalf("Changes(30) = %d records", got)
	}
	if n := e.Pending(); n != 70 {
		t.Fatalf("Pending = %d, want 70", n)
	}
	e.MarkChanged([]string{"k0", "k1"})
	if n := len(drain(e)); n < 70 || n > 72 {
		t.Errorf("drain = %d records, want the 70 left plus the re-marked", n)
	}
}

func TestChangesNotTracked(t *testing.T) {
	e, _ := newTestEngine(t)
	e.Throttle(nil, []byte("k"), quota, 1)
	if n := e.Pending(); n != 0 || len(e.Changes(nil, 10)) != 0 {
		t.Error("changes tracked without TrackChanges")
	}
}

func TestRestore(t *testing.T) {
	e, c := newTrackingEngine(t)
	nowMs := c.Now().UnixMilli()
	tat := uint64(c.Now().UnixNano()) + 4_000_000_000
	if !e.Restore(Record{Key: "k", Family: FamilyCL, TAT: tat, ExpireAtMs: nowMs + 4000}) {
		t.Fatal("fresh record not taken")
	}
	r, _ := e.Throttle(nil, []byte("k"), quota, 0)
	if r.Remaining != 14 {
		t.Errorf("restored key: remaining %d, want 14", r.Remaining)
	}
	if e.Restore(Record{Key: "old", Family: FamilyCL, TAT: 1, ExpireAtMs: nowMs - 1}) {
		t.Error("expired record taken")
	}
	// Memory holds a later TAT: it stays, and is marked for the backing store.
	drain(e)
	if e.Restore(Record{Key: "k", Family: FamilyCL, TAT: tat - 2_000_000_000, ExpireAtMs: nowMs + 2000}) {
		t.Error("an earlier TAT replaced a later one")
	}
	if recs := drain(e); recs["k"].TAT != tat {
		t.Errorf("memory's later TAT not re-marked: %+v", recs)
	}
	// The backing store holds a later TAT: it wins, with its expiry.
	if !e.Restore(Record{Key: "k", Family: FamilyCL, TAT: tat + 2_000_000_000, ExpireAtMs: nowMs + 6000}) {
		t.Error("a later TAT was not taken")
	}
	if got := e.PTTL(nil, []byte("k")); got != 6000 {
		t.Errorf("PTTL = %d, want 6000", got)
	}
}

// TestTrackedThrottleAllocs: tracking changes keeps the hot path free of
// allocations once the key exists.
func TestTrackedThrottleAllocs(t *testing.T) {
	e, _ := newTrackingEngine(t)
	key := []byte("user123")
	e.Throttle(nil, key, quota, 1)
	buf := make([]Record, 0, 16)
	allocs := testing.AllocsPerRun(1000, func() {
		e.Throttle(nil, key, quota, 0)
		buf = e.Changes(buf[:0], 16) // drained and marked again every round
	})
	if allocs != 0 {
		t.Errorf("%v allocs per tracked throttle, want 0", allocs)
	}
}

// TestChangedKeysLeaveTheOldArena: when a shard's name arena is replaced, the
// keys waiting for the writer get names of their own, so that they do not
// keep the old arena alive; and they are still the same keys.
func TestChangedKeysLeaveTheOldArena(t *testing.T) {
	e, _ := newTrackingEngine(t)
	want := map[string]bool{}
	for i := range 50 {
		k := fmt.Sprint("key:", i)
		e.Throttle(nil, []byte(k), quota, 1)
		want[k] = true
	}
	for _, s := range e.shards {
		s.mu.Lock()
		old := s.names.buf
		s.compactNames()
		for k := range s.changed {
			p := uintptr(unsafe.Pointer(unsafe.StringData(k)))
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(old)))
			if len(old) > 0 && p >= lo && p < lo+uintptr(cap(old)) {
				t.Errorf("%q still shares the replaced arena", k)
			}
		}
		s.mu.Unlock()
	}
	got := drain(e)
	if len(got) != len(want) {
		t.Fatalf("%d changed keys after the compaction, want %d", len(got), len(want))
	}
	for k := range got {
		if !want[k] {
			t.Errorf("changed key %q was never written", k)
		}
	}
}
