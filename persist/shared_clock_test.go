package persist

import (
	"testing"
	"time"
)

// TestSharedClockForget: the clock takes the offset of the fastest recent
// round trip, so a slower one from another server (a failover's) does not
// replace it; once the store comes back (forget), the first sample does,
// and until then the old offset stands.
func TestSharedClockForget(t *testing.T) {
	c := newSharedClock()
	const old, failover = int64(1_000_000), int64(50_000_000) // the store's clock minus ours, ns
	at := func(d time.Duration) int64 { return int64(d) }
	c.sample(0, 100*time.Microsecond, old+at(50*time.Microsecond))
	c.sample(time.Second, time.Second+time.Millisecond, failover+at(time.Second+500*time.Microsecond))
	if off, _ := c.offsetAndBound(); off != old-c.base.UnixNano() {
		t.Fatalf("before forget: offset %d, want the fastest round trip's", off+c.base.UnixNano())
	}
	c.forget()
	if off, _ := c.offsetAndBound(); off != old-c.base.UnixNano() {
		t.Fatalf("forget alone moved the offset to %d", off+c.base.UnixNano())
	}
	c.sample(2*time.Second, 2*time.Second+time.Millisecond, failover+at(2*time.Second+500*time.Microsecond))
	if off, _ := c.offsetAndBound(); off != failover-c.base.UnixNano() {
		t.Fatalf("after forget and a sample: offset %d, want %d", off+c.base.UnixNano(), failover)
	}
}

// TestSharedClockNeverStepsBack: a sample from a faster round trip that
// sets the estimate back by less than the clock's error does not set back
// the time decisions are made at (a decision after another on the same
// key would refuse at the edge of a burst what it admits); a failover's
// clock, far behind, is taken as it is.
func TestSharedClockNeverStepsBack(t *testing.T) {
	c := newSharedClock()
	const offset = int64(1_000_000_000) // the store's clock minus ours, ns
	l := c.local()
	c.sample(l, l+200*time.Microsecond, offset+int64(l)+int64(100*time.Microsecond))
	first := c.at(l + time.Millisecond)
	// A faster round trip whose offset is 60 µs less.
	c.sample(l, l+20*time.Microsecond, offset-60_000+int64(l)+int64(10*time.Microsecond))
	if got := c.at(l + time.Millisecond); got < first {
		t.Fatalf("the time went back by %d ns after a faster sample", first-got)
	}
	if got := c.at(l + time.Millisecond + 100*time.Microsecond); got != first+100_000-60_000 {
		t.Errorf("once past the time given: %d, want the new estimate %d", got, first+100_000-60_000)
	}
	c.forget()
	const failover = -int64(5 * time.Second)
	c.sample(l, l+20*time.Microsecond, offset+failover+int64(l)+int64(10*time.Microsecond))
	if got, want := c.at(l+2*time.Millisecond), offset+failover+int64(l)+int64(2*time.Millisecond); got != want {
		t.Errorf("after a failover's clock 5 s behind: %d, want %d (taken as it is)", got, want)
	}
}
