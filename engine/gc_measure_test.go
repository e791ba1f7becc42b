//go:build measure

package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestKeyspaceGCCost measures what a keyspace of 10 million CL keys costs
// the garbage collector: the wall time of a forced collection and the
// pause and heap figures around it, next to the same for an empty engine.
// It logs and asserts nothing about time; run it with the collector's own
// trace for the mark phase's figures:
//
//	GODEBUG=gctrace=1 go test -tags measure -count=1 -v -run TestKeyspaceGCCost ./engine/
func TestKeyspaceGCCost(t *testing.T) {
	empty := New(Options{SweepInterval: -1})
	defer empty.Close()
	t.Logf("empty engine:  %s", gcCost())
	const n = 10_000_000
	c := NewManualClock(time.Unix(0, start))
	e := New(Options{Now: c.Now, SweepInterval: -1})
	defer e.Close()
	q := GCRAQuota{MaxBurst: 1_000, Count: 1_000, Period: 3600}
	key := make([]byte, 0, 16)
	for i := range n {
		key = fmt.Appendf(key[:0], "key:%012d", i)
		if _, err := e.Throttle(nil, key, q, 1); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d CL keys: %s", n, gcCost())
	runtime.KeepAlive(e)
}

// gcCost forces five collections and reports the median wall time of one,
// the stop-the-world pause they added, and the heap they found.
func gcCost() string {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	walls := make([]time.Duration, 5)
	for i := range walls {
		t0 := time.Now()
		runtime.GC()
		walls[i] = time.Since(t0)
	}
	runtime.ReadMemStats(&after)
	slices.Sort(walls)
	return fmt.Sprintf("runtime.GC() median %v (min %v, max %v), pause %v per GC, heap %d MB in %d objects",
		walls[2], walls[0], walls[4], time.Duration(after.PauseTotalNs-before.PauseTotalNs)/5,
		after.HeapAlloc>>20, after.HeapObjects)
}
