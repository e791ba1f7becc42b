package engine

import "errors"

// ErrOutOfMemory is returned when a new key does not fit its shard's share of
// Options.MaxMemory even with every other key of the shard evicted; nothing
// is written.
var ErrOutOfMemory = errors.New("key does not fit in maxmemory")

// keyOverhead is what a key costs beyond the bytes of its name, in the
// estimate that Used reports and MaxMemory bounds: its map slot, slab entry
// and expiry-index item, with the map, slab and index at their usual fill.
// Measured as the growth of the Go heap (runtime.MemStats.HeapAlloc, after a
// GC) over 100,000 new CL keys with 16-byte names in 128 shards, less the
// names: 189 bytes a key on linux/amd64 with Go 1.26 since the entry
// holds the window families' fields (it varies by about a tenth either way
// between 50,000 and 1,000,000 keys and 4 to 1,024 shards, as the slabs and
// maps sit between two doublings), rounded to 190. An SW key's log adds 12
// bytes per slot of its ring. TestKeyOverheadMeasured
// measures it again. Not counted: the names of keys waiting for a backing
// store's writer (Options.TrackChanges), and the slab and map space that
// evicted and expired keys leave behind for new keys to reuse.
const keyOverhead = 190

// keyCost is the estimated bytes a key with a name of n bytes uses.
func keyCost(n int) int64 { return int64(n) + keyOverhead }

// MaxMemory is Options.MaxMemory: the bound on Used, 0 for none.
func (e *Engine) MaxMemory() int64 { return e.maxMemory }

// Used is the estimated bytes the keyspace uses: the length of each key's
// name plus a fixed overhead per key (keyOverhead), summed over the keys
// held, including expired keys the sweep has not removed yet.
func (e *Engine) Used() int64 {
	n := int64(0)
	for _, s := range e.shards {
		n += s.used.Load()
	}
	return n
}

// EvictedKeys is how many live keys have been removed to stay within
// MaxMemory.
func (e *Engine) EvictedKeys() int64 {
	n := int64(0)
	for _, s := range e.shards {
		n += s.evicted.Load()
	}
	return n
}

// fits reports whether cost more bytes fit the shard's budget as it is.
func (s *shard) fits(cost int64) bool {
	return s.budget == 0 || s.used.Load()+cost <= s.budget
}

// makeRoom evicts the shard's keys, the soonest to expire first, until cost
// more bytes fit its budget. It reports false, evicting nothing, when cost
// alone is over the budget.
func (s *shard) makeRoom(cost, nowMs int64) bool {
	if s.budget == 0 {
		return true
	}
	if cost > s.budget {
		return false
	}
	for !s.fits(cost) {
		i, ok := s.soonest()
		if !ok {
			break // nothing left; cannot happen while used > 0
		}
		s.evict(i, nowMs)
	}
	return true
}

// soonest returns the slot of the key that expires first, or false when the
// shard is empty. The index files a key at or before its expiry; items filed
// early are refiled at the key's expiry, as the sweep does, until the first
// item is where its key really expires, so the answer is exact.
func (s *shard) soonest() (uint32, bool) {
	for {
		var early expiryItem
		var slot uint32
		haveFound, haveEarly := false, false
		s.expiry.Scan(func(it expiryItem) bool {
			i := s.slots[it.key]
			e := &s.entries[i]
			switch {
			case it.at != e.expireAt:
				early, haveEarly = it, true
				return false
			case e.pinned:
				return true // a key a ThrottleAll is recording: not a candidate
			}
			slot, haveFound = i, true
			return false
		})
		if haveFound {
			return slot, true
		}
		if !haveEarly {
			return 0, false
		}
		s.refile(early, &s.entries[s.slots[early.key]])
	}
}

// evict removes the key in slot i to make room, and notes it as changed so
// that a backing store deletes it too. A key that had expired anyway counts
// as expired, not evicted, and is left to the backing store's own expiry,
// as the sweep leaves it.
func (s *shard) evict(i uint32, nowMs int64) {
	e := &s.entries[i]
	if nowMs > e.expireAt {
		s.expired.Add(1)
	} else {
		s.evicted.Add(1)
		s.markChanged(e.key)
	}
	s.remove(i)
}
