package persist

import (
	"hash/maphash"
	"sync"

	"github.com/cellserver/cellserver/engine"
)

// lane is one batcher: the operations on its share of the keys (by the
// hash of an operation's first key), its value cache and its rounds' room.
// Each lane has at most one round trip on the wire, and the lanes' round
// trips overlap: while the store works on one lane's round, cellserver
// decides another's, so that neither waits on the other. A key is always
// decided in the same lane, but for the other keys of a THROTTLE.ALL:
// were two lanes to decide one key at once, its compare-and-set would
// conflict and the later operation would be decided again, never twice on
// one value.
type lane struct {
	s *Shared

	mu       sync.Mutex // guards queue, dropKeys, dropAll, closed
	queue    []*sharedOp
	dropKeys []string // keys to drop from the value cache
	dropAll  bool
	closed   bool

	wake chan struct{} // an op was queued, or keys dropped (capacity 1)
	up   chan struct{} // the prober reached the store (capacity 1)

	// cache is the value cache of the lane's keys; bufs the rounds' room.
	// Both are owned by the lane's goroutine.
	cache *valueCache
	bufs  roundBufs
}

// defaultLanes is the number of lanes: two rounds on the wire, one being
// decided while the store runs the other.
const defaultLanes = 2

func newLane(s *Shared, cacheKeys int) *lane {
	return &lane{
		s:     s,
		wake:  make(chan struct{}, 1),
		up:    make(chan struct{}, 1),
		cache: newValueCache(cacheKeys),
	}
}

// laneOf returns the lane that decides op.
func (s *Shared) laneOf(op *sharedOp) *lane {
	if len(s.lanes) == 1 {
		return s.lanes[0]
	}
	return s.lanes[maphash.String(s.seed, op.keys[0])%uint64(len(s.lanes))]
}

// enqueue queues op for its lane, unless the lane is closed.
func (l *lane) enqueue(op *sharedOp) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.queue = append(l.queue, op)
	l.mu.Unlock()
	l.poke()
	return true
}

// poke wakes the lane's goroutine.
func (l *lane) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// close makes the lane refuse operations from now on.
func (l *lane) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// drop forgets keys (all of them with all) from the value cache, at the
// lane's next round.
func (l *lane) drop(keys []string, all bool) {
	l.mu.Lock()
	l.dropKeys = append(l.dropKeys, keys...)
	l.dropAll = l.dropAll || all
	l.mu.Unlock()
	l.poke()
}

// run is the lane's batcher: it takes every queued operation, decides them
// on the cached values, and sends the compare-and-sets in one round trip;
// the operations queued meanwhile make the next batch. Operations whose
// compare-and-set conflicted are decided again, on the values the store
// returned, in the round trip that follows at once.
func (l *lane) run() {
	s := l.s
	defer s.wg.Done()
	var retry []*sharedOp
	for {
		if len(retry) == 0 {
			select {
			case <-l.wake:
			case <-l.up:
				l.storeUp()
				continue
			case <-s.stop:
				l.drain(nil)
				return
			}
		}
		select {
		case <-s.stop:
			l.drain(retry)
			return
		case <-l.up:
			l.storeUp()
		default:
		}
		l.mu.Lock()
		ops := append(retry, l.queue...)
		l.queue = nil
		drop, all := l.dropKeys, l.dropAll
		l.dropKeys, l.dropAll = nil, false
		l.mu.Unlock()
		retry = nil
		if pubs := s.takePublishes(); len(pubs) > 0 && !s.down.Load() {
			s.publish(pubs)
		}
		if all {
			l.cache.reset()
		}
		for _, k := range drop {
			l.cache.drop(k)
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
		for _, op := range ops {
			if now > op.deadline {
				s.timedOut(op)
				s.release(op)
				continue
			}
			live = append(live, op)
		}
		if len(live) > 0 {
			retry = l.round(live)
			// The round is over: what it answered, nothing refers to.
			for _, op := range live {
				if op.answered {
					s.release(op)
				}
			}
		}
	}
}

// storeUp is the lane's step when the store answers again: the store's
// state wins, so the lane's value cache is emptied, and the first lane
// there empties the deny cache and the local engine.
func (l *lane) storeUp() {
	s := l.s
	l.cache.reset()
	if !s.down.CompareAndSwap(true, false) {
		return
	}
	s.deny.clear()
	s.opts.Local.Flush(nil)
	s.log.Info("shared store back: deciding in the store again")
}

// drain answers the operations left at Close.
func (l *lane) drain(retry []*sharedOp) {
	s := l.s
	l.mu.Lock()
	ops := append(retry, l.queue...)
	l.queue = nil
	l.mu.Unlock()
	for _, op := range ops {
		if s.opts.Fallback == FallbackLocal {
			s.fallback(op)
		} else {
			op.finish(engine.Decision{}, ErrStoreUnavailable)
		}
	}
}
