package persist

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// leaseClock is a store (a miniredis) and the leases' clock, which step
// moves on together.
type leaseClock struct {
	m   *miniredis.Miniredis
	mu  sync.Mutex
	now time.Time
}

func newLeaseClock(t *testing.T) *leaseClock {
	c := &leaseClock{m: miniredis.RunT(t), now: time.Now()}
	c.m.SetTime(c.now)
	return c
}

func (c *leaseClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// step moves the store's clock and the leases' on by d.
func (c *leaseClock) step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	c.m.SetTime(c.Now())
	c.m.FastForward(d)
}

// lease starts a lease under prefix on the store, at the clock.
func (c *leaseClock) lease(t *testing.T, prefix string, log *logBuffer) *Lease {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: c.m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	l := startLease(client, prefix, log.logger(), c.Now)
	// Its goroutine stops after its first look: the test looks from then
	// on, in order with its clock's steps.
	l.once.Do(func() { close(l.stop) })
	<-l.done
	return l
}

// TestLeaseSecondWriter: a second write-behind instance on the same store
// and prefix is told, once it has seen the first renew its lease, in one
// warning naming shared mode; one on another prefix is not; once the
// first stops, the second takes the lease.
func TestLeaseSecondWriter(t *testing.T) {
	c := newLeaseClock(t)
	var logs1, logs2, logs3 logBuffer
	first := c.lease(t, "app:", &logs1)
	second := c.lease(t, "app:", &logs2)
	other := c.lease(t, "other:", &logs3)
	defer second.Close()
	defer other.Close()
	for range 3 { // every look: the first renews, the others look
		c.step(leaseTTL / 3)
		first.check()
		second.check()
		other.check()
	}
	if first.Contested() {
		t.Error("the first writer sees a contest")
	}
	if !second.Contested() {
		t.Error("the second writer on the same prefix does not see the first")
	}
	if !strings.Contains(logs2.String(), "--backing-mode shared") || strings.Count(logs2.String(), "level=WARN") != 1 {
		t.Errorf("the second writer's log should warn once, naming shared mode:\n%s", logs2.String())
	}
	if other.Contested() || strings.Contains(logs3.String(), "WARN") {
		t.Errorf("a writer on another prefix is warned:\n%s", logs3.String())
	}
	if strings.Contains(logs1.String(), "WARN") {
		t.Errorf("the first writer is warned:\n%s", logs1.String())
	}

	first.Close()
	second.check()
	if second.Contested() {
		t.Error("the lease is not taken over once the first writer has stopped")
	}
}

// TestLeaseRestartWarnsNotAboutItself: an instance restarted (a crash, a
// pod's restart) finds the lease its old process left, which nobody
// renews: it warns of nothing, and takes the lease once it runs out.
func TestLeaseRestartWarnsNotAboutItself(t *testing.T) {
	c := newLeaseClock(t)
	m := c.m
	var logs1, logs2 logBuffer
	old := c.lease(t, "app:", &logs1)
	_ = old // dies: its lease, never freed, is left to run out
	restarted := c.lease(t, "app:", &logs2)
	defer restarted.Close()
	for range 4 {
		c.step(leaseTTL / 3)
		restarted.check()
	}
	if restarted.Contested() || strings.Contains(logs2.String(), "WARN") {
		t.Errorf("the restarted instance warns about its old lease:\n%s", logs2.String())
	}
	if got := m.Keys(); len(got) != 1 || !m.Exists("app:"+LeaseKey) {
		t.Fatalf("keys %q", got)
	}
	if v, _ := m.Get("app:" + LeaseKey); v != restarted.id {
		t.Errorf("the lease is %q once the old one ran out, want the restarted instance's %q", v, restarted.id)
	}
}
