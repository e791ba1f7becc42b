package engine

// Value is a copy of a key's state, for GET and TYPE.
type Value struct {
	Family Family
	// TAT is a CL key's theoretical arrival time in nanoseconds since the
	// Unix epoch, as redis-cell stores it.
	TAT uint64
}

// Get returns key's state, or false when it does not exist.
func (e *Engine) Get(tx *Txn, key []byte) (Value, bool) {
	s, unlock := e.acquire(tx, key)
	if unlock {
		defer s.mu.Unlock()
	}
	ent := s.lookup(key, e.nowMs())
	if ent == nil {
		return Value{}, false
	}
	return Value{Family: ent.family(), TAT: ent.tat()}, true
}

// Delete removes key and reports whether it existed.
func (e *Engine) Delete(tx *Txn, key []byte) bool {
	s, unlock := e.acquire(tx, key)
	if unlock {
		defer s.mu.Unlock()
	}
	return s.removeKey(key, e.nowMs())
}

// PTTL returns key's time to live in milliseconds, or -2 when it does not
// exist. (Every key expires, so Redis's -1 never appears.)
func (e *Engine) PTTL(tx *Txn, key []byte) int64 {
	s, unlock := e.acquire(tx, key)
	if unlock {
		defer s.mu.Unlock()
	}
	nowMs := e.nowMs()
	ent := s.lookup(key, nowMs)
	if ent == nil {
		return -2
	}
	return ent.expireAt - nowMs
}

// forEachShard runs fn on every shard with its lock held (or under tx,
// which must hold every shard).
func (e *Engine) forEachShard(tx *Txn, fn func(s *shard)) {
	if tx != nil && !tx.all {
		panic("engine: a keyspace-wide command in a transaction that does not hold every shard")
	}
	for _, s := range e.shards {
		if tx == nil {
			s.mu.Lock()
		}
		fn(s)
		if tx == nil {
			s.mu.Unlock()
		}
	}
}

// Len returns the number of live keys.
func (e *Engine) Len(tx *Txn) int {
	n := 0
	nowMs := e.nowMs()
	e.forEachShard(tx, func(s *shard) { n += s.live(nowMs) })
	return n
}

// Flush removes every key and returns how many live keys it removed.
func (e *Engine) Flush(tx *Txn) int {
	n := 0
	nowMs := e.nowMs()
	e.forEachShard(tx, func(s *shard) { n += s.flush(nowMs) })
	return n
}

// Scan calls fn for each live key of the shards from cursor on, shard by
// shard, until it has visited at least count keys, and returns the cursor to
// continue from (0 when done). A whole shard is visited under one lock, so a
// key that exists for a whole scan is reported exactly once.
func (e *Engine) Scan(tx *Txn, cursor uint64, count int, fn func(key string, f Family)) uint64 {
	if tx != nil && !tx.all {
		panic("engine: SCAN in a transaction that does not hold every shard")
	}
	visited := 0
	i := cursor
	for ; i < uint64(len(e.shards)) && visited < count; i++ {
		s := e.shards[i]
		if tx == nil {
			s.mu.Lock()
		}
		nowMs := e.nowMs()
		for j := range s.entries {
			ent := &s.entries[j]
			if ent.family() != FamilyNone && nowMs <= ent.expireAt {
				fn(s.name(ent), ent.family())
				visited++
			}
		}
		if tx == nil {
			s.mu.Unlock()
		}
	}
	if i >= uint64(len(e.shards)) {
		return 0
	}
	return i
}

// Shards returns the number of shards, the largest SCAN cursor plus one.
func (e *Engine) Shards() int { return len(e.shards) }

// Counts returns the number of live keys per family, for INFO and metrics.
// It reads the shards' counts and subtracts the expired keys the sweep has
// not removed yet, so its cost grows with those, not with the keyspace.
func (e *Engine) Counts(tx *Txn) map[Family]int {
	m := make(map[Family]int)
	nowMs := e.nowMs()
	e.forEachShard(tx, func(s *shard) {
		for f := range s.keys {
			m[Family(f)] += int(s.keys[f].Load())
		}
		s.eachExpired(nowMs, func(ent *entry) { m[ent.family()]-- })
	})
	for f, n := range m {
		if n == 0 {
			delete(m, f)
		}
	}
	return m
}
