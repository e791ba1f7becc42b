package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/internal/testenv"
	"github.com/cellserver/cellserver/persist"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

func TestPersistenceInfo(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	got := persistenceInfo(persist.Stats{
		Status: persist.StatusDown, PendingKeys: 12, FlushedKeys: 3400, FailedFlushes: 5,
		LastFlush: now.Add(-1500 * time.Millisecond), LoadTime: 1234 * time.Millisecond,
		LoadedKeys: 100_000, SkippedKeys: 7,
	}, now)
	want := "backing_status:down backing_pending_keys:12 backing_flushed_keys:3400 backing_failed_flushes:5 " +
		"backing_last_flush_age_ms:1500 backing_load_time_ms:1234 backing_loaded_keys:100000 backing_skipped_keys:7"
	if s := settingsString(got); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
	never := settingsString(persistenceInfo(persist.Stats{}, now))
	if !strings.Contains(never, "backing_status:ok") || !strings.Contains(never, "backing_last_flush_age_ms:-1") {
		t.Errorf("before any flush: %s", never)
	}
}

func settingsString(s []commands.Setting) string {
	parts := make([]string, len(s))
	for i, f := range s {
		parts[i] = f.Name + ":" + f.Value
	}
	return strings.Join(parts, " ")
}

// infoField returns one field of INFO section, "" if absent.
func infoField(t *testing.T, rdb *redis.Client, section, name string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// waitInfo polls INFO until field has the value want, for 10s.
func waitInfo(t *testing.T, rdb *redis.Client, section, field, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := infoField(t, rdb, section, field)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO %s: %s = %q after 10s, want %q", section, field, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// peekAll returns CL.THROTTLE's reply to quantity 0 for each key, in one
// pipeline.
func peekAll(t *testing.T, rdb *redis.Client, keys []string, args ...any) [][]int64 {
	t.Helper()
	ctx := context.Background()
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Do(ctx, append([]any{"CL.THROTTLE", k}, append(args, 0)...)...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("peek: %v", err)
	}
	out := make([][]int64, len(keys))
	for i, c := range cmds {
		v, err := c.Int64Slice()
		if err != nil {
			t.Fatalf("peek %s: %v", keys[i], err)
		}
		out[i] = v
	}
	return out
}

// TestRunBackingRestart: 1,000 limits survive a graceful stop and a start
// on the same backing Redis, each answering what it answered before.
func TestRunBackingRestart(t *testing.T) {
	t.Parallel()
	backing := redistest.Start(t)
	args := []string{"--addr", "127.0.0.1:0", "--backing-redis", backing.URL()}
	ctx := context.Background()

	r := startRun(t, args, nil)
	rdb := newClient(t, r.addr)
	// A year per token, so that no limit refills during the test: the
	// replies before and after depend on the stored TAT alone.
	quota := []any{15, 1, 365 * 24 * 3600}
	keys := make([]string, 1000)
	pipe := rdb.Pipeline()
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
		pipe.Do(ctx, append([]any{"CL.THROTTLE", keys[i]}, append(quota, 1+i%16)...)...)
		if i%3 == 0 { // some spend more, some get limited
			pipe.Do(ctx, append([]any{"CL.THROTTLE", keys[i]}, append(quota, 1+i%5)...)...)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("CL.THROTTLE: %v", err)
	}
	fresh := peekAll(t, rdb, []string{"never-hit"}, quota...)[0]
	before := peekAll(t, rdb, keys, quota...)
	remaining := map[int64]int{}
	for i, b := range before {
		if slices.Equal(b[:3], fresh[:3]) {
			t.Fatalf("%s answers as a fresh key: %v", keys[i], b)
		}
		remaining[b[2]]++
	}
	if len(remaining) < 10 {
		t.Errorf("remaining takes only %d values: %v", len(remaining), remaining)
	}
	if got := infoField(t, rdb, "persistence", "backing_status"); got != "ok" {
		t.Errorf("backing_status = %q, want ok", got)
	}

	stopped := time.Now()
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, r.stderr.String())
	}
	// The last flush is the final one, or a periodic one that left the
	// final one nothing to do.
	if logs := r.stderr.String(); !strings.Contains(logs, `msg="flushed to the backing store"`) && !strings.Contains(logs, `msg="nothing to flush to the backing store"`) {
		t.Errorf("no final flush in the log:\n%s", logs)
	}
	if n, err := backing.Client(t).DBSize(ctx).Result(); err != nil || n != 1000 {
		t.Fatalf("the backing Redis holds %d keys (%v), want 1000", n, err)
	}

	r2 := startRun(t, args, nil)
	rdb2 := newClient(t, r2.addr)
	t.Logf("restart: stop to ready in %v; load of %s keys took %sms", time.Since(stopped).Round(time.Millisecond),
		infoField(t, rdb2, "persistence", "backing_loaded_keys"), infoField(t, rdb2, "persistence", "backing_load_time_ms"))
	if got := infoField(t, rdb2, "persistence", "backing_loaded_keys"); got != "1000" {
		t.Errorf("backing_loaded_keys = %q, want 1000", got)
	}
	after := peekAll(t, rdb2, keys, quota...)
	for i := range keys {
		if !slices.Equal(before[i][:3], after[i][:3]) {
			t.Errorf("%s: before the restart %v, after %v", keys[i], before[i], after[i])
		}
	}
	if !strings.Contains(r2.stderr.String(), `msg="loaded the backing store" keys=1000`) {
		t.Errorf("no load line in the log:\n%s", r2.stderr.String())
	}
}

// TestRunBackingUnreachable: a backing Redis that is down at start does not
// stop the server; the writer retries, and loads and writes once it is back.
// The password in the URL appears in no log, no INFO and no CONFIG GET.
func TestRunBackingUnreachable(t *testing.T) {
	t.Parallel()
	backing := redistest.Start(t)
	backing.Kill()
	url := "redis://:hunter2@" + backing.Addr
	r := startRun(t, []string{"--addr", "127.0.0.1:0", "--backing-redis", url, "--flush-interval", "10ms"}, nil)
	rdb := newClient(t, r.addr)
	ctx := context.Background()
	if got, err := rdb.Do(ctx, "CL.THROTTLE", "k", 15, 30, 60).Int64Slice(); err != nil || !slices.Equal(got, []int64{0, 16, 15, -1, 2}) {
		t.Fatalf("CL.THROTTLE with the backing Redis down = %v, %v", got, err)
	}
	// The first load attempt may still be under way ("loading").
	waitInfo(t, rdb, "persistence", "backing_status", "down")
	backing.Restart()
	waitInfo(t, rdb, "persistence", "backing_status", "ok")
	tat, err := rdb.Get(ctx, "k").Result()
	if err != nil {
		t.Fatal(err)
	}
	raw := backing.Client(t)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got, err := raw.Get(ctx, "k").Result()
		if got == tat {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backing GET k = %q, %v after 10s; want %s", got, err, tat)
		}
	}
	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	info, err := rdb.Info(ctx, "everything").Result()
	if err != nil {
		t.Fatal(err)
	}
	logs := r.stderr.String()
	for what, text := range map[string]string{"the log": logs, "CONFIG GET *": fmt.Sprint(cfg), "INFO": info} {
		if strings.Contains(text, "hunter2") {
			t.Errorf("%s shows the password:\n%s", what, text)
		}
	}
	if !strings.Contains(logs, "url=redis://:xxxxx@"+backing.Addr) {
		t.Errorf("the log lacks the redacted URL:\n%s", logs)
	}
	if n := strings.Count(logs, "backing store is down"); n != 1 {
		t.Errorf("%d lines say the backing store is down, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs, "backing store is back"); n != 1 {
		t.Errorf("%d lines say the backing store is back, want 1:\n%s", n, logs)
	}
}

// TestRunBackingRequired: with --backing-required, a backing Redis that
// cannot be loaded stops the start with status 1.
func TestRunBackingRequired(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	var stdout, stderr syncBuffer
	ready := make(chan net.Addr, 1)
	code := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--backing-redis", "redis://:hunter2@" + closed, "--backing-required"},
		envMap(nil), &stdout, &stderr, ready)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	logs := stderr.String()
	if !strings.Contains(logs, `msg="cannot start without the backing store (--backing-required)"`) || strings.Contains(logs, "hunter2") {
		t.Errorf("log:\n%s", logs)
	}
	if len(ready) != 0 {
		t.Error("the server said it was ready")
	}
}

// TestRunBackingKill9 kills cellserver (SIGKILL) while it serves a steady
// load and starts it again on the same backing Redis: what is lost is what
// changed in about the last flush interval.
func TestRunBackingKill9(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("cannot find the test binary: %v", err))
	}
	backing := redistest.Start(t)
	const interval = 250 * time.Millisecond
	p := startProcess(t, exe, "--addr", "127.0.0.1:0", "--log-format", "json",
		"--backing-redis", backing.URL(), "--flush-interval", interval.String())
	cmd, logs := p.cmd, p.logs
	drained := make(chan struct{})
	go func() { io.Copy(io.Discard, logs); close(drained) }()

	// Each hit moves a key's TAT one second on (burst 1e9, one per second),
	// so the stored TAT counts the hits it includes.
	quota := []any{1_000_000_000, 1, 1}
	const workers, perWorker = 8, 5
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, PoolSize: workers})
	defer rdb.Close()
	type keyLog struct {
		base uint64      // the TAT after the first hit
		acks []time.Time // when each hit was answered
	}
	keys := make(map[string]*keyLog)
	for w := range workers {
		for j := range perWorker {
			k := fmt.Sprintf("w%d:k%d", w, j)
			if err := rdb.Do(ctx, append([]any{"CL.THROTTLE", k}, append(quota, 1)...)...).Err(); err != nil {
				t.Fatal(err)
			}
			acked := time.Now()
			tat, err := rdb.Get(ctx, k).Uint64()
			if err != nil {
				t.Fatal(err)
			}
			keys[k] = &keyLog{base: tat, acks: []time.Time{acked}}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("w%d:k%d", w, i%perWorker)
				if err := rdb.Do(ctx, append([]any{"CL.THROTTLE", k}, append(quota, 1)...)...).Err(); err != nil {
					return // killed
				}
				keys[k].acks = append(keys[k].acks, time.Now()) // this worker's keys only
			}
		}()
	}
	// The load runs for a few flushes; the kill lands anywhere in a flush
	// interval.
	time.Sleep(time.Second + rand.N(interval))
	killed := time.Now()
	cmd.Process.Kill()
	close(stop)
	wg.Wait()
	<-drained
	p.wait()

	r := startRun(t, []string{"--addr", "127.0.0.1:0", "--backing-redis", backing.URL()}, nil)
	rdb2 := newClient(t, r.addr)
	var (
		hits, lost int
		worst      time.Duration // the longest time before the kill whose hits were lost
	)
	for k, kl := range keys {
		acked := len(kl.acks)
		hits += acked
		tat, err := rdb2.Get(ctx, k).Uint64()
		if err != nil {
			t.Fatalf("GET %s after the restart: %v (every key was flushed at least once)", k, err)
		}
		kept := int((tat-kl.base)/1e9) + 1 // hits the restored TAT includes
		switch {
		case kept > acked+1: // one hit may have been applied but not answered
			t.Errorf("%s: restored %d hits, but only %d were answered", k, kept, acked)
		case kept < acked:
			lost += acked - kept
			worst = max(worst, killed.Sub(kl.acks[kept-1]))
		}
	}
	rate := float64(hits) / killed.Sub(keys["w0:k0"].acks[0]).Seconds()
	t.Logf("kill -9 with --flush-interval %v: %d hits at %.0f/s on %d keys; %d lost (%.1f%%), the oldest lost state %v before the kill",
		interval, hits, rate, len(keys), lost, 100*float64(lost)/float64(hits), worst.Round(time.Millisecond))
	if worst > 2*interval {
		t.Errorf("state from %v before the kill was lost; want at most 2 flush intervals (%v)", worst, 2*interval)
	}
}

// TestRunBackingStopDuringLoad: a signal during the start-up load stops the
// server cleanly (status 0), without calling it an outage.
func TestRunBackingStopDuringLoad(t *testing.T) {
	for _, required := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var stdout, stderr syncBuffer
		args := []string{"--addr", "127.0.0.1:0", "--backing-redis", "127.0.0.1:1", "--backing-required=" + strconv.FormatBool(required)}
		if code := run(ctx, args, envMap(nil), &stdout, &stderr, nil); code != 0 {
			t.Errorf("required=%v: exit status %d, want 0", required, code)
		}
		logs := stderr.String()
		if !strings.Contains(logs, `msg="stopped while loading the backing store"`) || strings.Contains(logs, "is down") || strings.Contains(logs, "level=ERROR") {
			t.Errorf("required=%v: log:\n%s", required, logs)
		}
	}
}

// TestRunBackingDownAtShutdown: a shutdown while the backing Redis is down
// ends at once with status 0 when nothing is pending, and with status 1
// within --shutdown-flush-timeout, the lost keys counted in the log, when
// changes are pending.
func TestRunBackingDownAtShutdown(t *testing.T) {
	t.Parallel()
	t.Run("nothing pending", func(t *testing.T) {
		t.Parallel()
		r := startRun(t, []string{"--addr", "127.0.0.1:0", "--backing-redis", "redis://" + freeAddr(t)}, nil)
		start := time.Now()
		code := r.stop(t)
		took := time.Since(start)
		t.Logf("stop with the store refusing connections and nothing pending: status %d in %v", code, took.Round(time.Millisecond))
		if code != exitOK {
			t.Errorf("exit status %d, want 0; stderr:\n%s", code, r.stderr.String())
		}
		if took > time.Second {
			t.Errorf("stop took %v, want under a second", took)
		}
		if logs := r.stderr.String(); strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, `msg="nothing to flush to the backing store"`) {
			t.Errorf("log:\n%s", logs)
		}
	})
	t.Run("pending keys", func(t *testing.T) {
		t.Parallel()
		const bound = time.Second
		backing := redistest.Start(t)
		r := startRun(t, []string{"--addr", "127.0.0.1:0", "--backing-redis", backing.URL(),
			"--flush-interval", "1h", "--shutdown-flush-timeout", bound.String()}, nil)
		rdb := newClient(t, r.addr)
		for i := range 10 {
			if err := rdb.Do(context.Background(), "CL.THROTTLE", fmt.Sprint("k", i), 15, 30, 60).Err(); err != nil {
				t.Fatal(err)
			}
		}
		rdb.Close()
		backing.Kill()
		start := time.Now()
		code := r.stop(t)
		took := time.Since(start)
		t.Logf("stop with the store killed and 10 keys pending, --shutdown-flush-timeout %v: status %d in %v", bound, code, took.Round(time.Millisecond))
		if code != exitError {
			t.Errorf("exit status %d, want 1; stderr:\n%s", code, r.stderr.String())
		}
		if took < bound || took > bound+500*time.Millisecond {
			t.Errorf("stop took %v, want the bound of %v and little more", took, bound)
		}
		if logs := r.stderr.String(); !strings.Contains(logs, `level=ERROR msg="ran out of time flushing to the backing store; changes lost" unwritten_keys=10`) {
			t.Errorf("log:\n%s", logs)
		}
	})
}

// TestRunBackingRLSShutdown: the rate limit service's requests under way at
// a graceful shutdown finish before the last flush to the backing Redis:
// after a restart on the store, the limit has counted every hit that was
// answered OK, no fewer.
func TestRunBackingRLSShutdown(t *testing.T) {
	t.Parallel()
	backing := redistest.Start(t)
	path := t.TempDir() + "/d.yaml"
	const perHour = 100_000_000
	cfgYAML := fmt.Sprintf("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: hour\n      requests_per_unit: %d\n", perHour)
	if err := os.WriteFile(path, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	rlsAddr := freeAddr(t)
	args := []string{"--addr", "127.0.0.1:0", "--backing-redis", backing.URL(), "--rls-addr", rlsAddr, "--rls-config", path}
	r := startRun(t, args, nil)
	conn, err := grpc.NewClient(rlsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := rlsv3.NewRateLimitServiceClient(conn)
	call := func() (*rlsv3.RateLimitResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d",
			Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}})
	}
	var answered atomic.Int64
	stop := make(chan struct{})
	wait := repeatUntil(4, stop, func(int) {
		if resp, err := call(); err == nil && resp.OverallCode == rlsv3.RateLimitResponse_OK {
			answered.Add(1)
		}
	})
	time.Sleep(300 * time.Millisecond)
	if code := r.stop(t); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderr.String())
	}
	close(stop)
	wait()
	ok := answered.Load()
	if ok == 0 {
		t.Fatal("no request answered before the shutdown")
	}
	startRun(t, args, nil)
	var resp *rlsv3.RateLimitResponse
	deadline := time.Now().Add(10 * time.Second)
	for {
		// A connection of its own: the first one is backing off after the
		// shutdown.
		resp, err = rlsCall(t, rlsAddr, insecure.NewCredentials())
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || len(resp.Statuses) != 1 {
		t.Fatalf("after the restart: %v, %v", resp, err)
	}
	if counted := perHour - 1 - int64(resp.Statuses[0].LimitRemaining); counted != ok {
		t.Fatalf("the store counted %d hits, %d were answered OK before the shutdown", counted, ok)
	}
}
