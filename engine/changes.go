package engine

import (
	"context"
	"strings"
)

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
	case FamilySW:
		l := s.log(ent)
		rec.Log, rec.Quantities = make([]int64, l.size), make([]uint32, l.size)
		for j := range l.size {
			rec.Log[j], rec.Quantities[j] = l.get(j)
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

// Restore merges a record read back from the backing store into the
// keyspace and reports whether it was taken (in whole or in part). An
// expired, deleted or malformed record (an SW record without requests, or
// with Log and Quantities of different lengths) is skipped. A key present
// in memory, of the same family, keeps the conservative state, the one
// that limits more:
//
//   - CL: the later TAT;
//   - SWC, FW: the later bucket; on the same bucket, each count is the
//     larger of the two, and the key expires at the later of the two
//     expiries;
//   - SW: the log with more recorded requests (by quantity); on a tie, the
//     one whose newest request is later; on a tie again, memory's.
//
// The merge is idempotent: restoring a record twice changes nothing more.
// (It does not add two copies up: the requests a copy holds and the other
// does not, such as those served from memory while the backing store was
// unreachable at start, count only if their copy wins.) When memory's state
// wins or changes, the key is noted as changed so that the backing store
// gets it. A key of another family in memory is newer than the copy and
// stays. Under Options.MaxMemory, a new key evicts the keys that expire
// before it, and is itself evicted (not taken, and noted as changed so the
// backing store deletes it) when it would expire first.
func (e *Engine) Restore(rec Record) bool {
	nowMs := e.nowMs()
	if rec.Deleted || rec.Family == FamilyNone || nowMs > rec.ExpireAtMs || !rec.wellFormed() {
		return false
	}
	key := []byte(rec.Key)
	s := e.shards[e.shardIndex(key)]
	s.mu.Lock()
	defer s.mu.Unlock()
	ent := s.lookup(key, nowMs)
	switch {
	case ent == nil:
		if !s.makeRoom(keyCost(rec.Family, len(rec.Key)), rec.ExpireAtMs, nowMs) {
			// Memory is full of keys that outlive this one: it is the one
			// to evict, here and in the backing store.
			s.evicted.Add(1)
			s.markChanged(rec.Key)
			return false
		}
		ent = s.create(key, rec.Family, rec.ExpireAtMs, nowMs)
	case ent.family() != rec.Family:
		return false // memory's key, of another family, is newer than the copy
	default:
		return s.merge(ent, rec)
	}
	s.take(ent, rec)
	return true
}

// wellFormed reports whether the record's state can be taken as it is.
func (rec *Record) wellFormed() bool {
	switch rec.Family {
	case FamilyCL, FamilySWC, FamilyFW:
		return true
	case FamilySW:
		return len(rec.Log) > 0 && len(rec.Log) == len(rec.Quantities)
	}
	return false
}

// take gives ent the record's state, replacing its own.
func (s *shard) take(ent *entry, rec Record) {
	switch rec.Family {
	case FamilyCL:
		ent.state = rec.TAT
	case FamilySWC, FamilyFW:
		*s.counter(ent) = counter{start: rec.Start, cur: rec.Cur, prev: rec.Prev}
	case FamilySW:
		l := newSWLog(rec.Log, rec.Quantities)
		s.used.Add(l.bytes() - s.logs[ent.state].bytes())
		s.logs[ent.state] = l
	}
}

// merge merges rec into ent, a live key of the same family, as Restore
// describes, and reports whether anything of rec was taken.
func (s *shard) merge(ent *entry, rec Record) bool {
	taken, kept := false, false // rec's state taken; memory's state kept
	switch rec.Family {
	case FamilyCL:
		taken = rec.TAT > ent.tat()
		kept = !taken
	case FamilySWC, FamilyFW:
		c := s.counter(ent)
		switch {
		case rec.Start > c.start:
			taken = true
		case rec.Start < c.start:
			kept = true
		default:
			cur, prev := max(c.cur, rec.Cur), max(c.prev, rec.Prev)
			taken = cur > c.cur || prev > c.prev || rec.ExpireAtMs > ent.expireAt
			kept = cur > rec.Cur || prev > rec.Prev || ent.expireAt > rec.ExpireAtMs
			rec.Cur, rec.Prev = cur, prev
			rec.ExpireAtMs = max(rec.ExpireAtMs, ent.expireAt)
		}
	case FamilySW:
		var total int64
		for _, n := range rec.Quantities {
			total += int64(n)
		}
		l := s.log(ent)
		taken = total > l.total || total == l.total && rec.Log[len(rec.Log)-1] > l.newest()
		kept = !taken
	}
	if kept {
		s.markChanged(s.name(ent))
	}
	if taken {
		s.setExpiry(ent, rec.ExpireAtMs)
		s.take(ent, rec)
	}
	return taken
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
