//go:build measure

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// TestProfileUnderLoad profiles cellserver, served in this process as
// cmd/cellserver serves it, while redis-benchmark drives it: a CPU profile
// per scenario, the allocations per command (from runtime.MemStats), and
// the allocation, mutex and block profiles of the whole run. It runs only
// when BENCH_PROFILE_DIR names the directory to write the profiles to
// (BENCH_PROFILE_N sets the requests per scenario, 1,000,000 by default):
//
//	BENCH_PROFILE_DIR=/tmp/prof go test -tags measure -run ProfileUnderLoad -v -timeout 30m ./bench/
//	go tool pprof -top /tmp/prof/cpu-CL.THROTTLE-P16.pprof
//
// It asserts nothing about speed; it records what the profiles show.
func TestProfileUnderLoad(t *testing.T) {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		t.Skip("set BENCH_PROFILE_DIR to profile cellserver under redis-benchmark")
	}
	rb := needTool(t, "redis-benchmark")
	requests := 1_000_000
	if s := os.Getenv("BENCH_PROFILE_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("BENCH_PROFILE_N=%q", s)
		}
		requests = n
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(100_000) // one sample per 100 µs blocked
	defer runtime.SetMutexProfileFraction(0)
	defer runtime.SetBlockProfileRate(0)

	addr := startTestCellserver(t)
	for _, sc := range []struct {
		name     string
		pipeline int
		command  []string
	}{
		{"CL.THROTTLE-P16", 16, []string{"CL.THROTTLE", "cl:__rand_int__", "15", "30", "60"}},
		{"CL.THROTTLE-P1", 1, []string{"CL.THROTTLE", "cl:__rand_int__", "15", "30", "60"}},
		{"SW.THROTTLE-P16", 16, []string{"SW.THROTTLE", "sw:__rand_int__", "100", "60"}},
		{"PING-P16", 16, []string{"PING"}},
	} {
		f, err := os.Create(filepath.Join(dir, "cpu-"+sc.name+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		fig, err := runBenchmark(context.Background(), rb, benchSpec{
			addr: addr, clients: 50, pipeline: sc.pipeline, requests: requests, keyspace: 100_000, command: sc.command,
		})
		pprof.StopCPUProfile()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		n := float64(requests)
		t.Logf("%-16s %9s rps  p50 %s  p99 %s ms  %.2f allocs and %.0f bytes per command, %d GCs, %v paused",
			sc.name, formatCount(fig.rps), formatMs(fig.p50), formatMs(fig.p99),
			float64(after.Mallocs-before.Mallocs)/n, float64(after.TotalAlloc-before.TotalAlloc)/n,
			after.NumGC-before.NumGC, time.Duration(after.PauseTotalNs-before.PauseTotalNs))
	}
	for _, name := range []string{"allocs", "mutex", "block"} {
		f, err := os.Create(filepath.Join(dir, name+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	fmt.Fprintf(os.Stderr, "profiles in %s\n", dir)
}

// BenchmarkEngineThrottle is CL.THROTTLE's engine call alone, on a random
// existing key among keys: how its cost grows with the keyspace (the map,
// slab and expiry index outgrowing the CPU's caches), with no network.
//
//	go test -run '^$' -bench EngineThrottle -benchmem ./bench/
func BenchmarkEngineThrottle(b *testing.B) {
	for _, keys := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			eng := engine.New(engine.Options{})
			defer eng.Close()
			q := engine.GCRAQuota{MaxBurst: 1 << 20, Count: 1, Period: 3600} // nothing is limited or expires
			names := make([][]byte, keys)
			for i := range names {
				names[i] = []byte(memoryKey(i))
				if _, err := eng.Throttle(nil, names[i], q, 1); err != nil {
					b.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			order := make([]int, 1<<16)
			for i := range order {
				order[i] = rng.IntN(keys)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := eng.Throttle(nil, names[order[i&(len(order)-1)]], q, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
