package persist

import (
	"hash/maphash"
	"math/bits"
)

// valueCache is shared mode's value cache: the last value seen of each key
// in the store, at most max keys (evicted arbitrarily), a key not in it
// being expected absent. Keys are known by a 64-bit hash of their name
// only, so that the cache holds no strings: were two keys' hashes to
// collide, they would share an entry, and the compare-and-set would only
// find the other key's value there and conflict (a round that sees two
// names on one entry groups its operations by name instead). Decisions are
// made on a cached value, and the compare-and-set checks it: a wrong one
// costs a conflict and a decision again, never a wrong answer.
//
// The entries live in the table itself (open addressing, linear probing),
// one cache line each, so that finding a key's value is one miss, not a
// map's and then an entry's. A round of single-key operations finds each
// key's entry while it groups them (slot), and its decisions and replies
// then reach the entry by its index. An entry that slot gave in the round
// under way is never evicted before the round ends, nor moved: a removal
// leaves a tombstone, and the table is only rebuilt (grown, or rid of its
// tombstones) by reserve, before a round hands out entries. Owned by the
// batcher goroutine.
type valueCache struct {
	seed  maphash.Seed
	slots []cacheEntry // a power of two of them
	live  int          // entries holding a key
	tombs int          // entries that held one
	max   int
	round uint64 // the round under way, stamped on the entries it holds
	hand  int    // where the search for an entry to evict goes on
	// hashOf, when set, replaces the key's hash (tests make two keys
	// collide with it).
	hashOf func(string) uint64
}

// Entry states, in cacheEntry.hash: a key's hash is never one of them.
const (
	entryEmpty = 0
	entryTomb  = 1
)

// cacheEntry is one key's value, and its group in the last round that held
// it: 64 bytes.
type cacheEntry struct {
	hash  uint64 // the key's; entryEmpty or entryTomb when it holds none
	round uint64
	group int32
	val   storeValue
}

// minCacheSlots is the smallest table.
const minCacheSlots = 64

func newValueCache(max int) *valueCache {
	c := &valueCache{seed: maphash.MakeSeed(), max: max}
	c.slots = make([]cacheEntry, minCacheSlots)
	return c
}

// reset empties the cache.
func (c *valueCache) reset() {
	clear(c.slots)
	c.live, c.tombs, c.hand = 0, 0, 0
}

// hash is key's hash, never entryEmpty or entryTomb. Unlike the rest of
// the cache, it may be called on any goroutine: it reads only what is set
// when the cache is made (or, in tests, before it is used).
func (c *valueCache) hash(key string) uint64 {
	var h uint64
	if c.hashOf != nil {
		h = c.hashOf(key)
	} else {
		h = maphash.String(c.seed, key)
	}
	if h <= entryTomb {
		h += 2
	}
	return h
}

// find returns the index of the entry of hash h, or -1.
func (c *valueCache) find(h uint64) int {
	mask := len(c.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch c.slots[i].hash {
		case h:
			return i
		case entryEmpty:
			return -1
		}
	}
}

// drop forgets key.
func (c *valueCache) drop(key string) {
	if i := c.find(c.hash(key)); i >= 0 {
		c.remove(i)
	}
}

// remove turns entry i into a tombstone.
func (c *valueCache) remove(i int) {
	c.slots[i] = cacheEntry{hash: entryTomb}
	c.live--
	c.tombs++
}

// get returns key's value; unseenValue when it is not cached.
func (c *valueCache) get(key string) storeValue {
	if i := c.find(c.hash(key)); i >= 0 {
		return c.slots[i].val
	}
	return unseenValue()
}

// set remembers key's value.
func (c *valueCache) set(key string, v storeValue) {
	c.slots[c.slot(key)].val = v
}

// slot returns key's entry, made (absent) if the key is not cached, held
// until the round ends. Between two calls of reserve(n), at most n new
// keys may be given entries while entries are held: the table is not
// rebuilt then.
func (c *valueCache) slot(key string) int32 { return c.slotOf(c.hash(key)) }

// slotOf is slot for the key of hash h (as hash gives it).
func (c *valueCache) slotOf(h uint64) int32 {
	// Find the key, noting the first entry free for it on the way: a
	// tombstone, or the empty entry that ends the search.
	mask := len(c.slots) - 1
	free := -1
	i := int(h) & mask
	for ; c.slots[i].hash != entryEmpty; i = (i + 1) & mask {
		switch c.slots[i].hash {
		case h:
			return int32(i)
		case entryTomb:
			if free < 0 {
				free = i
			}
		}
	}
	if free < 0 {
		free = i
	}
	for c.live >= c.max && c.evict() {
	}
	if c.slots[free].hash == entryTomb {
		c.tombs--
	}
	c.slots[free] = cacheEntry{hash: h, val: unseenValue()}
	c.live++
	if (c.live+c.tombs)*4 > len(c.slots)*3 {
		// Past what reserve made room for: no entry is held (reserve
		// was not called), so the table may be rebuilt.
		c.rebuild(c.live)
		return int32(c.find(h))
	}
	return int32(free)
}

// touch reads the entry where the key of hash h is looked for first, and
// returns its hash: a round reads all its keys' entries this way before it
// looks them up, so that their cache misses overlap instead of coming one
// after the other.
func (c *valueCache) touch(h uint64) uint64 {
	return c.slots[int(h)&(len(c.slots)-1)].hash
}

// reserve makes room for n new keys without rebuilding the table, which it
// may rebuild now: no entry may be held when it is called.
func (c *valueCache) reserve(n int) {
	if (c.live+c.tombs+n)*4 > len(c.slots)*3 {
		c.rebuild(c.live + n)
	}
}

// rebuild rehashes the live entries into a table that holds n keys at
// most half full (a tombstone-free one of the same size if that is
// enough).
func (c *valueCache) rebuild(n int) {
	size := max(minCacheSlots, 1<<bits.Len(uint(2*max(n, 1)-1)))
	old := c.slots
	size = max(size, len(old))
	c.slots = make([]cacheEntry, size)
	c.tombs, c.hand = 0, 0
	mask := size - 1
	for i := range old {
		e := &old[i]
		if e.hash <= entryTomb {
			continue
		}
		j := int(e.hash) & mask
		for c.slots[j].hash != entryEmpty {
			j = (j + 1) & mask
		}
		c.slots[j] = *e
	}
}

// evict drops one key that the round under way does not hold, and reports
// whether there was one.
func (c *valueCache) evict() bool {
	for range len(c.slots) {
		if c.hand >= len(c.slots) {
			c.hand = 0
		}
		i := c.hand
		c.hand++
		e := &c.slots[i]
		if e.hash <= entryTomb || e.round == c.round && c.round != 0 {
			continue
		}
		c.remove(i)
		return true
	}
	return false
}
