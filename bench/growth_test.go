//go:build measure

package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGrowthLatency measures whether a keyspace growing to millions of CL
// keys makes cellserver's latency spike (the garbage collector scanning the
// keys, slabs and maps doubling). It builds and starts the real cellserver,
// then fills it with BENCH_GROWTH_KEYS new keys (pipelined CL.THROTTLE with
// an hour's period, so every key stays live) while probe connections send
// one CL.THROTTLE at a time on existing keys and time each answer. The
// latencies are reported per tenth of the growth, after a baseline: the
// same load rewriting 100,000 keys. It runs only when BENCH_GROWTH_KEYS is
// set:
//
//	BENCH_GROWTH_KEYS=10000000 go test -tags measure -run GrowthLatency -v -timeout 30m ./bench/
//
// It asserts nothing about speed; it reports p50, p99, p99.9 and the maximum.
func TestGrowthLatency(t *testing.T) {
	s := os.Getenv("BENCH_GROWTH_KEYS")
	if s == "" {
		t.Skip("set BENCH_GROWTH_KEYS (e.g. 10000000) to measure latency while the keyspace grows")
	}
	total, err := strconv.Atoi(s)
	if err != nil || total < 10 {
		t.Fatalf("BENCH_GROWTH_KEYS=%q", s)
	}
	goCmd := needTool(t, "go")
	ctx := context.Background()
	bin, err := buildCellserver(ctx, goCmd, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sup := newSupervisor(io.Discard)
	defer sup.stopAll()
	// gctrace prints a line per collection: its pauses and mark time.
	p, err := sup.startCellserver(ctx, onCellserver, bin, nil, "GODEBUG=gctrace=1")
	if err != nil {
		t.Fatal(err)
	}

	const baselineKeys, buckets = 100_000, 10
	base := growLoad(t, p.addr, "b", baselineKeys, min(total, 2_000_000), 1)
	grow := growLoad(t, p.addr, "g", total, total, buckets)

	info := newClient(p.addr, 1)
	defer info.Close()
	mem, err := readInfo(ctx, info, "memory")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe latency, µs (4 connections, one CL.THROTTLE at a time, while 2 connections write pipelines of %d):", growBatch)
	t.Logf("%-28s %9s %8s %8s %8s %8s", "keys", "probes", "p50", "p99", "p99.9", "max")
	logRow := func(label string, d []time.Duration) {
		slices.Sort(d)
		t.Logf("%-28s %9d %8.0f %8.0f %8.0f %8.0f", label, len(d),
			micros(percentile(d, 50)), micros(percentile(d, 99)), micros(percentile(d, 99.9)), micros(d[len(d)-1]))
	}
	logRow(fmt.Sprintf("baseline: %s rewritten", formatCount(baselineKeys)), base[0])
	var all []time.Duration
	for i, d := range grow {
		all = append(all, d...)
		logRow(fmt.Sprintf("%s to %s new", formatCount(float64(total*i/buckets)), formatCount(float64(total*(i+1)/buckets))), d)
	}
	logRow("whole growth", all)
	t.Logf("at the end: used_memory %s, %s GCs (go_gc_count), %s heap objects; the last collections (gctrace):",
		mem["used_memory_human"], mem["go_gc_count"], mem["go_heap_objects"])
	for _, line := range strings.Split(p.out.String(), "\n") {
		if strings.HasPrefix(line, "gc ") {
			t.Log(line)
		}
	}
}

// growBatch is the commands in each of the filler's pipelines.
const growBatch = 500

// growLoad sends writes CL.THROTTLE commands on keys prefix:0 to
// prefix:keys-1 (over and over if writes > keys) through 2 pipelining
// connections, while 4 probe connections time one CL.THROTTLE at a time on
// keys already written. It returns the probes' latencies split into
// buckets by how far the writes had got.
func growLoad(t *testing.T, addr, prefix string, keys, writes, buckets int) [][]time.Duration {
	t.Helper()
	ctx := context.Background()
	var written atomic.Int64
	done := make(chan struct{})
	const fillers, probers = 2, 4

	var fill sync.WaitGroup
	fillErr := make([]error, fillers)
	for w := range fillers {
		fill.Add(1)
		go func() {
			defer fill.Done()
			rdb := newClient(addr, 1)
			defer rdb.Close()
			from, to := writes*w/fillers, writes*(w+1)/fillers
			for i := from; i < to; i += growBatch {
				pipe := rdb.Pipeline()
				for k := i; k < min(i+growBatch, to); k++ {
					pipe.Do(ctx, "CL.THROTTLE", fmt.Sprintf("%s:%012d", prefix, k%keys), 0, 1, 3600)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					fillErr[w] = err
					return
				}
				written.Add(int64(min(i+growBatch, to) - i))
			}
		}()
	}

	samples := make([][][]time.Duration, probers)
	var probe sync.WaitGroup
	probeErr := make([]error, probers)
	for w := range probers {
		samples[w] = make([][]time.Duration, buckets)
		probe.Add(1)
		go func() {
			defer probe.Done()
			rdb := newClient(addr, 1)
			defer rdb.Close()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				n := int(written.Load())
				if n < fillers*growBatch {
					time.Sleep(time.Millisecond)
					continue
				}
				// A key of the first filler's share that is written already.
				key := fmt.Sprintf("%s:%012d", prefix, rng.IntN(min(n/fillers, keys)))
				start := time.Now()
				if err := rdb.Do(ctx, "CL.THROTTLE", key, 0, 1, 3600).Err(); err != nil {
					probeErr[w] = err
					return
				}
				d := time.Since(start)
				b := min(n*buckets/writes, buckets-1)
				samples[w][b] = append(samples[w][b], d)
			}
		}()
	}
	fill.Wait()
	close(done)
	probe.Wait()
	for _, err := range append(fillErr, probeErr...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	out := make([][]time.Duration, buckets)
	for _, s := range samples {
		for b := range s {
			out[b] = append(out[b], s[b]...)
		}
	}
	return out
}

// percentile is the nearest-rank p-th percentile of sorted d.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(len(d))*p/100)) - 1
	return d[max(0, min(i, len(d)-1))]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
