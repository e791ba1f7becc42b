package engine

import (
	"sync/atomic"
	"time"
)

// ManualClock is a clock that moves only when told, for running an engine
// on simulated time (Options.Now = c.Now): tests, and replaying traffic. It
// is safe for concurrent use.
type ManualClock struct {
	ns atomic.Int64 // nanoseconds since the Unix epoch
}

// NewManualClock returns a clock that reads t until it is moved.
func NewManualClock(t time.Time) *ManualClock {
	c := &ManualClock{}
	c.Set(t)
	return c
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Advance moves the clock on by d.
func (c *ManualClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }
