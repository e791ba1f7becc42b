package engine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
	"time"
)

// newBoundedEngine returns an engine of one shard on a fake clock whose
// MaxMemory holds exactly keys keys with one-byte names.
func newBoundedEngine(t testing.TB, keys int, track bool) (*Engine, *ManualClock) {
	t.Helper()
	c := NewManualClock(time.Unix(0, start))
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 1, TrackChanges: track,
		MaxMemory: int64(keys) * keyCost(FamilyCL, 1)})
	t.Cleanup(e.Close)
	return e, c
}

// hit throttles key with quantity q of quota, whose emission interval is 2s:
// a fresh key then lives 2s*q.
func hit(t testing.TB, e *Engine, key string, q int64) {
	t.Helper()
	if _, err := e.Throttle(nil, []byte(key), quota, q); err != nil {
		t.Fatalf("Throttle(%s, %d): %v", key, q, err)
	}
}

// held returns the keys the engine holds, sorted.
func held(e *Engine) []string {
	var ks []string
	e.Scan(nil, 0, 1<<30, func(k string, _ Family) { ks = append(ks, k) })
	sort.Strings(ks)
	return ks
}

// TestEvictSoonestToExpireFirst: with room for three keys, each new key
// evicts the key that expires soonest, never the key being written.
func TestEvictSoonestToExpireFirst(t *testing.T) {
	e, _ := newBoundedEngine(t, 3, false)
	hit(t, e, "a", 3) // expires in 6s
	hit(t, e, "b", 1) // 2s
	hit(t, e, "c", 2) // 4s
	steps := []struct {
		key     string
		q       int64
		want    string // keys held after
		evicted int64
	}{
		{"d", 1, "[a c d]", 1},   // b (2s) goes; d (2s) is being written and stays
		{"e", 5, "[a c e]", 2},   // d (2s) goes
		{"f", 4, "[a e f]", 3},   // c (4s) goes
		{"a", 1, "[a e f]", 3},   // an existing key takes no room: a now expires in 8s
		{"g", 1, "[e f g]", 4},   // a and f tie at 8s; a goes first by name
		{"h", 1, "[e f h]", 5},   // g (2s)
		{"i", 12, "[e f i]", 6},  // h (2s)
		{"j", 12, "[e i j]", 7},  // f (8s)
		{"k", 13, "[i j k]", 8},  // e (10s)
		{"l", 1, "[j k l]", 9},   // i and j tie at 24s; i goes first by name
		{"m", 1, "[j k m]", 10},  // l (2s)
		{"n", 16, "[j k n]", 11}, // m (2s)
		{"o", 16, "[k n o]", 12}, // j (24s)
	}
	for _, s := range steps {
		hit(t, e, s.key, s.q)
		if got := fmt.Sprint(held(e)); got != s.want {
			t.Fatalf("after %s: held %s, want %s", s.key, got, s.want)
		}
		if got := e.EvictedKeys(); got != s.evicted {
			t.Fatalf("after %s: EvictedKeys = %d, want %d", s.key, got, s.evicted)
		}
		if got, want := e.Used(), 3*keyCost(FamilyCL, 1); got != want {
			t.Fatalf("after %s: Used = %d, want %d", s.key, got, want)
		}
	}
	if got := e.ExpiredKeys(); got != 0 {
		t.Errorf("ExpiredKeys = %d, want 0: nothing expired", got)
	}
}

// TestEvictRefilesExtendedKeys: a key whose life was extended is still filed
// in the index at its first expiry; eviction refiles it and evicts the key
// that really expires first.
func TestEvictRefilesExtendedKeys(t *testing.T) {
	e, c := newBoundedEngine(t, 2, false)
	hit(t, e, "x", 1) // filed at +2s
	hit(t, e, "y", 2) // +4s
	c.Advance(time.Second)
	hit(t, e, "x", 3) // now expires at +8s, still filed at +2s
	hit(t, e, "z", 1)
	if got := fmt.Sprint(held(e)); got != "[x z]" {
		t.Fatalf("held %s, want [x z]: y expires first", got)
	}
	if got := e.PTTL(nil, []byte("x")); got != 7000 {
		t.Errorf("PTTL x = %d, want 7000", got)
	}
}

// TestEvictExpiredCountsAsExpired: an expired key that eviction removes
// counts as expired, not evicted.
func TestEvictExpiredCountsAsExpired(t *testing.T) {
	e, c := newBoundedEngine(t, 1, false)
	hit(t, e, "a", 1)
	c.Advance(3 * time.Second)
	hit(t, e, "b", 1)
	if e.EvictedKeys() != 0 || e.ExpiredKeys() != 1 {
		t.Errorf("evicted %d expired %d, want 0 and 1", e.EvictedKeys(), e.ExpiredKeys())
	}
	if got := fmt.Sprint(held(e)); got != "[b]" {
		t.Errorf("held %s", got)
	}
}

// TestEvictKeyTooLarge: a key that cannot fit the shard's budget even alone
// is refused with ErrOutOfMemory, and nothing is written or evicted.
func TestEvictKeyTooLarge(t *testing.T) {
	e, _ := newBoundedEngine(t, 1, false)
	hit(t, e, "a", 1)
	if _, err := e.Throttle(nil, []byte("ab"), quota, 1); err != ErrOutOfMemory {
		t.Fatalf("err = %v, want ErrOutOfMemory", err)
	}
	if got := fmt.Sprint(held(e)); got != "[a]" || e.EvictedKeys() != 0 {
		t.Errorf("held %s, evicted %d; want [a] and 0", got, e.EvictedKeys())
	}
}

// TestEvictMarksChanged: an evicted key is noted as changed, so that the
// backing store deletes it too.
func TestEvictMarksChanged(t *testing.T) {
	e, _ := newBoundedEngine(t, 1, true)
	hit(t, e, "a", 1)
	drain(e)
	hit(t, e, "b", 1)
	recs := drain(e)
	if len(recs) != 2 || !recs["a"].Deleted || recs["b"].Deleted {
		t.Errorf("records %+v, want a deleted and b live", recs)
	}
}

// TestRestoreUnderBudget: loading a backing store into a full budget keeps
// the keys that expire last.
func TestRestoreUnderBudget(t *testing.T) {
	e, c := newBoundedEngine(t, 2, true)
	nowMs := c.Now().UnixMilli()
	rec := func(k string, ttl int64) Record {
		return Record{Key: k, Family: FamilyCL, TAT: uint64(c.Now().UnixNano()), ExpireAtMs: nowMs + ttl}
	}
	for _, r := range []Record{rec("a", 5000), rec("b", 3000)} {
		if !e.Restore(r) {
			t.Fatalf("%s not taken", r.Key)
		}
	}
	drain(e)
	if e.Restore(rec("c", 2000)) {
		t.Error("c, which expires first, was taken")
	}
	if !e.Restore(rec("d", 4000)) {
		t.Error("d, which outlives b, was not taken")
	}
	if got := fmt.Sprint(held(e)); got != "[a d]" {
		t.Errorf("held %s, want [a d]", got)
	}
	if got := e.EvictedKeys(); got != 2 {
		t.Errorf("EvictedKeys = %d, want 2 (c and b)", got)
	}
	if recs := drain(e); !recs["b"].Deleted || !recs["c"].Deleted || recs["d"].Deleted {
		t.Errorf("changes %+v: b and c should be deleted from the backing store", recs)
	}
}

// TestBudgetRespected: whatever the keys and their lives, each shard stays
// within its share, so the keyspace stays within MaxMemory.
func TestBudgetRespected(t *testing.T) {
	c := NewManualClock(time.Unix(0, start))
	const maxMemory = 20 << 10 // room for about 330 keys
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 8, MaxMemory: maxMemory})
	defer e.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20_000; i++ {
		key := fmt.Sprintf("user:%d", r.IntN(5000))
		if _, err := e.Throttle(nil, []byte(key), quota, 1+r.Int64N(10)); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			c.Advance(time.Duration(r.IntN(500)) * time.Millisecond)
		}
		for _, s := range e.shards {
			if s.used.Load() > maxMemory/8 {
				t.Fatalf("shard uses %d bytes, over its %d", s.used.Load(), maxMemory/8)
			}
		}
	}
	if e.EvictedKeys() == 0 {
		t.Fatal("nothing evicted; the test does not fill the budget")
	}
	if used := e.Used(); used > maxMemory || used < maxMemory*3/4 {
		t.Errorf("Used = %d, want near %d", used, maxMemory)
	}
	// Used is the sum of the held keys' costs.
	sum := int64(0)
	for _, s := range e.shards {
		for i := range s.entries {
			if ent := &s.entries[i]; ent.family() != FamilyNone {
				sum += keyCost(ent.family(), int(ent.size()))
			}
		}
	}
	if sum != e.Used() {
		t.Errorf("Used = %d, keys cost %d", e.Used(), sum)
	}
}

// TestUsedAndCounts: the estimate and the per-family counts follow creates,
// deletes, expiry, the sweep and FLUSHALL.
func TestUsedAndCounts(t *testing.T) {
	e, c := newTestEngine(t)
	if e.MaxMemory() != 0 || e.Used() != 0 {
		t.Fatalf("MaxMemory %d Used %d", e.MaxMemory(), e.Used())
	}
	hit(t, e, "a", 1)    // 2s
	hit(t, e, "bb", 5)   // 10s
	hit(t, e, "ccc", 10) // 20s
	if got, want := e.Used(), keyCost(FamilyCL, 1)+keyCost(FamilyCL, 2)+keyCost(FamilyCL, 3); got != want {
		t.Errorf("Used = %d, want %d", got, want)
	}
	if got := e.Counts(nil); fmt.Sprint(got) != "map[1:3]" {
		t.Errorf("Counts = %v", got)
	}
	e.Delete(nil, []byte("bb"))
	c.Advance(3 * time.Second) // a expires, unswept
	if got := e.Counts(nil); fmt.Sprint(got) != "map[1:1]" {
		t.Errorf("Counts with a expired = %v, want one CL key", got)
	}
	if got, want := e.Used(), keyCost(FamilyCL, 1)+keyCost(FamilyCL, 3); got != want {
		t.Errorf("Used before the sweep = %d, want %d (a is still held)", got, want)
	}
	e.Sweep()
	if got, want := e.Used(), keyCost(FamilyCL, 3); got != want {
		t.Errorf("Used after the sweep = %d, want %d", got, want)
	}
	e.Flush(nil)
	if e.Used() != 0 || len(e.Counts(nil)) != 0 {
		t.Errorf("after FLUSHALL: Used %d, Counts %v", e.Used(), e.Counts(nil))
	}
	if fs := Families(); len(fs) != 5 || fs[0] != FamilyCL || FamilyCL.Name() != "cl" || FamilySW.Name() != "sw" || FamilyLB.Name() != "lb" {
		t.Errorf("Families = %v", fs)
	}
}

// TestKeyOverheadMeasured measures what a key costs the Go heap beyond its
// name, over 100,000 keys, and checks keyOverhead against it.
func TestKeyOverheadMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100,000 keys")
	}
	const n, nameLen = 100_000, 16
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
	}
	c := NewManualClock(time.Unix(0, start))
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 128})
	defer e.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, k := range keys {
		e.Throttle(nil, k, quota, 1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(e)
	runtime.KeepAlive(keys)
	measured := float64(after.HeapAlloc-before.HeapAlloc)/n - nameLen
	t.Logf("measured %.1f bytes per key beyond its name; keyOverhead is %d", measured, keyOverhead)
	if measured < keyOverhead*3/4 || measured > keyOverhead*5/4 {
		t.Errorf("measured %.1f bytes per key, keyOverhead %d is off by more than a quarter", measured, keyOverhead)
	}
	if got, want := e.Used(), int64(n)*keyCost(FamilyCL, nameLen); got != want {
		t.Errorf("Used = %d, want %d", got, want)
	}
}

// TestThrottleExistingKeyAllocsBounded: a memory bound and a full budget
// leave the hot path free of allocations.
func TestThrottleExistingKeyAllocsBounded(t *testing.T) {
	e, _ := newBoundedEngine(t, 2, true)
	hit(t, e, "a", 1)
	hit(t, e, "b", 1)
	hit(t, e, "c", 1) // the budget is full
	key := []byte("c")
	buf := make([]Record, 0, 16)
	allocs := testing.AllocsPerRun(1000, func() {
		e.Throttle(nil, key, quota, 0)
		buf = e.Changes(buf[:0], 16)
	})
	if allocs != 0 {
		t.Errorf("Throttle on an existing key under MaxMemory: %v allocs, want 0", allocs)
	}
}

// TestBudgetHoldsGrowingLog: an SW key's ring that grows past its shard's
// budget makes room as a new key does, by evicting the keys that expire
// soonest (never the growing key), so that Used stays within MaxMemory.
func TestBudgetHoldsGrowingLog(t *testing.T) {
	c := NewManualClock(time.Unix(0, start))
	maxMemory := keyCost(FamilySW, 1) + 4*8 + 2*keyCost(FamilyCL, 1) // the log's first ring holds 4
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 1, MaxMemory: maxMemory})
	defer e.Close()
	sw := Rule{Key: []byte("s"), Family: FamilySW, Window: WindowQuota{Limit: 100, Window: 60e9}}
	if _, err := e.ThrottleWindow(nil, sw, 1); err != nil {
		t.Fatal(err)
	}
	hit(t, e, "a", 1) // expires in 2s
	hit(t, e, "b", 2) // 4s
	if got := e.Used(); got != maxMemory {
		t.Fatalf("Used = %d, want %d: the budget is full", got, maxMemory)
	}
	for range 4 { // the fifth request grows the ring to 8
		if _, err := e.ThrottleWindow(nil, sw, 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.Used(); got > maxMemory {
		t.Errorf("Used = %d, over MaxMemory %d", got, maxMemory)
	}
	if got := fmt.Sprint(held(e)); got != "[b s]" || e.EvictedKeys() != 1 {
		t.Errorf("held %s, evicted %d; want [b s] and 1: a expires first", got, e.EvictedKeys())
	}
	checkShard(t, e.shards[0])
}
