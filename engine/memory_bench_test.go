package engine

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkThrottleNewKeyEvicting: under a full MaxMemory, each new key
// evicts the one that expires soonest. 100,000 keys fill the budget, their
// lives spread over a minute, as steady traffic leaves them.
func BenchmarkThrottleNewKeyEvicting(b *testing.B) {
	const held = 100_000
	c := NewManualClock(time.Unix(0, start))
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 128, MaxMemory: held * keyCost(FamilyCL, 16)})
	defer e.Close()
	q := GCRAQuota{MaxBurst: 100, Count: 1, Period: 60} // a fresh key lives a minute
	key := make([]byte, 0, 16)
	i := 0
	next := func() {
		key = strconv.AppendInt(append(key[:0], "key:"...), 100_000_000_000+int64(i), 10) // 16 bytes
		i++
		if i%(held/60_000+1) == 0 {
			c.Advance(time.Millisecond) // keys created over a minute
		}
		e.Throttle(nil, key, q, 1)
	}
	for range 2 * held {
		next()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		next()
	}
	b.StopTimer()
	if e.EvictedKeys() == 0 {
		b.Fatal("nothing evicted")
	}
}
