//go:build unix

package engine

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// benchKeys decides one request at a time on a random key among 100,000,
// the clock moving 10µs a call, as the server's load test drives it: most
// of what a call costs is then the cache misses of reaching a cold key's
// state, which a benchmark on one key never pays. Each key first gets a
// few requests, so that most calls find it; SW logs grow as they would
// (SW's B/op is that growth, a ring now and then, which allocs/op rounds
// down to 0).
// Besides the time a call takes it reports the process's CPU time a call
// (cpu-ns/op), which moves less with what else the machine runs.
func benchKeys(b *testing.B, f Family) {
	const n = 100_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%06d", i)
	}
	now := epochDay
	e := New(Options{SweepInterval: -1, Now: func() time.Time { return time.Unix(0, now) }})
	defer e.Close()
	gq := GCRAQuota{MaxBurst: 15, Count: 30, Period: 60}
	r := Rule{Family: f, Window: WindowQuota{Limit: 100, Window: int64(time.Minute)}}
	x := uint64(1)
	call := func() {
		x ^= x << 13 // xorshift: a key chosen at random, without a lock
		x ^= x >> 7
		x ^= x << 17
		now += int64(10 * time.Microsecond)
		key := keys[x%n]
		var err error
		if f == FamilyCL {
			_, err = e.Throttle(nil, key, gq, 1)
		} else {
			r.Key = key
			_, err = e.ThrottleWindow(nil, r, 1)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for range 3 * n {
		call()
	}
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time the process has used, user and system, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkKeys: each family on a random key among 100,000.
func BenchmarkKeys(b *testing.B) {
	for _, f := range []Family{FamilyCL, FamilySW, FamilySWC, FamilyFW} {
		b.Run(f.Name(), func(b *testing.B) { benchKeys(b, f) })
	}
}
