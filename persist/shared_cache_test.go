package persist

import (
	"fmt"
	"testing"
)

// TestValueCache checks the value cache's bound, that the round under way
// keeps the entries it holds, and that dropped entries are reused.
func TestValueCache(t *testing.T) {
	c := newValueCache(4)
	val := func(i int) storeValue { return storeValue{kind: kindValue, val: fmt.Sprint(i), expireAtMs: maxExpire} }
	for i := range 10 {
		c.set(fmt.Sprint("k", i), val(i))
		if len(c.index) > 4 {
			t.Fatalf("%d keys cached, max 4", len(c.index))
		}
	}
	for i := 6; i < 10; i++ {
		k := fmt.Sprint("k", i)
		if e := c.entries[c.index[c.hash(k)]]; e.hash != c.hash(k) || c.get(k) != val(i) {
			t.Fatalf("entry %+v for %q", e, k)
		}
	}
	if got := c.get("k0"); got.kind != kindAbsent {
		t.Fatalf("evicted k0 = %+v, want absent", got)
	}
	// A round holding 6 keys keeps them all, past the bound.
	c.round++
	var slots []int32
	for i := range 6 {
		s := c.slot(fmt.Sprint("r", i))
		c.entries[s].round = c.round
		c.entries[s].val = val(i)
		slots = append(slots, s)
	}
	for i, s := range slots {
		if e := c.entries[s]; e.hash != c.hash(fmt.Sprint("r", i)) || e.val != val(i) {
			t.Fatalf("held slot %d is %+v", s, e)
		}
	}
	// After the round, an insert brings it back within the bound,
	// reusing the entries freed.
	c.round++
	c.drop("r0")
	if c.get("r0").kind != kindAbsent {
		t.Fatal("r0 still cached after drop")
	}
	n := len(c.entries)
	c.slot("new")
	if len(c.entries) != n {
		t.Fatalf("the slab grew to %d entries with free ones", len(c.entries))
	}
	if len(c.index) > 4 {
		t.Fatalf("%d keys cached after the round, max 4", len(c.index))
	}
	for h, i := range c.index {
		if !c.entries[i].live || c.entries[i].hash != h {
			t.Fatalf("index %x -> %+v", h, c.entries[i])
		}
	}
	c.reset()
	if len(c.index) != 0 || c.get("new").kind != kindAbsent {
		t.Fatal("reset kept keys")
	}
}

// TestSharedHashCollision: two keys whose cache hashes collide, decided in
// one round, are each decided on their own value.
func TestSharedHashCollision(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	c := s.b.cache
	c.index[c.hash("b")] = c.slot("a") // "b" finds "a"'s entry
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
