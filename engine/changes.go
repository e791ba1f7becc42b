package engine

import "context"

// Record is one key's state as a backing store keeps it: a live key with its
// expiry, or the news that the key is gone.
type Record struct {
	Key    string
	Family Family
	// TAT is a CL key's theoretical arrival time, nanoseconds since the epoch.
	TAT uint64
	// ExpireAtMs is when the key is gone: once the clock in milliseconds is
	// past it, as Redis's PXAT means it.
	ExpireAtMs int64
	// Deleted says the key no longer exists (DEL, FLUSHALL, a TAT that
	// limits nothing); the other fields are unset.
	Deleted bool
}

// markChanged notes that key's state changed, when changes are tracked.
// name must be the entry's own key string, so that noting allocates only
// when the set grows.
func (s *shard) markChanged(name string) {
	if s.changed != nil {
		s.changed[name] = struct{}{}
	}
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
			buf = append(buf, s.record(name, nowMs))
		}
		s.mu.Unlock()
	}
	return buf
}

// admit makes room in the shard's budget for a new key holding rec by
// evicting the keys that expire before rec does, soonest first. It reports
// false when rec itself is the soonest to go, or does not fit alone.
func (s *shard) admit(rec Record, nowMs int64) bool {
	cost := keyCost(len(rec.Key))
	if s.budget != 0 && cost > s.budget {
		return false
	}
	for !s.fits(cost) {
		i, ok := s.soonest()
		if !ok || s.entries[i].expireAt >= rec.ExpireAtMs {
			return false
		}
		s.evict(i, nowMs)
	}
	return true
}

// record returns key's current state as a Record.
func (s *shard) record(name string, nowMs int64) Record {
	i, ok := s.slots[name]
	if !ok || nowMs > s.entries[i].expireAt {
		return Record{Key: name, Deleted: true}
	}
	ent := &s.entries[i]
	return Record{Key: name, Family: ent.family, TAT: ent.tat, ExpireAtMs: ent.expireAt}
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
	for _, s := range e.shards {
		s.mu.Lock()
		n += len(s.changed)
		s.mu.Unlock()
	}
	return n
}

// Restore merges a record read back from the backing store into the
// keyspace and reports whether it was taken. An expired or deleted record is
// skipped. A CL key present in memory keeps the later TAT, the conservative
// one; when memory's wins, the key is noted as changed so the backing store
// gets it. Under Options.MaxMemory, a new key evicts the keys that expire
// before it, and is itself evicted (not taken, and noted as changed so the
// backing store deletes it) when it would expire first.
func (e *Engine) Restore(rec Record) bool {
	nowMs := e.nowMs()
	if rec.Deleted || rec.Family == FamilyNone || nowMs > rec.ExpireAtMs {
		return false
	}
	key := []byte(rec.Key)
	s := e.shards[e.shardIndex(key)]
	s.mu.Lock()
	defer s.mu.Unlock()
	ent := s.lookup(key, nowMs)
	switch {
	case ent == nil:
		if !s.admit(rec, nowMs) {
			// Memory is full of keys that outlive this one: it is the one
			// to evict, here and in the backing store.
			s.evicted.Add(1)
			s.markChanged(rec.Key)
			return false
		}
		ent = s.create(key, rec.Family, rec.ExpireAtMs, nowMs)
	case ent.family != rec.Family:
		return false // memory's key, of another family, is newer than the copy
	case rec.Family == FamilyCL && ent.tat >= rec.TAT:
		s.markChanged(ent.key)
		return false
	default:
		s.setExpiry(ent, rec.ExpireAtMs)
	}
	ent.tat = rec.TAT
	return true
}

// Backing is a store that keeps a copy of the keyspace, written behind and
// read back at start. The persist package implements it over Redis.
type Backing interface {
	// Save writes each record: a live key's state with its expiry, or the
	// key's deletion. It returns an error if any record may not have been
	// written; the caller then marks them all changed again.
	Save(ctx context.Context, recs []Record) error
	// Load calls fn for every key the store holds, with its expiry.
	Load(ctx context.Context, fn func(Record)) error
}
