package persist

// valueCache is shared mode's value cache: the last value seen of each key
// in the store, at most max keys (evicted arbitrarily), a key not in it
// being expected absent. Its entries live in one slab, found by key once a
// round: a round of single-key operations finds each key's entry while it
// groups them (slot), and its decisions and replies then reach the entry by
// its index instead of looking the key up again. An entry that slot gave
// in the round under way is never evicted before the round ends. Owned by
// the batcher goroutine.
type valueCache struct {
	index   map[string]int32
	entries []cacheEntry
	free    []int32 // entries whose key was dropped
	max     int
	round   uint64 // the round under way, stamped on the entries it holds
	hand    int    // where the search for an entry to evict goes on
}

// cacheEntry is one key's value, and its group in the last round that used
// it.
type cacheEntry struct {
	live  bool // false: on the free list
	key   string
	val   storeValue
	round uint64
	group int32
}

func newValueCache(max int) *valueCache {
	return &valueCache{index: make(map[string]int32), max: max}
}

// reset empties the cache.
func (c *valueCache) reset() {
	*c = valueCache{index: make(map[string]int32), max: c.max, round: c.round}
}

// drop forgets key.
func (c *valueCache) drop(key string) {
	i, ok := c.index[key]
	if !ok {
		return
	}
	delete(c.index, key)
	c.entries[i] = cacheEntry{}
	c.free = append(c.free, i)
}

// get returns key's value; absent when it is not cached.
func (c *valueCache) get(key string) storeValue {
	if i, ok := c.index[key]; ok {
		return c.entries[i].val
	}
	return storeValue{kind: kindAbsent}
}

// set remembers key's value.
func (c *valueCache) set(key string, v storeValue) {
	i, ok := c.index[key]
	if !ok {
		i = c.insert(key)
	}
	c.entries[i].val = v
}

// slot returns key's entry, made (absent) if the key is not cached, held
// until the round ends.
func (c *valueCache) slot(key string) int32 {
	i, ok := c.index[key]
	if !ok {
		i = c.insert(key)
	}
	return i
}

// insert makes an entry for key, absent, evicting other keys' while the
// cache is full (keys that the round under way does not hold: when every
// entry is held, the cache grows past max, and shrinks back as keys are
// inserted after the round).
func (c *valueCache) insert(key string) int32 {
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
	c.entries[i] = cacheEntry{live: true, key: key, val: storeValue{kind: kindAbsent}}
	c.index[key] = i
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
		c.drop(e.key)
		return true
	}
	return false
}
