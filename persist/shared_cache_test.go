package persist

import (
	"fmt"
	"hash/maphash"
	"testing"
	"unsafe"
)

// TestValueCache checks the value cache's bound, that the round under way
// keeps the entries it holds where they are, and that a rebuilt table
// keeps every key.
func TestValueCache(t *testing.T) {
	if n := unsafe.Sizeof(cacheEntry{}); n != 64 {
		t.Errorf("an entry takes %d bytes: the point is one cache line", n)
	}
	c := newValueCache(4)
	val := func(i int) storeValue { return storeValue{kind: kindValue, val: fmt.Sprint(i), expireAtMs: maxExpire} }
	cached := func(prefix string, n int) (keys []string) {
		for i := range n {
			k := fmt.Sprint(prefix, i)
			if v := c.get(k); v.kind != kindAbsent {
				if v != val(i) {
					t.Fatalf("%s holds %+v, want %+v", k, v, val(i))
				}
				keys = append(keys, k)
			}
		}
		return keys
	}
	for i := range 10 {
		c.set(fmt.Sprint("k", i), val(i))
		if c.live > 4 {
			t.Fatalf("%d keys cached, max 4", c.live)
		}
	}
	if got := cached("k", 10); len(got) != 4 || got[3] != "k9" {
		t.Fatalf("cached %v, want 4 keys, k9 among them", got)
	}
	// A round holding 6 keys keeps them all, past the bound, in the
	// entries it was given.
	c.round++
	c.reserve(6)
	var slots []int32
	for i := range 6 {
		s := c.slot(fmt.Sprint("r", i))
		c.slots[s].round = c.round
		c.slots[s].val = val(i)
		slots = append(slots, s)
	}
	for i, s := range slots {
		if e := c.slots[s]; e.hash != c.hash(fmt.Sprint("r", i)) || e.val != val(i) {
			t.Fatalf("held slot %d is %+v", s, e)
		}
	}
	// After the round, an insert brings it back within the bound,
	// reusing a removed entry.
	c.round++
	c.drop("r0")
	if c.get("r0").kind != kindAbsent {
		t.Fatal("r0 still cached after drop")
	}
	c.slot("new")
	if c.live > 4 {
		t.Fatalf("%d keys cached after the round, max 4", c.live)
	}
	// A large cache grows and rebuilds; every key stays found, and a
	// rebuild leaves no tombstone.
	c = newValueCache(5000)
	for i := range 5000 {
		c.set(fmt.Sprint("g", i), val(i))
	}
	for i := 0; i < 5000; i += 2 {
		c.drop(fmt.Sprint("g", i))
	}
	if got := cached("g", 5000); len(got) != 2500 || c.live != 2500 {
		t.Fatalf("%d keys found, %d live, want 2500", len(got), c.live)
	}
	c.reserve(len(c.slots))
	if c.tombs != 0 || len(cached("g", 5000)) != 2500 {
		t.Fatalf("after a rebuild: %d tombstones, %d keys", c.tombs, len(cached("g", 5000)))
	}
	for i := range c.slots {
		if h := c.slots[i].hash; h == entryTomb {
			t.Fatalf("entry %d is a tombstone after a rebuild", i)
		}
	}
	c.reset()
	if c.live != 0 || c.get("g1").kind != kindAbsent {
		t.Fatal("reset kept keys")
	}
}

// TestValueCacheReusesTombstone: a new key takes the first removed entry
// on its probe path, not the empty one that ends it.
func TestValueCacheReusesTombstone(t *testing.T) {
	c := newValueCache(100)
	n := uint64(len(c.slots))
	// Three keys that all start probing at entry 5.
	hashes := map[string]uint64{"a": n + 5, "b": 2*n + 5, "c": 3*n + 5}
	c.hashOf = func(k string) uint64 { return hashes[k] }
	if a, b := c.slot("a"), c.slot("b"); a != 5 || b != 6 {
		t.Fatalf("a at %d, b at %d; want 5 and 6", a, b)
	}
	c.drop("a")
	if got := c.slot("c"); got != 5 || c.tombs != 0 {
		t.Fatalf("c at %d with %d tombstones; want 5 (a's) and none", got, c.tombs)
	}
	if c.get("b").kind != kindAbsent || c.find(c.hash("b")) != 6 {
		t.Fatalf("b lost past the reused entry")
	}
}

// TestValueCacheHeldNotMoved: between reserve(n) and the end of a round,
// n new keys never move an entry the round holds, even where the table
// would otherwise have been rebuilt.
func TestValueCacheHeldNotMoved(t *testing.T) {
	c := newValueCache(1 << 20)
	c.round++
	c.reserve(1000)
	held := make([]int32, 1000)
	for i := range held {
		held[i] = c.slot(fmt.Sprint("h", i))
		c.slots[held[i]].round = c.round
	}
	for i, s := range held {
		if c.slots[s].hash != c.hash(fmt.Sprint("h", i)) {
			t.Fatalf("key %d's entry %d moved", i, s)
		}
	}
	if n := len(c.slots); n < 1000*4/3 {
		t.Fatalf("%d entries for 1000 keys", n)
	}
}

// TestSharedHashCollision: two keys whose cache hashes collide, decided in
// one round, are each decided on their own value.
func TestSharedHashCollision(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	c := s.b.cache
	c.hashOf = func(k string) uint64 { // "b" finds "a"'s entry
		if k == "b" {
			k = "a"
		}
		return maphash.String(c.seed, k)
	}
	var as, bs []<-chan answer
	for range 3 {
		as = append(as, throttleAsync(s, "a", clQuota, 1))
		bs = append(bs, throttleAsync(s, "b", clQuota, 1))
	}
	startShared(t, s)
	for i := range 3 {
		for _, ch := range []<-chan answer{as[i], bs[i]} {
			if a := wait(t, ch); a.err != nil || a.res.Limited || a.res.Remaining != int64(4-i) {
				t.Fatalf("call %d: %+v, want admitted with %d remaining", i, a, 4-i)
			}
		}
	}
	for _, k := range []string{"a", "b"} {
		if !m.Exists(k) {
			t.Fatalf("%s not written", k)
		}
	}
	if a := wait(t, throttleAsync(s, "b", clQuota, 1)); a.err != nil || a.res.Remaining != 1 {
		t.Fatalf("b's 4th call: %+v, want 1 remaining", a)
	}
}
