package engine

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures an Engine. The zero value works.
type Options struct {
	// Shards is the number of shards, rounded up to a power of two;
	// 0 means 128.
	Shards int
	// Now is the clock; nil means time.Now. Tests pass a fake clock.
	Now func() time.Time
	// SweepInterval is how often the background sweep removes expired keys;
	// 0 means 100ms, negative disables it (tests call Sweep).
	SweepInterval time.Duration
	// SweepBatch is how many expired keys a shard gives up per lock hold;
	// 0 means 256.
	SweepBatch int
	// TrackChanges makes the engine note which keys change, for a writer
	// that copies them to a backing store (Changes).
	TrackChanges bool
	// MaxMemory bounds the bytes the keyspace uses, as estimated by Used;
	// 0 means no limit. Each shard gets an equal share, so that making room
	// needs only the lock already held: a shard whose share is full makes
	// room for a new key, or for an SW key's growing log, by evicting its
	// keys that expire soonest (EvictedKeys counts them), and refuses, with
	// ErrOutOfMemory, a key bigger than the whole share.
	MaxMemory int64
}

// Engine is cellserver's keyspace: every key's rate-limit state, sharded,
// with expiry. It is safe for concurrent use.
type Engine struct {
	shards []*shard
	mask   uint64
	seed   maphash.Seed
	now    func() time.Time
	batch  int
	track  bool
	// maxMemory is Options.MaxMemory.
	maxMemory int64

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// New returns an Engine and starts its background sweep; Close stops it.
func New(opts Options) *Engine {
	n := 1
	for n < opts.Shards {
		n <<= 1
	}
	if opts.Shards == 0 {
		n = 128
	}
	e := &Engine{
		shards: make([]*shard, n),
		mask:   uint64(n - 1),
		seed:   maphash.MakeSeed(),
		now:    opts.Now,
		batch:  opts.SweepBatch,
		track:  opts.TrackChanges,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),

		maxMemory: max(opts.MaxMemory, 0),
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.batch <= 0 {
		e.batch = 256
	}
	budget := int64(0)
	if e.maxMemory > 0 {
		budget = max(e.maxMemory/int64(n), 1)
	}
	for i := range e.shards {
		e.shards[i] = newShard(e.seed, opts.TrackChanges, budget, phaseOf(i, n))
	}
	interval := opts.SweepInterval
	if interval == 0 {
		interval = 100 * time.Millisecond
	}
	if interval < 0 {
		close(e.done)
		return e
	}
	go e.sweepLoop(interval)
	return e
}

// Close stops the background sweep and waits for it. The keyspace stays
// usable.
func (e *Engine) Close() {
	e.stopOnce.Do(func() { close(e.stop) })
	<-e.done
}

func (e *Engine) sweepLoop(interval time.Duration) {
	defer close(e.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.Sweep()
		}
	}
}

// Sweep removes the keys that have expired by now, one bounded batch per
// shard lock hold, and returns how many it removed.
func (e *Engine) Sweep() int {
	total := 0
	for _, s := range e.shards {
		var cur sweepCursor
		for {
			nowMs := e.nowMs()
			s.mu.Lock()
			n, more := s.sweep(nowMs, e.batch, &cur)
			s.expired.Add(int64(n))
			s.mu.Unlock()
			total += n
			if !more {
				break
			}
		}
	}
	return total
}

// ExpiredKeys is how many keys the sweep (or an eviction) has removed
// because they had expired.
func (e *Engine) ExpiredKeys() int64 {
	return e.sum(func(s *shard) *atomic.Int64 { return &s.expired })
}

// sum adds up one of the shards' counters, which field picks, without
// taking their locks.
func (e *Engine) sum(field func(*shard) *atomic.Int64) int64 {
	n := int64(0)
	for _, s := range e.shards {
		n += field(s).Load()
	}
	return n
}

// Now returns the engine's clock.
func (e *Engine) Now() time.Time { return e.now() }

func (e *Engine) nowMs() int64 { return e.now().UnixMilli() }

// shardIndex returns the index of the shard that holds key.
func (e *Engine) shardIndex(key []byte) int {
	return int(maphash.Bytes(e.seed, key) & e.mask)
}

// acquire returns key's shard, locked unless tx already holds it; unlock
// reports whether the caller must unlock it.
func (e *Engine) acquire(tx *Txn, key []byte) (s *shard, unlock bool) {
	i := e.shardIndex(key)
	s = e.shards[i]
	if tx != nil {
		tx.mustHold(i)
		return s, false
	}
	s.mu.Lock()
	return s, true
}
