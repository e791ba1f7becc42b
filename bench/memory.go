package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// swRequests is how many requests each sliding-log key (SW.THROTTLE, the
// ZSET) holds in the memory measurement.
const swRequests = 100

// Memory fill settings: each worker has a connection and sends its keys'
// commands in pipelines of fillBatch.
const (
	fillWorkers = 4
	fillBatch   = 1000
	// ttlSeconds is every filled key's life: long enough that nothing
	// expires while the memory is read; ttlMillis is the same in ms.
	ttlSeconds = 3600
	ttlMillis  = ttlSeconds * 1000
	// settleReads INFO memory reads, settleGap apart, end a measurement.
	settleReads = 5
	settleGap   = 100 * time.Millisecond
)

// memoryGOGC is the GOGC of the cellserver processes whose memory is read.
// cellserver's used_memory is the Go heap's HeapAlloc: the live objects
// plus the garbage not collected yet, and INFO does not run a collection.
// GOGC=1 starts one whenever the heap has grown 1% past the live heap, so
// the figure is the live heap to within about 1%.
const memoryGOGC = "GOGC=1"

// memoryTest is one memory measurement: keys keys of one kind, each written
// by the same commands, on a fresh server.
type memoryTest struct {
	name     string // what -only matches
	server   string // onCellserver, onRedis or onRedisCell
	keys     int
	requests int // requests each key holds
	// fill queues the commands that write one key.
	fill func(ctx context.Context, p redis.Pipeliner, key string, sc scripts)
}

// memoryKey is the name of the i-th key: 16 bytes, as redis-benchmark's
// key:__rand_int__.
func memoryKey(i int) string { return fmt.Sprintf("key:%012d", i) }

// memoryKeyLen is the length of every memoryKey.
const memoryKeyLen = 16

// memoryTests are the measurements: each family of cellserver against the
// Redis keys that do the same job. A CL key (one admitted request with a
// period of an hour) against the string the GCRA script writes, a SET of a
// 19-digit value with an expiry, and redis-cell's own key when it is loaded;
// a sliding log holding 1 and swRequests requests against the ZSET the
// script builds (filled with ZADD, members as the script writes them); SWC
// and FW keys against the same strings.
func memoryTests(o options, redisCell bool) []memoryTest {
	throttle := func(name string, args ...any) func(context.Context, redis.Pipeliner, string, scripts) {
		return func(ctx context.Context, p redis.Pipeliner, key string, _ scripts) {
			p.Do(ctx, append([]any{name, key}, args...)...)
		}
	}
	sw := func(n int) func(context.Context, redis.Pipeliner, string, scripts) {
		return func(ctx context.Context, p redis.Pipeliner, key string, _ scripts) {
			for range n {
				p.Do(ctx, "SW.THROTTLE", key, swRequests, ttlSeconds)
			}
		}
	}
	zset := func(n int) func(context.Context, redis.Pipeliner, string, scripts) {
		return func(ctx context.Context, p redis.Pipeliner, key string, _ scripts) {
			p.Do(ctx, zaddArgs(key, n, time.Now())...)
			p.Do(ctx, "PEXPIRE", key, ttlMillis)
		}
	}
	tests := []memoryTest{
		{name: "CL.THROTTLE", server: onCellserver, keys: o.keys, requests: 1,
			fill: throttle("CL.THROTTLE", 0, 1, ttlSeconds)},
		{name: "GCRA.lua", server: onRedis, keys: o.keys, requests: 1,
			fill: func(ctx context.Context, p redis.Pipeliner, key string, sc scripts) {
				p.EvalSha(ctx, sc.gcra, []string{key}, 0, 1, ttlSeconds)
			}},
		{name: "SET", server: onRedis, keys: o.keys, requests: 1,
			fill: throttle("SET", "1795340811174919210", "PX", ttlMillis)},
	}
	if redisCell {
		tests = append(tests, memoryTest{name: "redis-cell", server: onRedisCell, keys: o.keys, requests: 1,
			fill: throttle("CL.THROTTLE", 0, 1, ttlSeconds)})
	}
	return append(tests,
		memoryTest{name: "SW.THROTTLE", server: onCellserver, keys: o.swKeys, requests: 1, fill: sw(1)},
		memoryTest{name: "SW.THROTTLE", server: onCellserver, keys: o.swKeys, requests: swRequests, fill: sw(swRequests)},
		memoryTest{name: "ZSET.lua", server: onRedis, keys: o.swKeys, requests: 1, fill: zset(1)},
		memoryTest{name: "ZSET.lua", server: onRedis, keys: o.swKeys, requests: swRequests, fill: zset(swRequests)},
		memoryTest{name: "SWC.THROTTLE", server: onCellserver, keys: o.keys, requests: 1,
			fill: throttle("SWC.THROTTLE", 100, ttlSeconds)},
		memoryTest{name: "FW.THROTTLE", server: onCellserver, keys: o.keys, requests: 1,
			fill: throttle("FW.THROTTLE", 100, ttlSeconds)},
	)
}

// zaddArgs is the ZADD that leaves key as zsetScript leaves it after n
// admitted requests one millisecond apart from start: each member is its
// arrival in microseconds and the count before it, scored in milliseconds.
func zaddArgs(key string, n int, start time.Time) []any {
	args := make([]any, 0, 2+2*n)
	args = append(args, "ZADD", key)
	for i := range n {
		t := start.Add(time.Duration(i) * time.Millisecond)
		args = append(args, t.UnixMilli(), fmt.Sprintf("%d-%d", t.UnixMicro(), i))
	}
	return args
}

// memoryResult is one memory measurement's outcome.
type memoryResult struct {
	memoryTest
	bytesPerKey float64 // growth of used_memory per key
	// datasetPerKey is the growth of cellserver's used_memory_dataset, its
	// keyspace estimate, per key; NaN for Redis.
	datasetPerKey float64
}

// memoryPhase measures every selected memory test, each on a fresh server.
func memoryPhase(ctx context.Context, o options, t tools, sup *supervisor, cellBin, dir string, progress io.Writer) ([]memoryResult, error) {
	var out []memoryResult
	for _, mt := range memoryTests(o, t.cellModule != "") {
		if !o.selected(mt.name) {
			continue
		}
		started := time.Now()
		r, err := measureMemory(ctx, mt, t, sup, cellBin, dir)
		if err != nil {
			return nil, fmt.Errorf("memory of %s on %s: %w", mt.name, mt.server, err)
		}
		fmt.Fprintf(progress, "memory: %d %s keys × %d on %s: %.0f bytes/key (%v)\n",
			mt.keys, mt.name, mt.requests, mt.server, r.bytesPerKey, time.Since(started).Round(time.Millisecond))
		out = append(out, r)
	}
	return out, nil
}

// measureMemory starts a fresh server, fills it and reads the growth of
// used_memory.
func measureMemory(ctx context.Context, mt memoryTest, t tools, sup *supervisor, cellBin, dir string) (memoryResult, error) {
	res := memoryResult{memoryTest: mt, datasetPerKey: math.NaN()}
	var p *process
	var err error
	switch mt.server {
	case onCellserver:
		p, err = sup.startCellserver(ctx, onCellserver, cellBin, nil, memoryGOGC)
	case onRedisCell:
		p, err = sup.startRedis(ctx, t.redisServer, t.cellModule, dir)
	default:
		p, err = sup.startRedis(ctx, t.redisServer, "", dir)
	}
	if err != nil {
		return res, err
	}
	defer sup.stopOne(p)
	var sc scripts
	if mt.name == "GCRA.lua" {
		if sc, err = loadScripts(ctx, p.addr); err != nil {
			return res, err
		}
	}
	info := newClient(p.addr, 1)
	defer info.Close()
	before, err := readInfo(ctx, info, "memory")
	if err != nil {
		return res, err
	}
	if err := fillKeys(ctx, p.addr, mt, sc); err != nil {
		return res, err
	}
	if err := waitClients(ctx, info, 1); err != nil {
		return res, err
	}
	if n, err := info.DBSize(ctx).Result(); err != nil || n != int64(mt.keys) {
		return res, fmt.Errorf("DBSIZE is %d (%v) after the fill, want %d", n, err, mt.keys)
	}
	after, err := settledMemory(ctx, info)
	if err != nil {
		return res, err
	}
	if res.bytesPerKey, err = growthPerKey(before, after, "used_memory", mt.keys); err != nil {
		return res, err
	}
	if mt.server == onCellserver {
		if res.datasetPerKey, err = growthPerKey(before, after, "used_memory_dataset", mt.keys); err != nil {
			return res, err
		}
	}
	return res, nil
}

// fillKeys writes mt.keys keys to addr, fillWorkers connections each sending
// its share in pipelines, and checks every reply: an error, or a throttle
// that did not admit its request, fails the fill.
func fillKeys(ctx context.Context, addr string, mt memoryTest, sc scripts) error {
	rdb := newClient(addr, fillWorkers)
	defer rdb.Close()
	keysPerBatch := max(1, fillBatch/mt.requests)
	var wg sync.WaitGroup
	errs := make([]error, fillWorkers)
	for w := range fillWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, to := mt.keys*w/fillWorkers, mt.keys*(w+1)/fillWorkers
			for i := from; i < to && errs[w] == nil; i += keysPerBatch {
				pipe := rdb.Pipeline()
				for k := i; k < min(i+keysPerBatch, to); k++ {
					mt.fill(ctx, pipe, memoryKey(k), sc)
				}
				cmds, err := pipe.Exec(ctx)
				if err == nil {
					err = checkAdmitted(cmds)
				}
				errs[w] = err
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// checkAdmitted fails on a throttle reply whose first integer (limited) is
// not 0.
func checkAdmitted(cmds []redis.Cmder) error {
	for _, c := range cmds {
		cmd, ok := c.(*redis.Cmd)
		if !ok {
			continue
		}
		if reply, ok := cmd.Val().([]any); ok && len(reply) > 0 && reply[0] != int64(0) {
			return fmt.Errorf("%v was limited (%v): the fill would not hold what it should", cmd.Args(), reply)
		}
	}
	return nil
}

// readInfo is one INFO section as field -> value.
func readInfo(ctx context.Context, rdb *redis.Client, section string) (map[string]string, error) {
	text, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, err)
	}
	return parseInfo(text), nil
}

// parseInfo reads INFO's "field:value" lines, skipping "# Section" titles.
func parseInfo(text string) map[string]string {
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			fields[k] = v
		}
	}
	return fields
}

// growthPerKey is (after - before) / keys of an INFO field in bytes.
func growthPerKey(before, after map[string]string, field string, keys int) (float64, error) {
	b, err1 := strconv.ParseInt(before[field], 10, 64)
	a, err2 := strconv.ParseInt(after[field], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("INFO memory's %s: %w", field, err)
	}
	return float64(a-b) / float64(keys), nil
}

// waitClients waits until the server counts n connected clients: the fill's
// connections, closed, must be gone (with their buffers) before the memory
// is read.
func waitClients(ctx context.Context, rdb *redis.Client, n int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := readInfo(ctx, rdb, "clients")
		if err != nil {
			return err
		}
		if f["connected_clients"] == strconv.Itoa(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connected_clients is still %s, want %d", f["connected_clients"], n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// settledMemory reads INFO memory settleReads times, settleGap apart, and
// keeps the read with the least used_memory: a Go heap shrinks while the
// runtime sweeps what its last collection found dead, and Redis's figure
// does not move.
func settledMemory(ctx context.Context, rdb *redis.Client) (map[string]string, error) {
	var best map[string]string
	bestUsed := int64(math.MaxInt64)
	for i := range settleReads {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(settleGap):
			}
		}
		f, err := readInfo(ctx, rdb, "memory")
		if err != nil {
			return nil, err
		}
		used, err := strconv.ParseInt(f["used_memory"], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("INFO memory's used_memory %q: %w", f["used_memory"], err)
		}
		if used < bestUsed {
			best, bestUsed = f, used
		}
	}
	return best, nil
}
