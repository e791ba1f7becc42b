package persist

import (
	"strings"
	"sync"

	"github.com/cellserver/cellserver/engine"
)

// batcher decides the queued operations in batches, one round trip to the
// store at a time: it owns the value cache and the rounds' room.
type batcher struct {
	s *Shared

	mu       sync.Mutex // guards queue, dropKeys, dropAll, closed
	queue    []*sharedOp
	dropKeys []string // keys to drop from the value cache
	dropAll  bool
	closed   bool

	wake chan struct{} // an op was queued, or keys dropped (capacity 1)
	up   chan struct{} // the prober reached the store (capacity 1)

	// Owned by the batcher's goroutine: the value cache; the rounds' room;
	// the array the queue had before the last round took it (spare), and
	// the round's list of operations.
	cache *valueCache
	bufs  roundBufs
	spare []*sharedOp
	ops   []*sharedOp
	// done are the ops the last round answered, to release.
	done []*sharedOp
	// admitted are the keys of a round's admissions, whose remembered
	// refusals the round drops before it answers its ops; settled are the
	// groups written, whose ops it then answers (answerSettled).
	admitted []string
	settled  []*group
	// denyEpoch is the deny cache's epoch when the round was sent: its
	// refusals are remembered only if no key was dropped since.
	denyEpoch uint64
	// touched keeps what the first readings of the entries give (groupOps,
	// tally), so that the reads are not optimized away.
	touched uint64
}

func newBatcher(s *Shared, cacheKeys int) *batcher {
	return &batcher{
		s:     s,
		wake:  make(chan struct{}, 1),
		up:    make(chan struct{}, 1),
		cache: newValueCache(cacheKeys),
	}
}

// enqueue queues op, unless the batcher is closed.
func (b *batcher) enqueue(op *sharedOp) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	b.queue = append(b.queue, op)
	b.mu.Unlock()
	b.poke()
	return true
}

// poke wakes the batcher's goroutine.
func (b *batcher) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// close makes the batcher refuse operations from now on.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// drop forgets keys (all of them with all) from the value cache, at the
// batcher's next round.
func (b *batcher) drop(keys []string, all bool) {
	b.mu.Lock()
	for _, k := range keys {
		// Kept until the next round: an op's key is a view of bytes it
		// reuses once released.
		b.dropKeys = append(b.dropKeys, strings.Clone(k))
	}
	b.dropAll = b.dropAll || all
	b.mu.Unlock()
	b.poke()
}

// run is the batcher's goroutine: it takes every queued operation, decides them
// on the cached values, and sends the compare-and-sets in one round trip;
// the operations queued meanwhile make the next batch. Operations whose
// compare-and-set conflicted are decided again, on the values the store
// returned, in the round trip that follows at once.
func (b *batcher) run() {
	s := b.s
	defer s.wg.Done()
	var retry []*sharedOp
	for {
		if len(retry) == 0 {
			select {
			case <-b.wake:
			default:
				// Nothing queued: the batcher waits, having released
				// the last round's ops.
				b.releaseDone()
				select {
				case <-b.wake:
				case <-b.up:
					b.storeUp()
					continue
				case <-s.stop:
					b.drain(nil)
					return
				}
			}
		}
		select {
		case <-s.stop:
			b.drain(retry)
			return
		case <-b.up:
			b.storeUp()
		default:
		}
		// The queue's array and the round's list of operations are kept
		// from one round to the next, not regrown.
		b.mu.Lock()
		queued := b.queue
		b.queue = b.spare[:0]
		drop, all := b.dropKeys, b.dropAll
		b.dropKeys, b.dropAll = nil, false
		b.mu.Unlock()
		ops := append(append(b.ops[:0], retry...), queued...)
		clear(queued)
		b.spare, b.ops, retry = queued, ops, nil
		if all {
			b.cache.reset()
		}
		for _, k := range drop {
			b.cache.drop(k)
		}
		if s.down.Load() {
			for _, op := range ops {
				s.fallback(op)
				s.release(op)
			}
			continue
		}
		// An op retried past its deadline waits no more.
		live := ops[:0]
		now := s.clock.local()
		cluster := s.mode.Load().cluster
		for _, op := range ops {
			if now > op.deadline {
				s.timedOut(op)
				s.release(op)
				continue
			}
			if cluster && len(op.keys) > 1 && crossSlot(op.keys) {
				// Queued before the store turned out to be a Redis
				// Cluster (Shared.ask), when its keys were not checked.
				op.finish(engine.Decision{}, ErrCrossSlot)
				s.release(op)
				continue
			}
			live = append(live, op)
		}
		if len(live) > 0 {
			retry = b.round(live)
			// The round is over: what it answered, nothing refers to.
			// They are released once the next round is sent (or the
			// batcher waits), not between the reply and the next round.
			for _, op := range live {
				if op.answered {
					b.done = append(b.done, op)
				}
			}
		}
	}
}

// releaseDone releases the ops the last round answered.
func (b *batcher) releaseDone() {
	for _, op := range b.done {
		b.s.release(op)
	}
	clear(b.done)
	b.done = b.done[:0]
}

// storeUp is the batcher's step when the store answers again: the store's
// state wins, so the value cache, the deny cache and the local engine are
// emptied, and its clock is measured anew.
func (b *batcher) storeUp() {
	s := b.s
	if !s.down.Load() {
		return
	}
	b.cache.reset()
	s.deny.clear()
	s.opts.Local.Flush(nil)
	s.clock.forget()
	s.down.Store(false)
	s.pokePublisher() // the invalidations kept while it was down
	s.log.Info("shared store back: deciding in the store again")
}

// drain answers the operations left at Close.
func (b *batcher) drain(retry []*sharedOp) {
	s := b.s
	b.mu.Lock()
	ops := append(retry, b.queue...)
	b.queue = nil
	b.mu.Unlock()
	for _, op := range ops {
		if s.opts.Fallback == FallbackLocal {
			s.fallback(op)
		} else {
			op.finish(engine.Decision{}, ErrStoreUnavailable)
		}
	}
}
