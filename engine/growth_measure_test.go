//go:build measure && linux

package engine

import (
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestGrowthBatchCost measures what growing the keyspace to 10 million CL
// keys costs the work an event loop does for one pipeline of new keys: it
// times batches of 500 new keys, by the calling thread's CPU time (which a
// busy machine's other processes do not inflate) and by the wall clock,
// and reports them per tenth of the growth beside a baseline of batches
// rewriting 100,000 keys. Copies and rehashes that every shard makes at the
// same time show as batches far slower than the baseline:
//
//	go test -tags measure -count=1 -v -run TestGrowthBatchCost ./engine/
//
// It asserts nothing about time.
func TestGrowthBatchCost(t *testing.T) {
	const total, baselineKeys, batch, tenths = 10_000_000, 100_000, 500, 10
	c := NewManualClock(time.Unix(0, start))
	e := New(Options{Now: c.Now, SweepInterval: -1})
	defer e.Close()
	q := GCRAQuota{MaxBurst: 1_000, Count: 1_000, Period: 3600}
	key := make([]byte, 0, 16)
	// The clock moves as it would with cellserver taking 300,000 new keys a
	// second, so that the keys spread over expiry buckets as they do there.
	run := func(prefix string, from, to int) (cpu, wall time.Duration) {
		c.Advance(time.Duration(to-from) * time.Second / 300_000)
		c0, w0 := threadCPU(t), time.Now()
		for i := from; i < to; i++ {
			key = fmt.Appendf(key[:0], "%s:%012d", prefix, i)
			if _, err := e.Throttle(nil, key, q, 1); err != nil {
				t.Fatal(err)
			}
		}
		return threadCPU(t) - c0, time.Since(w0)
	}
	// The thread must stay the same between two readings of its clock.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	run("b", 0, baselineKeys)
	var baseCPU, baseWall []time.Duration
	for i := 0; i < 2_000_000; i += batch {
		cpu, wall := run("b", i%baselineKeys, i%baselineKeys+batch)
		baseCPU, baseWall = append(baseCPU, cpu), append(baseWall, wall)
	}
	cpus, walls := make([][]time.Duration, tenths), make([][]time.Duration, tenths)
	for i := 0; i < total; i += batch {
		cpu, wall := run("g", i, i+batch)
		b := i * tenths / total
		cpus[b], walls[b] = append(cpus[b], cpu), append(walls[b], wall)
	}
	t.Logf("batches of %d CL.THROTTLE in 128 shards, µs: thread CPU time (wall time)", batch)
	t.Logf("%-28s %7s %14s %14s %14s %14s %9s", "keys", "batches", "p50", "p99", "p99.9", "max", "CPU s")
	row := func(label string, cpu, wall []time.Duration) {
		slices.Sort(cpu)
		slices.Sort(wall)
		var sum time.Duration
		for _, d := range cpu {
			sum += d
		}
		cell := func(p float64) string {
			i := min(int(float64(len(cpu))*p/100), len(cpu)-1)
			return fmt.Sprintf("%6d (%5d)", cpu[i].Microseconds(), wall[i].Microseconds())
		}
		t.Logf("%-28s %7d %14s %14s %14s %14s %9.2f", label, len(cpu), cell(50), cell(99), cell(99.9), cell(100), sum.Seconds())
	}
	row(fmt.Sprintf("baseline: %d rewritten", baselineKeys), baseCPU, baseWall)
	for b := range tenths {
		row(fmt.Sprintf("%d to %d new", total*b/tenths, total*(b+1)/tenths), cpus[b], walls[b])
	}
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU(t *testing.T) time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		t.Fatal(errno)
	}
	return time.Duration(ts.Nano())
}
