package compat_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist"
	"github.com/cellserver/cellserver/persist/redistest"
)

// persistedServer is a cellserver writing behind to a backing store, wired
// as cmd/cellserver wires it.
type persistedServer struct {
	*testServer
	writer *persist.Writer
	logs   *lockedBuffer
}

// lockedBuffer collects log lines; safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex // guards b
	b   strings.Builder
	tee testLogWriter
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	return l.tee.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startPersisted starts a cellserver that loads backing, then writes behind
// to it every interval. The test's cleanup shuts it down, flushing.
func startPersisted(t *testing.T, backing persist.Backing, interval time.Duration) *persistedServer {
	t.Helper()
	return startPersistedClock(t, backing, interval, nil)
}

// startPersistedClock is startPersisted with the engine on clock (nil for
// the system clock).
func startPersistedClock(t *testing.T, backing persist.Backing, interval time.Duration, clock func() time.Time) *persistedServer {
	t.Helper()
	logs := &lockedBuffer{tee: testLogWriter{t}}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	eng := engine.New(engine.Options{TrackChanges: true, Now: clock})
	w := persist.New(eng, backing, persist.Options{FlushInterval: interval, Logger: logger})
	if err := w.Load(context.Background()); err != nil {
		t.Fatalf("Load: %v", err)
	}
	w.Start()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	cmds := commands.New(commands.Options{
		Engine:  eng,
		Version: "compat-test",
		Settings: []commands.Setting{
			{Name: "bind", Value: "127.0.0.1"},
			{Name: "port", Value: strconv.Itoa(port)},
		},
		Logger: logger,
	})
	serve(t, ln, cmds, logger, func(ctx context.Context) {
		if err := w.Close(ctx); err != nil {
			t.Errorf("writer Close: %v", err)
		}
		eng.Close()
	})
	return &persistedServer{testServer: &testServer{addr: ln.Addr().String(), port: port}, writer: w, logs: logs}
}

// dialBacking returns a backing store in the real Redis r, closed by the
// test's cleanup.
func dialBacking(t *testing.T, r *redistest.Server) *persist.Redis {
	t.Helper()
	b, err := persist.Dial(r.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// waitSynced polls until everything changed so far has landed in the
// backing store: nothing is pending, and a flush has succeeded since
// (Pending drops to 0 when a flush takes the keys, before it writes them).
// The load must have stopped.
func (s *persistedServer) waitSynced(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	var idle time.Time // since when nothing has been pending
	for {
		st := s.writer.Stats()
		switch {
		case st.PendingKeys != 0:
			idle = time.Time{}
		case idle.IsZero():
			idle = time.Now()
		case st.Status == persist.StatusOK && st.LastFlush.After(idle):
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer is not in sync after %v: %+v", ioTimeout, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPersistWritesRedisCellState: what CL.THROTTLE stores reads, in the
// backing Redis, as redis-cell's own state: the same string, the same
// expiry, the same type and encoding.
func TestPersistWritesRedisCellState(t *testing.T) {
	t.Parallel()
	backing := redistest.Start(t)
	s := startPersisted(t, dialBacking(t, backing), 20*time.Millisecond)
	rdb, raw := s.goRedis(t), backing.Client(t)
	ctx := context.Background()
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprint("user", i)
		// An hour per token, so that no key expires during the test.
		if _, err := rdb.Do(ctx, "CL.THROTTLE", keys[i], 15, 1, 3600, 1+i%16).Result(); err != nil {
			t.Fatal(err)
		}
	}
	s.waitSynced(t)
	for _, k := range keys {
		want, err := rdb.Get(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		// cellserver's expiry, as an absolute time, lies between the
		// times before and after its PTTL.
		before := time.Now().UnixMilli()
		pttl := rdb.PTTL(ctx, k).Val().Milliseconds()
		after := time.Now().UnixMilli()
		got, err := raw.Get(ctx, k).Result()
		if err != nil || got != want {
			t.Errorf("backing GET %s = %q, %v; cellserver's GET = %q", k, got, err, want)
		}
		if at := raw.PExpireTime(ctx, k).Val().Milliseconds(); at < before+pttl || at > after+pttl {
			t.Errorf("%s: expires at %d ms in the backing Redis, at %d..%d in cellserver", k, at, before+pttl, after+pttl)
		}
		if typ := raw.Type(ctx, k).Val(); typ != "string" {
			t.Errorf("TYPE %s = %s, want string", k, typ)
		}
		// redis-cell's SET of the same decimal string gets the same encoding.
		raw.Set(ctx, "control", want, 0)
		if enc, ctl := raw.ObjectEncoding(ctx, k).Val(), raw.ObjectEncoding(ctx, "control").Val(); enc != ctl {
			t.Errorf("OBJECT ENCODING %s = %s, a plain SET gives %s", k, enc, ctl)
		}
	}
	// DEL reaches the backing Redis.
	rdb.Del(ctx, keys[0])
	s.waitSynced(t)
	if n := raw.Exists(ctx, keys[0]).Val(); n != 0 {
		t.Errorf("%s deleted in cellserver, still in the backing Redis", keys[0])
	}
}

// TestPersistLoadsRedisCellState: keys written by redis-cell (here as
// redis-cell writes them, SET key <tat> PX <ttl>) are loaded at start and
// answer what redis-cell would answer.
func TestPersistLoadsRedisCellState(t *testing.T) {
	t.Parallel()
	backing := redistest.Start(t)
	raw := backing.Client(t)
	ctx := context.Background()
	// CL.THROTTLE k 15 30 60, hit n times at once: the TAT is n emission
	// intervals (2s) from now, and the key expires then.
	now := time.Now()
	hits := []int{1, 5, 10, 15, 16}
	for _, n := range hits {
		tat := now.Add(time.Duration(n) * 2 * time.Second)
		if err := raw.Set(ctx, fmt.Sprint("rc:", n), strconv.FormatInt(tat.UnixNano(), 10), time.Duration(n)*2*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// redis-cell's leftover of a failed call: a TAT in the past, no expiry.
	raw.Set(ctx, "rc:leftover", strconv.FormatInt(now.Add(-2*time.Second).UnixNano(), 10), 0)
	raw.HSet(ctx, "other:hash", "f", "v")

	// The engine's clock stays at now while the server starts and answers,
	// so that the replies do not depend on how long that takes.
	clock := engine.NewManualClock(now)
	s := startPersistedClock(t, dialBacking(t, backing), 20*time.Millisecond, clock.Now)
	if st := s.writer.Stats(); st.LoadedKeys != int64(len(hits)) || st.SkippedKeys != 1 {
		t.Errorf("loaded %d keys and skipped %d, want %d and 1 (the hash)", st.LoadedKeys, st.SkippedKeys, len(hits))
	}
	rdb := s.goRedis(t)
	for _, n := range hits {
		// The next call, as redis-cell answers it (README's session: after
		// the 16th hit, limited for 2 s).
		want := []int64{0, 16, int64(15 - n), -1, int64(2 * (n + 1))}
		if n == 16 {
			want = []int64{1, 16, 0, 2, 32}
		}
		got, err := rdb.Do(ctx, "CL.THROTTLE", fmt.Sprint("rc:", n), 15, 30, 60).Int64Slice()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("after %d hits in redis-cell: CL.THROTTLE = %v, %v; want %v", n, got, err, want)
		}
	}
	if got, _ := rdb.Do(ctx, "CL.THROTTLE", "rc:leftover", 15, 30, 60).Int64Slice(); !slices.Equal(got, []int64{0, 16, 15, -1, 2}) {
		t.Errorf("redis-cell's leftover key: %v, want a fresh key's reply", got)
	}
	// And back: the backing Redis holds the new state, for redis-cell.
	clock.Set(time.Now())
	s.waitSynced(t)
	for _, n := range hits[:4] {
		k := fmt.Sprint("rc:", n)
		if want, got := rdb.Get(ctx, k).Val(), raw.Get(ctx, k).Val(); got != want {
			t.Errorf("%s: backing %q, cellserver %q", k, got, want)
		}
	}
}

// percentiles returns the p50 and p99 of ds.
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[len(ds)*99/100]
}

// TestPersistOutage stops the backing Redis under load and starts an empty
// one on the same port: no client sees an error, and everything that
// changed lands once it is back. It is not parallel, so that the latencies
// it reports are its own.
func TestPersistOutage(t *testing.T) {
	backing := redistest.Start(t)
	s := startPersisted(t, dialBacking(t, backing), 50*time.Millisecond)
	ctx := context.Background()

	const workers, keysPerWorker = 4, 50
	var phase atomic.Int32 // 0 before, 1 during the outage, 2 after
	type sample struct {
		phase int32
		took  time.Duration
	}
	samples := make([][]sample, workers)
	errs := make([]error, workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		rdb := s.goRedis(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := phase.Load()
				start := time.Now()
				err := rdb.Do(ctx, "CL.THROTTLE", fmt.Sprintf("w%d:%d", w, i%keysPerWorker), 1_000_000, 1, 60).Err()
				samples[w] = append(samples[w], sample{p, time.Since(start)})
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the load runs with the backing Redis up
	backing.Kill()
	phase.Store(1)
	time.Sleep(time.Second) // the load runs with it down
	backing.Restart()
	phase.Store(2)
	deadline := time.Now().Add(ioTimeout)
	for s.writer.Stats().Status != persist.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("the writer has not recovered after %v: %+v", ioTimeout, s.writer.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // and with it back
	close(stop)
	wg.Wait()

	for w, err := range errs {
		if err != nil {
			t.Errorf("worker %d saw %v", w, err)
		}
	}
	var byPhase [3][]time.Duration
	for _, ss := range samples {
		for _, x := range ss {
			byPhase[x.phase] = append(byPhase[x.phase], x.took)
		}
	}
	for i, name := range []string{"before", "during", "after"} {
		p50, p99 := percentiles(byPhase[i])
		t.Logf("outage, %s: %d calls, p50 %v, p99 %v", name, len(byPhase[i]), p50, p99)
	}
	if len(byPhase[1]) == 0 {
		t.Error("no call ran during the outage")
	}

	s.waitSynced(t)
	rdb, raw := s.goRedis(t), backing.Client(t)
	for w := range workers {
		for i := range keysPerWorker {
			k := fmt.Sprintf("w%d:%d", w, i)
			want, err := rdb.Get(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got, err := raw.Get(ctx, k).Result(); got != want {
				t.Errorf("%s: backing %q (%v), cellserver %q", k, got, err, want)
			}
		}
	}
	logs := s.logs.String()
	if n := strings.Count(logs, "backing store is down"); n != 1 {
		t.Errorf("%d lines say the backing store is down, want 1", n)
	}
	if n := strings.Count(logs, "backing store is back"); n != 1 {
		t.Errorf("%d lines say the backing store is back, want 1", n)
	}
	st := s.writer.Stats()
	t.Logf("outage: %d failed flushes, %d keys flushed in all", st.FailedFlushes, st.FlushedKeys)
	if st.FailedFlushes == 0 {
		t.Error("no flush failed during the outage")
	}
}

// countingBacking counts the records saved through it.
type countingBacking struct {
	persist.Backing
	saves, records atomic.Int64
	largest        atomic.Int64
}

func (c *countingBacking) Save(ctx context.Context, recs []engine.Record) error {
	c.saves.Add(1)
	c.records.Add(int64(len(recs)))
	for {
		old := c.largest.Load()
		if int64(len(recs)) <= old || c.largest.CompareAndSwap(old, int64(len(recs))) {
			break
		}
	}
	return c.Backing.Save(ctx, recs)
}

// TestPersistWriteAmplification drives about 100,000 CL.THROTTLE calls
// over 1,000 hot keys and counts the writes that reach the backing Redis:
// at most one per key per flush.
func TestPersistWriteAmplification(t *testing.T) {
	t.Parallel()
	backing := redistest.Start(t)
	counting := &countingBacking{Backing: dialBacking(t, backing)}
	const interval = 250 * time.Millisecond
	s := startPersisted(t, counting, interval)
	ctx := context.Background()

	// 10 clients each send 20 pipelines of 500 calls, one every 50ms: 100,000
	// calls spread over about a second (longer where the machine is slower).
	const hotKeys, workers, perWorker, pipeline = 1000, 10, 10_000, 500
	const every = time.Second * pipeline / perWorker
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		rdb := s.goRedis(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for sent := 0; sent < perWorker; sent += pipeline {
				if sent > 0 {
					<-tick.C
				}
				pipe := rdb.Pipeline()
				for i := range pipeline {
					pipe.Do(ctx, "CL.THROTTLE", fmt.Sprint("hot:", (w*perWorker+sent+i)%hotKeys), 1_000_000, 1, 60)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for w, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	s.waitSynced(t)
	elapsed := time.Since(start)

	requests := workers * perWorker
	sets, err := redistest.CommandCalls(ctx, backing.Client(t), "set")
	if err != nil {
		t.Fatal(err)
	}
	st := s.writer.Stats()
	t.Logf("write amplification: %d requests in %v (%.0f/s) over %d keys; %d flushes wrote %d records (%d SETs in the backing Redis), at most %d in one flush: %.1f writes per flush, 1 write per %.0f requests",
		requests, took.Round(time.Millisecond), float64(requests)/took.Seconds(), hotKeys,
		st.Flushes, counting.records.Load(), sets, counting.largest.Load(),
		float64(sets)/float64(st.Flushes), float64(requests)/float64(sets))
	if sets != counting.records.Load() || sets != st.FlushedKeys {
		t.Errorf("the backing Redis ran %d SETs, the writer saved %d records and counted %d", sets, counting.records.Load(), st.FlushedKeys)
	}
	if sets < hotKeys {
		t.Errorf("%d SETs for %d keys: some key was never written", sets, hotKeys)
	}
	if sets > hotKeys*st.Flushes {
		t.Errorf("%d SETs in %d flushes: more than one write per key per flush", sets, st.Flushes)
	}
	if limit := int64(hotKeys) * (int64(elapsed/interval) + 2); sets > limit {
		t.Errorf("%d SETs in %v: more than %d keys per %v", sets, elapsed, hotKeys, interval)
	}
}
