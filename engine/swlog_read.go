package engine

// LogEntry is one request an SW key's log holds.
type LogEntry struct {
	At       int64 // arrival, nanoseconds since the Unix epoch
	Quantity uint32
}

// SWLog returns up to count (at least 1) of the requests key's sliding log
// holds, oldest first. With window > 0 only those a decision of that window
// at the clock's reading would count: a log keeps requests that left the
// window until the key's next decision drops them, and window 0 returns
// them too. A missing key gives none, a key of another family ErrWrongType.
// tx is nil outside a transaction.
func (e *Engine) SWLog(tx *Txn, key []byte, window int64, count int) ([]LogEntry, error) {
	s, unlock := e.acquire(tx, key)
	if unlock {
		defer s.mu.Unlock()
	}
	now := e.now()
	ent := s.lookup(key, now.UnixMilli())
	switch {
	case ent == nil:
		return nil, nil
	case ent.family() != FamilySW:
		return nil, ErrWrongType
	}
	l := s.log(ent)
	ring := s.logs.ring(l)
	get := func(i int) (int64, uint32) { return l.get(ring, i) }
	return windowLog(l.size, get, now.UnixNano(), window, count), nil
}

// RecordLog is SWLog of an SW record read elsewhere (a shared store), at
// now (nanoseconds since the epoch).
func RecordLog(rec *Record, now, window int64, count int) []LogEntry {
	n := min(len(rec.Log), len(rec.Quantities))
	return windowLog(n, func(i int) (int64, uint32) { return rec.Log[i], rec.Quantities[i] }, now, window, count)
}

// windowLog returns up to count of the n requests get reads, oldest first,
// skipping those that left a window ending at now as slidingLog drops them.
func windowLog(n int, get func(int) (int64, uint32), now, window int64, count int) []LogEntry {
	i := 0
	for window > 0 && i < n {
		if at, _ := get(i); at+window > now {
			break
		}
		i++
	}
	out := make([]LogEntry, 0, min(n-i, max(count, 0)))
	for ; i < n && len(out) < count; i++ {
		at, q := get(i)
		out = append(out, LogEntry{At: at, Quantity: q})
	}
	return out
}
