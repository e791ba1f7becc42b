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

// at is now when local() is l.
func (c *sharedClock) at(l time.Duration) int64 {
	if c.bound.Load() < 0 {
		return c.base.UnixNano() + int64(l)
	}
	return int64(l) + c.offset.Load()
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
