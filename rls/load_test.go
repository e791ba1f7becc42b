package rls

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/cellserver/cellserver/engine"
)

// The load benchmarks measure one in-memory cellserver's decisions per
// second and their p99 latency, over RLS (gRPC) and, for comparison, over
// the Redis protocol (CL.THROTTLE) with the same limit, from loadCallers
// concurrent callers on 127.0.0.1 (client and server share the machine's
// CPUs). Run them with
//
//	go test -run '^$' -bench 'Parallel$' -benchtime 5s -count 5 ./rls/
//
// Every call is admitted (the limit is far above the load) and counts: a
// decision is one recorded hit on one of loadKeys keys.

const (
	loadCallers = 50
	loadKeys    = 1000
	loadLimit   = 1_000_000_000 // per minute
)

// loadLimits is one GCRA limit per user value, as CL.THROTTLE's
// "CL.THROTTLE <key> loadLimit-1 loadLimit 60".
func loadLimits() testMatcher {
	return testMatcher{{"load", []Entry{{"user", ""}}, Limit{Name: "load", RequestsPerUnit: loadLimit,
		Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE, MetricKey: "load",
		Rule: engine.Rule{Family: engine.FamilyCL, GCRA: engine.GCRAQuota{MaxBurst: loadLimit - 1, Count: loadLimit, Period: 60}}}}}
}

// runLoad calls call b.N times from loadCallers goroutines, caller g with
// key numbers g, g+loadCallers, ... in turn, and reports decisions/s and
// the p99 latency in microseconds.
func runLoad(b *testing.B, call func(key int) error) {
	b.Helper()
	b.SetParallelism((loadCallers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var (
		mu        sync.Mutex
		latencies []time.Duration
		callers   atomic.Int64
	)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		g := int(callers.Add(1) - 1)
		own := make([]time.Duration, 0, 1024)
		for i := 0; pb.Next(); i++ {
			t0 := time.Now()
			if err := call((g + i*loadCallers) % loadKeys); err != nil {
				b.Error(err)
				return
			}
			own = append(own, time.Since(t0))
		}
		mu.Lock()
		latencies = append(latencies, own...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	p99 := latencies[(len(latencies)*99)/100]
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(p99.Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(callers.Load()), "callers")
}

// BenchmarkShouldRateLimitParallel: RLS over one gRPC connection (HTTP/2,
// as Envoy multiplexes), loadCallers concurrent streams.
func BenchmarkShouldRateLimitParallel(b *testing.B) {
	ts := startService(b, Options{Limits: loadLimits()})
	reqs := make([]*rlsv3.RateLimitRequest, loadKeys)
	for i := range reqs {
		reqs[i] = &rlsv3.RateLimitRequest{Domain: "load", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", fmt.Sprint("u", i))}}
	}
	ctx := context.Background()
	runLoad(b, func(key int) error {
		resp, err := ts.client.ShouldRateLimit(ctx, reqs[key])
		if err == nil && resp.OverallCode != ok {
			err = fmt.Errorf("refused: %v", resp)
		}
		return err
	})
}

// BenchmarkCLThrottleParallel: the same limit through CL.THROTTLE over the
// Redis protocol, one connection per caller.
func BenchmarkCLThrottleParallel(b *testing.B) {
	ts := startService(b, Options{Limits: loadLimits()})
	rdb := serveRESP(b, ts)
	opts := *rdb.Options()
	opts.PoolSize, opts.MinIdleConns = loadCallers, loadCallers
	rdb = redis.NewClient(&opts)
	b.Cleanup(func() { rdb.Close() })
	keys := make([]string, loadKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("rls:load|user=u", i)
	}
	ctx := context.Background()
	runLoad(b, func(key int) error {
		r, err := rdb.Do(ctx, "CL.THROTTLE", keys[key], loadLimit-1, loadLimit, 60).Int64Slice()
		if err == nil && r[0] != 0 {
			err = fmt.Errorf("refused: %v", r)
		}
		return err
	})
}
