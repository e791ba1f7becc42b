package engine

import (
	"testing"
	"time"
)

// benchSWLog steps a sliding log alone, without a key or a lock: each step
// decides a request of qty, drops what left the window and records it.
func benchSWLog(b *testing.B, q WindowQuota, step time.Duration, qty int64) {
	ls, l := newSWLogs(nil, nil)
	now := epochDay
	next := func() {
		now += int64(step)
		d, v := slidingLog(now, l, ls.ring(l), q, qty)
		if d.Limited {
			b.Fatal("limited")
		}
		ls.apply(l, v, now, qty, q.Limit)
	}
	for range 2 * q.Window / int64(step) {
		next()
	}
	b.ReportAllocs()
	for b.Loop() {
		next()
	}
}

// BenchmarkSWLogStep: 100 requests of 1 held (one every 10ms in a 1s
// window), the compact form with no quantity bits.
func BenchmarkSWLogStep(b *testing.B) {
	benchSWLog(b, WindowQuota{Limit: 1_000, Window: int64(time.Second)}, 10*time.Millisecond, 1)
}

// BenchmarkSWLogStepWide: 96 requests of 2^17 held (one every 30 minutes
// in a 48-hour window), more than the compact form's offsets hold with
// that many quantity bits: the wide form.
func BenchmarkSWLogStepWide(b *testing.B) {
	benchSWLog(b, WindowQuota{Limit: MaxWindowLimit, Window: 48 * int64(time.Hour)}, 30*time.Minute, 1<<17)
}
