package engine

import (
	"sync"
	"sync/atomic"

	"github.com/tidwall/btree"
)

// entry is one key's state. Expiry follows Redis's rule: the key is gone
// once the clock in milliseconds is past expireAt.
type entry struct {
	key      string
	expireAt int64 // unix ms
	indexed  int64 // the time the key is filed under in the expiry index, <= expireAt
	tat      uint64
	// start, cur and prev are a counter key's buckets: the current bucket's
	// start in ns since the epoch, its count, and the previous bucket's
	// count (SWC only).
	start     int64
	cur, prev uint32
	family    Family
	// pinned keeps the key from eviction while a ThrottleAll records its
	// rules, so that one rule's new key never evicts another's.
	pinned bool
	// log is a sliding-log key's recorded requests (SW only).
	log *swLog
}

// expiryItem files a key in a shard's expiry index.
type expiryItem struct {
	at  int64 // unix ms
	key string
}

func expiryLess(a, b expiryItem) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

// shard is one lock's worth of keyspace. Entries live in a slab indexed by
// the map, so updating a key allocates nothing. The expiry index files each
// key once, at or before its expiry: extending a key's life (the common case)
// leaves the index alone, and the sweep refiles keys it finds still alive.
type shard struct {
	mu      sync.Mutex // guards slots, entries, free, expiry, changed; held to write the counters
	slots   map[string]uint32
	entries []entry
	free    []uint32
	expiry  *btree.BTreeG[expiryItem] // not safe for concurrent use; guarded by mu
	// changed holds the keys whose state changed since the backing store's
	// writer last took them; nil when nothing is written behind.
	changed map[string]struct{}
	// budget is the most bytes the shard's keys may use, by keyCost; 0 means
	// no limit.
	budget int64

	// Counters, written with mu held and read without it.
	used    atomic.Int64              // bytes the keys use, by keyCost
	keys    [numFamilies]atomic.Int64 // keys held per family, expired or not
	expired atomic.Int64              // keys the sweep or an eviction removed because they had expired
	evicted atomic.Int64              // live keys removed to stay within budget
}

func newShard(track bool, budget int64) *shard {
	s := &shard{
		slots:  make(map[string]uint32),
		expiry: btree.NewBTreeGOptions(expiryLess, btree.Options{NoLocks: true}),
		budget: budget,
	}
	if track {
		s.changed = make(map[string]struct{})
	}
	return s
}

// lookup returns the live entry for key, removing it if it has expired.
func (s *shard) lookup(key []byte, nowMs int64) *entry {
	i, ok := s.slots[string(key)]
	if !ok {
		return nil
	}
	e := &s.entries[i]
	if nowMs > e.expireAt {
		s.remove(i) // expired on access, counted as Redis counts it
		s.expired.Add(1)
		return nil
	}
	return e
}

// create adds key with the given family and expiry; the key must be absent.
// When the shard's budget is full it first evicts the keys that expire
// soonest (never key, which is not in the shard yet); it returns nil, having
// changed nothing, when key alone does not fit the budget.
func (s *shard) create(key []byte, family Family, expireAt, nowMs int64) *entry {
	cost := keyCost(len(key))
	if !s.makeRoom(cost, nowMs) {
		return nil
	}
	name := string(key)
	var i uint32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		s.entries = append(s.entries, entry{})
		i = uint32(len(s.entries) - 1)
	}
	s.slots[name] = i
	s.entries[i] = entry{key: name, family: family, expireAt: expireAt, indexed: expireAt}
	s.expiry.Set(expiryItem{at: expireAt, key: name})
	s.used.Add(cost)
	s.keys[family].Add(1)
	return &s.entries[i]
}

// setExpiry moves e's expiry, refiling it only when it moves earlier than
// where the index has it.
func (s *shard) setExpiry(e *entry, expireAt int64) {
	e.expireAt = expireAt
	if expireAt < e.indexed {
		s.expiry.Delete(expiryItem{at: e.indexed, key: e.key})
		s.expiry.Set(expiryItem{at: expireAt, key: e.key})
		e.indexed = expireAt
	}
}

// removeKey deletes key if present (expired or not) and reports whether a
// live key was deleted.
func (s *shard) removeKey(key []byte, nowMs int64) bool {
	i, ok := s.slots[string(key)]
	if !ok {
		return false
	}
	live := nowMs <= s.entries[i].expireAt
	s.markChanged(s.entries[i].key)
	s.remove(i)
	return live
}

// remove deletes the entry in slot i.
func (s *shard) remove(i uint32) {
	e := &s.entries[i]
	s.expiry.Delete(expiryItem{at: e.indexed, key: e.key})
	delete(s.slots, e.key)
	s.used.Add(-keyCost(len(e.key)) - e.log.bytes())
	s.keys[e.family].Add(-1)
	*e = entry{}
	s.free = append(s.free, i)
}

// sweep removes up to max expired keys and reports how many it removed and
// whether it stopped because of max.
func (s *shard) sweep(nowMs int64, max int) (removed int, more bool) {
	for seen := 0; seen < max; seen++ {
		it, ok := s.expiry.Min()
		if !ok || it.at >= nowMs {
			return removed, false
		}
		i := s.slots[it.key]
		e := &s.entries[i]
		if nowMs > e.expireAt {
			s.remove(i)
			removed++
			continue
		}
		s.refile(it, e)
	}
	return removed, true
}

// refile moves e's index item it, filed before e's expiry, to the expiry.
func (s *shard) refile(it expiryItem, e *entry) {
	s.expiry.Delete(it)
	s.expiry.Set(expiryItem{at: e.expireAt, key: e.key})
	e.indexed = e.expireAt
}

// eachExpired calls fn for each key that has expired by nowMs and is still
// held. It looks only at the index items filed before nowMs.
func (s *shard) eachExpired(nowMs int64, fn func(e *entry)) {
	s.expiry.Scan(func(it expiryItem) bool {
		if it.at >= nowMs {
			return false
		}
		if e := &s.entries[s.slots[it.key]]; nowMs > e.expireAt {
			fn(e)
		}
		return true
	})
}

// live counts the keys that have not expired.
func (s *shard) live(nowMs int64) int {
	n := len(s.slots)
	s.eachExpired(nowMs, func(*entry) { n-- })
	return n
}

// flush removes every key and reports how many were live.
func (s *shard) flush(nowMs int64) int {
	n := s.live(nowMs)
	for name := range s.slots {
		s.markChanged(name)
	}
	s.slots = make(map[string]uint32)
	s.entries, s.free = nil, nil
	s.expiry.Clear()
	s.used.Store(0)
	for f := range s.keys {
		s.keys[f].Store(0)
	}
	return n
}
