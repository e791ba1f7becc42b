package persist

import (
	"sync"
	"sync/atomic"
	"time"
)

// clockWindow is how many recent round trips the clock keeps samples of.
const clockWindow = 16

// sharedClock estimates the store's clock from the local monotonic clock:
// each round trip's reply carries the store's TIME, and of the recent
// samples the one with the smallest round trip gives the offset, its half
// round trip the error bound. It is safe for concurrent use.
type sharedClock struct {
	base time.Time // the monotonic origin of local()

	mu      sync.Mutex // guards samples, next; serialises offset's and bound's stores
	samples [clockWindow]clockSample
	next    int
	// offset and bound are read without the lock, by every decision:
	// offset is stored before bound, so a bound of 0 or more comes with
	// its offset.
	offset atomic.Int64 // store time − local(), ns
	bound  atomic.Int64 // ns; -1 before the first sample
	// last is the latest time at has given, ns since the epoch.
	last atomic.Int64
}

// clockSample is one round trip: the store's time minus the local clock at
// the round trip's middle, and the round trip's length.
type clockSample struct {
	offset, rtt int64
	ok          bool
}

func newSharedClock() *sharedClock {
	c := &sharedClock{base: time.Now()}
	c.bound.Store(-1)
	return c
}

// local is the monotonic clock, ns since base.
func (c *sharedClock) local() time.Duration { return time.Since(c.base) }

// sample adds a round trip sent and received at those local times, whose
// reply held the store's time storeNs.
func (c *sharedClock) sample(sent, recv time.Duration, storeNs int64) {
	rtt := int64(recv - sent)
	s := clockSample{offset: storeNs - int64(sent) - rtt/2, rtt: rtt, ok: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.samples[c.next] = s
	c.next = (c.next + 1) % clockWindow
	best := s
	for _, x := range c.samples {
		if x.ok && x.rtt < best.rtt {
			best = x
		}
	}
	// TIME has microseconds: the bound is never below one.
	c.offset.Store(best.offset)
	c.bound.Store(best.rtt/2 + 1000)
}

// forget drops the samples, keeping the offset and bound they gave until
// the next sample replaces them: the store came back, maybe a failover's
// other server, whose clock the old samples, some with a shorter round
// trip, would go on standing for.
func (c *sharedClock) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.samples[:])
	c.next = 0
}

// now is the store's time as estimated, ns since the epoch; the local wall
// clock before the first sample.
func (c *sharedClock) now() int64 { return c.at(c.local()) }

// at is now when local() is l. It never goes back by a step within the
// clock's error (twice its bound, at least a millisecond): a new sample,
// from a faster round trip, may set the estimate back by that much, and a
// decision made after another on the same key at an earlier time would
// refuse at the edge of a burst what it admits (a GCRA key's TAT would lie
// further ahead). Until the estimate passes the latest time given, that
// time is given again. A larger step back (a failover's server, whose
// clock is behind) is taken as it is.
func (c *sharedClock) at(l time.Duration) int64 {
	b := c.bound.Load()
	t := int64(l) + c.offset.Load()
	if b < 0 {
		t = c.base.UnixNano() + int64(l)
	}
	hold := max(2*b, int64(time.Millisecond))
	for {
		last := c.last.Load()
		if t < last && last-t <= hold {
			return last
		}
		if c.last.CompareAndSwap(last, t) {
			return t
		}
	}
}

// offsetAndBound returns the store's clock minus the local wall clock, and
// the error bound (ns; -1 before the first sample).
func (c *sharedClock) offsetAndBound() (offset, bound int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bound.Load()
	if b < 0 {
		return 0, -1
	}
	return c.offset.Load() - c.base.UnixNano(), b
}

// boundNs is the error bound, 0 before the first sample.
func (c *sharedClock) boundNs() int64 {
	_, b := c.offsetAndBound()
	return max(b, 0)
}
