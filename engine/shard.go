package engine

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// shard is one lock's worth of keyspace. Entries live in a slab that holds
// no pointers, found through an index of plain integers, with their names
// in an arena of bytes and SW keys' rings in an array of words (swLogs), so
// that a shard of millions of keys is a handful of arrays the garbage
// collector does not scan, and updating a key allocates nothing. The expiry
// index files each key once, at or before its expiry: extending a key's
// life (the common case) leaves the index alone, and the sweep refiles keys
// it finds still alive.
type shard struct {
	mu       sync.Mutex // guards the fields up to budget; held to write the counters
	seed     maphash.Seed
	index    keyIndex // key name → slot
	entries  []entry
	free     []uint32 // slots of entries free for reuse
	names    names
	expiry   expiryIndex
	counters []counter // SWC and FW keys' buckets, by entry.state
	freeCtrs []uint32
	logs     swLogs // SW keys' logs, by entry.state
	// changed holds the keys whose state changed since the backing store's
	// writer last took them; nil when nothing is written behind.
	changed map[string]struct{}
	// budget is the most bytes the shard's keys may use, by keyCost; 0 means
	// no limit.
	budget int64
	// phase sets the sizes of the shard's arrays, so that shards grow
	// them at different times (grownLen).
	phase float64

	// Counters, written with mu held and read without it.
	used    atomic.Int64              // bytes the keys use, by keyCost
	keys    [numFamilies]atomic.Int64 // keys held per family, expired or not
	expired atomic.Int64              // keys the sweep or an eviction removed because they had expired
	evicted atomic.Int64              // live keys removed to stay within budget
}

func newShard(seed maphash.Seed, track bool, budget int64, phase float64) *shard {
	s := &shard{seed: seed, expiry: newExpiryIndex(), budget: budget, phase: phase, logs: swLogs{phase: phase}}
	if track {
		s.changed = make(map[string]struct{})
	}
	return s
}

// tag is the part of key's hash the index files it under.
func (s *shard) tag(key []byte) uint32 { return uint32(maphash.Bytes(s.seed, key) >> 32) }

// name is ent's key, sharing the arena's bytes (see names.get).
func (s *shard) name(ent *entry) string { return s.names.get(ent.nameOff, ent.size()) }

// find returns key's slot and its cell in the index.
func (s *shard) find(key []byte) (slot uint32, cell int, ok bool) {
	cell, ok = s.index.search(s.tag(key), func(slot uint32) bool {
		return s.name(&s.entries[slot]) == string(key)
	})
	if !ok {
		return 0, 0, false
	}
	return s.index.slot(cell), cell, true
}

// cellOf returns the index cell that holds slot.
func (s *shard) cellOf(slot uint32) int {
	cell, _ := s.index.search(s.tag(bytesOf(s.name(&s.entries[slot]))), func(held uint32) bool {
		return held == slot
	})
	return cell
}

// lookup returns the live entry for key, removing it if it has expired.
func (s *shard) lookup(key []byte, nowMs int64) *entry {
	slot, ok := s.lookupSlot(key, nowMs)
	if !ok {
		return nil
	}
	return &s.entries[slot]
}

// lookupSlot is lookup returning the entry's slot.
func (s *shard) lookupSlot(key []byte, nowMs int64) (uint32, bool) {
	slot, cell, ok := s.find(key)
	if !ok {
		return 0, false
	}
	if nowMs > s.entries[slot].expireAt {
		s.remove(slot, cell) // expired on access, counted as Redis counts it
		s.expired.Add(1)
		return 0, false
	}
	return slot, true
}

// create adds key with the given family and expiry; the key must be absent.
// When the shard's budget is full it first evicts the keys that expire
// soonest (never key, which is not in the shard yet); it returns nil, having
// changed nothing, when key alone does not fit the budget, or the shard's
// arrays cannot address one more key or name.
func (s *shard) create(key []byte, family Family, expireAt, nowMs int64) *entry {
	cost := keyCost(family, len(key))
	if len(key) > maxNameLen || len(s.entries)-len(s.free) >= maxSlabSize || !s.makeRoom(cost, anyExpiry, nowMs) {
		return nil
	}
	off, ok := s.names.add(key, s.phase)
	if !ok && s.names.garbage > 0 {
		s.compactNames()
		off, ok = s.names.add(key, s.phase)
	}
	if !ok {
		return nil
	}
	slot := takeSlot(&s.entries, &s.free, s.phase)
	s.index.insert(s.tag(key), slot, s.phase)
	ent := &s.entries[slot]
	*ent = entry{expireAt: expireAt, nameOff: off, nameLen: uint32(len(key)), filed: uint32(family) << posBits}
	switch family {
	case FamilySWC, FamilyFW:
		ent.state = uint64(takeSlot(&s.counters, &s.freeCtrs, s.phase))
	case FamilySW:
		ent.state = uint64(s.logs.add())
	}
	s.file(slot, expiryBucketOf(expireAt))
	s.used.Add(cost)
	s.keys[family].Add(1)
	return ent
}

// counter is an SWC or FW key's buckets.
func (s *shard) counter(ent *entry) *counter { return &s.counters[ent.state] }

// log is an SW key's log (the low 32 bits of its state).
func (s *shard) log(ent *entry) *swLog { return &s.logs.table[uint32(ent.state)] }

// setExpiry moves ent's expiry, refiling it only when it moves to a bucket
// earlier than the one the index has it in.
func (s *shard) setExpiry(ent *entry, expireAt int64) {
	ent.expireAt = expireAt
	if b := expiryBucketOf(expireAt); b < ent.bucket {
		slot := s.unfile(ent)
		s.file(slot, b)
	}
}

// file files the key in slot under bucket b.
func (s *shard) file(slot, b uint32) {
	ent := &s.entries[slot]
	ent.bucket = b
	ent.setPos(s.expiry.file(b, slot))
}

// unfile takes ent out of the expiry index and returns its slot.
func (s *shard) unfile(ent *entry) uint32 {
	slot, moved, ok := s.expiry.unfile(ent.bucket, ent.pos())
	if ok {
		s.entries[moved].setPos(ent.pos())
	}
	return slot
}

// refile files the key in slot, found filed before its expiry, at it.
func (s *shard) refile(slot uint32) {
	ent := &s.entries[slot]
	s.unfile(ent)
	s.file(slot, expiryBucketOf(ent.expireAt))
}

// removeKey deletes key if present (expired or not) and reports whether a
// live key was deleted.
func (s *shard) removeKey(key []byte, nowMs int64) bool {
	slot, cell, ok := s.find(key)
	if !ok {
		// Not in memory, but perhaps in a backing store not loaded yet
		// (its load is being retried): the deletion reaches it all the
		// same, and keeps the load from bringing the key back.
		if s.changed != nil {
			s.markChanged(string(key))
		}
		return false
	}
	ent := &s.entries[slot]
	live := nowMs <= ent.expireAt
	s.markChanged(s.name(ent))
	s.remove(slot, cell)
	return live
}

// remove deletes the entry in slot, filed in the index's cell.
func (s *shard) remove(slot uint32, cell int) {
	ent := &s.entries[slot]
	f := ent.family()
	s.unfile(ent)
	s.index.remove(cell)
	cost := keyCost(f, int(ent.size()))
	switch f {
	case FamilySWC, FamilyFW:
		s.counters[ent.state] = counter{}
		s.freeCtrs = append(s.freeCtrs, uint32(ent.state))
	case FamilySW:
		cost += s.logs.remove(uint32(ent.state))
	}
	s.used.Add(-cost)
	s.keys[f].Add(-1)
	compact := s.names.drop(ent.size())
	*ent = entry{}
	s.free = append(s.free, slot)
	if compact {
		s.compactNames()
	}
}

// compactNames copies the live names to a new arena, dropping the garbage.
func (s *shard) compactNames() {
	live := len(s.names.buf) - s.names.garbage
	buf := make([]byte, 0, live+live/4)
	for i := range s.entries {
		ent := &s.entries[i]
		if ent.family() == FamilyNone {
			continue
		}
		off := len(buf)
		buf = append(buf, s.name(ent)...)
		ent.nameOff = uint32(off)
	}
	s.detachChanged()
	s.names = names{buf: buf}
}

// sweepCursor carries a sweep's progress through the bucket it stopped in
// from one batch to the next: how many of the bucket's last items it found
// alive and filed at their expiry already, and how many items the bucket
// held then. Between two batches the lock is let go; if the bucket's size
// has changed meanwhile (a key removed or filed there), the count no longer
// says which items were seen, and the bucket is taken from its end again.
type sweepCursor struct {
	bucket uint32
	size   int
	done   int
}

// sweep removes up to max expired keys and reports how many it removed and
// whether it stopped because of max. It takes the buckets that start
// before nowMs in order, each from its last item back, so that removing an
// item (which moves the bucket's last item into its place) never moves an
// item not yet seen; a live key filed early is refiled at its expiry.
func (s *shard) sweep(nowMs int64, max int, cur *sweepCursor) (removed int, more bool) {
	for seen := 0; seen < max; seen++ {
		b := s.expiry.first()
		if b == nil || bucketStart(b.num) >= nowMs {
			return removed, false
		}
		if b.num != cur.bucket || len(b.slots) != cur.size {
			*cur = sweepCursor{bucket: b.num, size: len(b.slots)}
		}
		j := len(b.slots) - 1 - cur.done
		if j < 0 {
			// The rest is alive and filed at its expiry: later buckets
			// start after nowMs.
			return removed, false
		}
		slot := b.slots[j]
		ent := &s.entries[slot]
		switch {
		case nowMs > ent.expireAt:
			s.remove(slot, s.cellOf(slot))
			removed++
		case expiryBucketOf(ent.expireAt) > b.num:
			s.refile(slot)
		default:
			cur.done++
		}
		cur.size = len(b.slots) // this batch's own removals keep the count right
	}
	return removed, true
}

// eachExpired calls fn for each key that has expired by nowMs and is still
// held. It looks only at the buckets that start before nowMs.
func (s *shard) eachExpired(nowMs int64, fn func(ent *entry)) {
	s.expiry.buckets.Scan(func(b *expiryBucket) bool {
		if bucketStart(b.num) >= nowMs {
			return false
		}
		for _, slot := range b.slots {
			if ent := &s.entries[slot]; nowMs > ent.expireAt {
				fn(ent)
			}
		}
		return true
	})
}

// live counts the keys that have not expired.
func (s *shard) live(nowMs int64) int {
	n := s.index.n
	s.eachExpired(nowMs, func(*entry) { n-- })
	return n
}

// flush removes every key and reports how many were live.
func (s *shard) flush(nowMs int64) int {
	n := s.live(nowMs)
	if s.changed != nil {
		for i := range s.entries {
			if ent := &s.entries[i]; ent.family() != FamilyNone {
				s.markChanged(s.name(ent))
			}
		}
		s.detachChanged()
	}
	s.index.reset()
	s.entries, s.free, s.names = nil, nil, names{}
	s.counters, s.freeCtrs, s.logs = nil, nil, swLogs{phase: s.phase}
	s.expiry.reset()
	s.used.Store(0)
	for f := range s.keys {
		s.keys[f].Store(0)
	}
	return n
}
