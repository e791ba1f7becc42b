package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// checkShard verifies a shard's layout: every key is found by its name in
// the index, filed exactly once in the expiry index, in a bucket at or
// before its expiry, and the counters and the estimate add up.
func checkShard(t *testing.T, s *shard) {
	t.Helper()
	held, used := 0, int64(0)
	var perFamily [numFamilies]int64
	for i := range s.entries {
		ent := &s.entries[i]
		if ent.family() == FamilyNone {
			continue
		}
		held++
		perFamily[ent.family()]++
		used += keyCost(ent.family(), int(ent.size()))
		if ent.family() == FamilySW {
			used += s.log(ent).bytes()
		}
		name := s.name(ent)
		if slot, _, ok := s.find([]byte(name)); !ok || slot != uint32(i) {
			t.Fatalf("key %q in slot %d: index finds slot %d, %v", name, i, slot, ok)
		}
		b, ok := s.expiry.get(ent.bucket)
		if !ok || int(ent.pos()) >= len(b.slots) || b.slots[ent.pos()] != uint32(i) {
			t.Fatalf("key %q not filed where it says (bucket %d, position %d)", name, ent.bucket, ent.pos())
		}
		if ent.bucket > expiryBucketOf(ent.expireAt) {
			t.Fatalf("key %q filed in bucket %d, after its expiry %d", name, ent.bucket, ent.expireAt)
		}
		if ent.pinned() {
			t.Fatalf("key %q left pinned", name)
		}
	}
	filed := 0
	s.expiry.buckets.Scan(func(b *expiryBucket) bool {
		if len(b.slots) == 0 {
			t.Fatalf("empty bucket %d kept", b.num)
		}
		filed += len(b.slots)
		return true
	})
	if held != s.index.n || held != filed {
		t.Fatalf("%d keys held, %d indexed, %d filed", held, s.index.n, filed)
	}
	if got := s.used.Load(); got != used {
		t.Fatalf("used %d, keys cost %d", got, used)
	}
	for f := range perFamily {
		if got := s.keys[f].Load(); got != perFamily[f] {
			t.Fatalf("family %d: counted %d keys, %d held", f, got, perFamily[f])
		}
	}
}

// TestShardLayoutUnderRandomTraffic drives a few shards with random keys of
// every family, lives that move both ways, deletes, evictions, sweeps in
// small batches and flushes, and checks the layout after every step, and
// that a sweep leaves no expired key behind.
func TestShardLayoutUnderRandomTraffic(t *testing.T) {
	c := NewManualClock(time.Unix(0, start))
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 2, SweepBatch: 3, TrackChanges: true,
		MaxMemory: 2 * 20 * keyCost(FamilyCL, 4)})
	defer e.Close()
	r := rand.New(rand.NewPCG(5, 6))
	families := []Family{FamilyCL, FamilySW, FamilySWC, FamilyFW}
	var recs []Record
	for step := range 30_000 {
		key := []byte(fmt.Sprintf("k%d", r.IntN(150)))
		switch op := r.IntN(100); {
		case op < 60:
			f := families[r.IntN(len(families))]
			var err error
			if f == FamilyCL {
				q := GCRAQuota{MaxBurst: r.Int64N(20), Count: 1 + r.Int64N(10), Period: 1 + r.Int64N(30)}
				_, err = e.Throttle(nil, key, q, r.Int64N(4))
			} else {
				w := WindowQuota{Limit: 1 + r.Int64N(10), Window: (1 + r.Int64N(5000)) * int64(time.Millisecond)}
				_, err = e.ThrottleWindow(nil, Rule{Key: key, Family: f, Window: w}, r.Int64N(3))
			}
			if err != nil && err != ErrWrongType && err != ErrOutOfMemory {
				t.Fatalf("step %d: %v", step, err)
			}
		case op < 70:
			e.Delete(nil, key)
		case op < 85:
			c.Advance(time.Duration(r.IntN(1500)) * time.Millisecond)
		case op < 95:
			e.Sweep()
			nowMs := c.Now().UnixMilli()
			for _, s := range e.shards {
				for i := range s.entries {
					if ent := &s.entries[i]; ent.family() != FamilyNone && nowMs > ent.expireAt {
						t.Fatalf("step %d: %q expired at %d, swept at %d, still held", step, s.name(ent), ent.expireAt, nowMs)
					}
				}
			}
		case op < 99:
			recs = e.Changes(recs[:0], 1000)
		default:
			e.Flush(nil)
		}
		for _, s := range e.shards {
			checkShard(t, s)
		}
		seen := map[string]bool{}
		e.Scan(nil, 0, 1<<30, func(k string, _ Family) {
			if seen[k] {
				t.Fatalf("step %d: SCAN returned %q twice", step, k)
			}
			seen[k] = true
		})
		if len(seen) != e.Len(nil) {
			t.Fatalf("step %d: SCAN returned %d keys, Len %d", step, len(seen), e.Len(nil))
		}
	}
	if e.EvictedKeys() == 0 || e.ExpiredKeys() == 0 {
		t.Errorf("evicted %d, expired %d: the traffic missed a path", e.EvictedKeys(), e.ExpiredKeys())
	}
}

// TestSweepBucketOfLiveKeys: a sweep in small batches through a bucket that
// holds many keys still alive and a few expired ones removes exactly the
// expired ones, and ends.
func TestSweepBucketOfLiveKeys(t *testing.T) {
	c := NewManualClock(time.Unix(0, 0).Add(100 * time.Second))
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 1, SweepBatch: 2})
	defer e.Close()
	for i := range 50 {
		// Lives of 1..50 ms, all in the bucket of now.
		rec := Record{Key: fmt.Sprint("k", i), Family: FamilyCL, TAT: 1, ExpireAtMs: c.Now().UnixMilli() + 1 + int64(i)}
		if !e.Restore(rec) {
			t.Fatalf("%s not taken", rec.Key)
		}
	}
	c.Advance(11 * time.Millisecond) // k0..k9 have expired
	if n := e.Sweep(); n != 10 {
		t.Errorf("Sweep removed %d keys, want 10", n)
	}
	if n := e.Len(nil); n != 40 {
		t.Errorf("%d keys left, want 40", n)
	}
	checkShard(t, e.shards[0])
}

// TestNamesCompacted: removing most keys compacts the names' arena, and the
// keys left, and the names read before, are intact.
func TestNamesCompacted(t *testing.T) {
	e, _ := newTestEngine(t)
	var before, copies []string // names as Scan gave them (sharing the arena), and copies
	for i := range 20_000 {
		hit(t, e, fmt.Sprintf("name:%08d", i), 1)
	}
	e.Scan(nil, 0, 1<<30, func(k string, _ Family) {
		before, copies = append(before, k), append(copies, strings.Clone(k))
	})
	arena := 0
	for _, s := range e.shards {
		arena += len(s.names.buf)
	}
	for i := range 20_000 {
		if i%10 != 0 {
			e.Delete(nil, []byte(fmt.Sprintf("name:%08d", i)))
		}
	}
	after := 0
	for _, s := range e.shards {
		after += len(s.names.buf)
		checkShard(t, s)
	}
	if after > arena/4 {
		t.Errorf("arena %d bytes after removing 90%% of %d, not compacted", after, arena)
	}
	for i := range 20_000 {
		_, ok := e.Get(nil, []byte(fmt.Sprintf("name:%08d", i)))
		if ok != (i%10 == 0) {
			t.Fatalf("name:%08d held %v", i, ok)
		}
	}
	if len(before) != 20_000 {
		t.Fatalf("Scan gave %d names, want 20000", len(before))
	}
	for i, k := range before {
		if k != copies[i] {
			t.Fatalf("name %d read before the compaction changed: %q, was %q", i, k, copies[i])
		}
	}
}
