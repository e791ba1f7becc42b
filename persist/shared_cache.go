package persist

import "hash/maphash"

// valueCache is shared mode's value cache: the last value seen of each key
// in the store, at most max keys (evicted arbitrarily), a key not in it
// being expected absent. Keys are known by a 64-bit hash of their name
// only, so that the index holds no strings: were two keys' hashes to
// collide, they would share an entry, and the compare-and-set would only
// find the other key's value there and conflict (a round that sees two
// names on one entry groups its operations by name instead). Decisions are
// made on a cached value, and the compare-and-set checks it: a wrong one
// costs a conflict and a decision again, never a wrong answer. Its entries
// live in one slab, found by key once a round: a round of single-key
// operations finds each key's entry while it groups them (slot), and its
// decisions and replies then reach the entry by its index instead of
// looking the key up again. An entry that slot gave in the round under way
// is never evicted before the round ends. Owned by the batcher goroutine.
type valueCache struct {
	seed    maphash.Seed
	index   map[uint64]int32
	entries []cacheEntry
	free    []int32 // entries whose key was dropped
	max     int
	round   uint64 // the round under way, stamped on the entries it holds
	hand    int    // where the search for an entry to evict goes on
}

// cacheEntry is one key's value, and its group in the last round that used
// it.
type cacheEntry struct {
	live  bool   // false: on the free list
	hash  uint64 // the key's
	val   storeValue
	round uint64
	group int32
}

func newValueCache(max int) *valueCache {
	return &valueCache{seed: maphash.MakeSeed(), index: make(map[uint64]int32), max: max}
}

// reset empties the cache.
func (c *valueCache) reset() {
	*c = valueCache{seed: c.seed, index: make(map[uint64]int32), max: c.max, round: c.round}
}

// hash is key's hash.
func (c *valueCache) hash(key string) uint64 { return maphash.String(c.seed, key) }

// drop forgets key.
func (c *valueCache) drop(key string) { c.dropHash(c.hash(key)) }

// dropHash forgets the key of hash h.
func (c *valueCache) dropHash(h uint64) {
	i, ok := c.index[h]
	if !ok {
		return
	}
	delete(c.index, h)
	c.entries[i] = cacheEntry{}
	c.free = append(c.free, i)
}

// get returns key's value; absent when it is not cached.
func (c *valueCache) get(key string) storeValue {
	if i, ok := c.index[c.hash(key)]; ok {
		return c.entries[i].val
	}
	return storeValue{kind: kindAbsent}
}

// set remembers key's value.
func (c *valueCache) set(key string, v storeValue) {
	c.entries[c.slot(key)].val = v
}

// slot returns key's entry, made (absent) if the key is not cached, held
// until the round ends.
func (c *valueCache) slot(key string) int32 {
	h := c.hash(key)
	i, ok := c.index[h]
	if !ok {
		i = c.insert(h)
	}
	return i
}

// insert makes an entry for key, absent, evicting other keys' while the
// cache is full (keys that the round under way does not hold: when every
// entry is held, the cache grows past max, and shrinks back as keys are
// inserted after the round).
func (c *valueCache) insert(h uint64) int32 {
	for len(c.index) >= c.max && c.evict() {
	}
	var i int32
	if n := len(c.free); n > 0 {
		i = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		i = int32(len(c.entries))
		c.entries = append(c.entries, cacheEntry{})
	}
	c.entries[i] = cacheEntry{live: true, hash: h, val: storeValue{kind: kindAbsent}}
	c.index[h] = i
	return i
}

// evict drops one key that the round under way does not hold, and reports
// whether there was one.
func (c *valueCache) evict() bool {
	for range len(c.entries) {
		if c.hand >= len(c.entries) {
			c.hand = 0
		}
		i := c.hand
		c.hand++
		e := &c.entries[i]
		if !e.live || e.round == c.round && c.round != 0 {
			continue
		}
		c.dropHash(e.hash)
		return true
	}
	return false
}
