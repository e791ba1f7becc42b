package engine

// Restore merges a record read back from the backing store into the
// keyspace and reports whether it was taken (in whole or in part). An
// expired, deleted or malformed record (an SW record without requests, or
// with Log and Quantities of different lengths) is skipped. A key present
// in memory, of the same family, keeps the conservative state, the one
// that limits more:
//
//   - CL: the later TAT; LB: the later tail (the longer queue);
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
// stays. Under Options.MaxMemory, a new key (an SW key's log counted)
// evicts the keys that expire before it, and is itself evicted (not taken,
// and noted as changed so the backing store deletes it), evicting nothing,
// when it would not fit beside the keys that outlive it. An SW key whose
// log alone is over the budget, as a log may grow in memory, is taken when
// every other key expires before it. A log taken in place of a shorter one
// makes room as a growing log does.
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
	if _, pending := s.changed[rec.Key]; ent == nil && pending {
		// Gone from memory since the last flush (deleted, expired or
		// evicted while the load waited for the store): memory's state is
		// the newer, and the flush deletes the copy.
		return false
	}
	switch {
	case ent == nil:
		cost := keyCost(rec.Family, len(rec.Key))
		if rec.Family == FamilySW && s.budget > 0 {
			// A log may outgrow the whole budget in memory, which keeps
			// its key, alone, over it (makeRoomFor): read back, such a
			// key needs every other key evicted, as it had them then.
			cost = max(cost, min(cost+restoredBytes(rec.Log, rec.Quantities), s.budget))
		}
		if !s.makeRoom(cost, rec.ExpireAtMs, nowMs) {
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
		return s.merge(ent, rec, nowMs)
	}
	s.take(ent, rec, nowMs)
	return true
}

// wellFormed reports whether the record's state can be taken as it is.
func (rec *Record) wellFormed() bool {
	switch rec.Family {
	case FamilyCL, FamilySWC, FamilyFW, FamilyLB:
		return true
	case FamilySW:
		return len(rec.Log) > 0 && len(rec.Log) == len(rec.Quantities)
	}
	return false
}

// take gives ent the record's state, replacing its own.
func (s *shard) take(ent *entry, rec Record, nowMs int64) {
	switch rec.Family {
	case FamilyCL:
		ent.state = rec.TAT
	case FamilyLB:
		ent.state = uint64(rec.Tail)
	case FamilySWC, FamilyFW:
		*s.counter(ent) = counter{start: rec.Start, cur: rec.Cur, prev: rec.Prev}
	case FamilySW:
		l := s.log(ent)
		before := l.bytes()
		s.logs.restore(l, rec.Log, rec.Quantities)
		if grew := l.bytes() - before; grew != 0 {
			s.used.Add(grew)
			if grew > 0 {
				// A log that replaces a shorter one makes room as a
				// growing log does; a new key's room is made already.
				s.makeRoomFor(ent, nowMs)
			}
		}
	}
}

// merge merges rec into ent, a live key of the same family, as Restore
// describes, and reports whether anything of rec was taken.
func (s *shard) merge(ent *entry, rec Record, nowMs int64) bool {
	taken, kept := false, false // rec's state taken; memory's state kept
	switch rec.Family {
	case FamilyCL:
		taken = rec.TAT > ent.tat()
		kept = !taken
	case FamilyLB:
		taken = rec.Tail > ent.tail()
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
		taken = total > l.total || total == l.total && rec.Log[len(rec.Log)-1] > l.newest(s.logs.ring(l))
		kept = !taken
	}
	if kept {
		s.markChanged(s.name(ent))
	}
	if taken {
		s.setExpiry(ent, rec.ExpireAtMs)
		s.take(ent, rec, nowMs)
	}
	return taken
}
