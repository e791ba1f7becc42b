package engine

import (
	"testing"
	"time"
)

// benchWindow runs rule r on an existing key, the clock moving step a call,
// and checks that the hot path allocates nothing once the key is warm.
func benchWindow(b *testing.B, f Family, q WindowQuota, step time.Duration) {
	now := epochDay
	e := New(Options{SweepInterval: -1, Now: func() time.Time { return time.Unix(0, now) }})
	defer e.Close()
	r := Rule{Key: []byte("user123"), Family: f, Window: q}
	// Warm the key up to its steady state: an SW log holding a window's
	// worth of requests.
	for range 2 * q.Window / int64(step) {
		now += int64(step)
		e.ThrottleWindow(nil, r, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		now += int64(step)
		if d, _ := e.ThrottleWindow(nil, r, 1); d.Limited {
			b.Fatal("limited")
		}
	}
}

// BenchmarkSlidingLog: an SW key holding 100 requests (one every 10ms in a
// 1s window): each call drops the oldest and records one.
func BenchmarkSlidingLog(b *testing.B) {
	benchWindow(b, FamilySW, WindowQuota{Limit: 1000, Window: int64(time.Second)}, 10*time.Millisecond)
}

// BenchmarkSlidingCounter: an SWC key, a call every microsecond.
func BenchmarkSlidingCounter(b *testing.B) {
	benchWindow(b, FamilySWC, WindowQuota{Limit: MaxWindowLimit, Window: int64(time.Second)}, time.Microsecond)
}

// BenchmarkFixedWindow: an FW key, a call every microsecond.
func BenchmarkFixedWindow(b *testing.B) {
	benchWindow(b, FamilyFW, WindowQuota{Limit: MaxWindowLimit, Window: int64(time.Second)}, time.Microsecond)
}

// TestWindowExistingKeyAllocs: deciding on an existing key of any window
// family allocates nothing (an SW log in its steady state included).
func TestWindowExistingKeyAllocs(t *testing.T) {
	for _, f := range []Family{FamilySW, FamilySWC, FamilyFW} {
		now := epochDay
		e := New(Options{SweepInterval: -1, Now: func() time.Time { return time.Unix(0, now) }})
		r := Rule{Key: []byte("k"), Family: f, Window: WindowQuota{Limit: 1000, Window: int64(time.Second)}}
		for range 200 {
			now += int64(10 * time.Millisecond)
			e.ThrottleWindow(nil, r, 1)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			now += int64(10 * time.Millisecond)
			e.ThrottleWindow(nil, r, 1)
			e.ThrottleWindow(nil, r, 0)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs a call on an existing key, want 0", f.Name(), allocs)
		}
		e.Close()
	}
}
