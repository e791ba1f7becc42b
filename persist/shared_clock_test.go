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
