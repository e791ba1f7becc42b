package engine

import "strings"

// Record is one key's state as a backing store keeps it: a live key with its
// expiry, or the news that the key is gone. Which state fields are set
// depends on the family; the others are zero.
type Record struct {
	Key    string
	Family Family
	// TAT is a CL key's theoretical arrival time, nanoseconds since the epoch.
	TAT uint64
	// Start is an SWC or FW key's current bucket's start, nanoseconds since
	// the epoch (a multiple of the key's window); Cur is that bucket's count
	// and Prev (SWC only) the count of the bucket before it.
	Start     int64
	Cur, Prev uint32
	// Log and Quantities are an SW key's recorded requests in arrival
	// order, oldest first: each one's time in nanoseconds since the epoch
	// and its quantity (at least 1). They have the same length, at least 1,
	// and belong to the record (Changes copies them out of the keyspace).
	// The log may still hold requests that have left the window: the key's
	// next decision drops them.
	Log        []int64
	Quantities []uint32
	// Tail is an LB key's next free departure, nanoseconds since the epoch.
	Tail int64
	// ExpireAtMs is when the key is gone: once the clock in milliseconds is
	// past it, as Redis's PXAT means it.
	ExpireAtMs int64
	// Deleted says the key no longer exists (DEL, FLUSHALL, a TAT that
	// limits nothing); the other fields are unset.
	Deleted bool
}

// markChanged notes that key's state changed, when changes are tracked.
// name should be the entry's own name (shard.name), which shares the
// arena's bytes, so that noting allocates nothing beyond the set's growth;
// detachChanged copies the names when the arena is replaced.
func (s *shard) markChanged(name string) {
	if s.changed != nil {
		s.changed[name] = struct{}{}
	}
}

// detachChanged gives the changed keys names of their own, before the
// arena their names share is dropped (a compaction or a flush): otherwise
// a pending key would keep the whole old arena alive until the writer
// takes it.
func (s *shard) detachChanged() {
	if len(s.changed) == 0 {
		return
	}
	m := make(map[string]struct{}, len(s.changed))
	for k := range s.changed {
		m[strings.Clone(k)] = struct{}{}
	}
	s.changed = m
}

// Changes appends to buf the records of the keys changed since they were
// last taken, at most max of them, and forgets that they changed. A key
// changed many times is one record with its latest state: the set of changed
// keys is bounded by the keyspace, never overflows and drops nothing. It
// returns buf unchanged when changes are not tracked (Options.TrackChanges).
func (e *Engine) Changes(buf []Record, max int) []Record {
	if !e.track {
		return buf
	}
	nowMs := e.nowMs()
	for _, s := range e.shards {
		if len(buf) >= max {
			break
		}
		s.mu.Lock()
		for name := range s.changed {
			if len(buf) >= max {
				break
			}
			delete(s.changed, name)
			buf = append(buf, s.snapshot(name, nowMs))
		}
		s.mu.Unlock()
	}
	return buf
}

// snapshot returns key's current state as a Record, copied out of the
// keyspace.
func (s *shard) snapshot(name string, nowMs int64) Record {
	i, _, ok := s.find(bytesOf(name))
	if !ok || nowMs > s.entries[i].expireAt {
		return Record{Key: name, Deleted: true}
	}
	ent := &s.entries[i]
	rec := Record{Key: name, Family: ent.family(), ExpireAtMs: ent.expireAt}
	switch ent.family() {
	case FamilyCL:
		rec.TAT = ent.tat()
	case FamilySWC:
		c := s.counter(ent)
		rec.Start, rec.Cur, rec.Prev = c.start, c.cur, c.prev
	case FamilyFW:
		// A fixed window never looks at the bucket before.
		c := s.counter(ent)
		rec.Start, rec.Cur = c.start, c.cur
	case FamilyLB:
		rec.Tail = ent.tail()
	case FamilySW:
		l := s.log(ent)
		rec.Log, rec.Quantities = make([]int64, l.size), make([]uint32, l.size)
		ring := s.logs.ring(l)
		for j := range l.size {
			rec.Log[j], rec.Quantities[j] = l.get(ring, j)
		}
	}
	return rec
}

// MarkChanged notes again that keys changed, so that the next Changes
// returns their state: for a write to the backing store that failed.
func (e *Engine) MarkChanged(keys []string) {
	if !e.track {
		return
	}
	for _, k := range keys {
		s := e.shards[e.shardIndex([]byte(k))]
		s.mu.Lock()
		s.changed[k] = struct{}{}
		s.mu.Unlock()
	}
}

// Pending is the number of keys changed and not yet taken by Changes.
func (e *Engine) Pending() int {
	n := 0
	e.forEachShard(nil, func(s *shard) { n += len(s.changed) })
	return n
}
