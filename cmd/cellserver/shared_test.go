package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// sharedArgs are the flags of a shared-mode cellserver on the store at url.
func sharedArgs(url string, extra ...string) []string {
	return append([]string{"--addr", "127.0.0.1:0", "--backing-redis", url, "--backing-mode", "shared",
		"--backing-prefix", "t:"}, extra...)
}

// clusterURL is the --backing-redis of a cluster's nodes.
func clusterURL(nodes []*redistest.Server) string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	return "redis://" + strings.Join(addrs, ",")
}

// exactCase is one limit that 60 connections over three instances call 20
// times each: exactly limit calls must be admitted in total.
type exactCase struct {
	name  string
	args  []any
	limit int
}

// exactCases are one key of each family and one THROTTLE.ALL, with tag
// putting every key of the THROTTLE.ALL in one hash slot.
func exactCases(tag string) []exactCase {
	return []exactCase{
		{"CL", []any{"CL.THROTTLE", "cl", 99, 100, 3600}, 100},
		{"SW", []any{"SW.THROTTLE", "sw", 100, "1h"}, 100},
		{"SWC", []any{"SWC.THROTTLE", "swc", 100, "1h"}, 100},
		{"FW", []any{"FW.THROTTLE", "fw", 100, "1h"}, 100},
		// The CL rule admits 100; the others would take more, so a partial
		// write shows as more than 100 recorded under them.
		{"ALL", []any{"THROTTLE.ALL", "CL", tag + "a", 99, 100, 3600, "SW", tag + "b", 150, "1h", "FW", tag + "c", 200, "1h"}, 100},
	}
}

// runExact drives the cases from 60 connections spread over addrs, 20 calls
// each (half of them pipelined), and checks that exactly each case's limit
// was admitted.
func runExact(t *testing.T, addrs []string, cases []exactCase) {
	t.Helper()
	ctx := context.Background()
	const conns, calls = 60, 20
	admitted := make([]atomic.Int64, len(cases))
	var wg sync.WaitGroup
	for c := range conns {
		rdb := redis.NewClient(&redis.Options{Addr: addrs[c%len(addrs)], PoolSize: 1, MaxRetries: -1, ReadTimeout: 10 * time.Second})
		defer rdb.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cases {
				var cmds []*redis.Cmd
				pipe := rdb.Pipeline()
				for j := range calls {
					if j%2 == 0 {
						cmds = append(cmds, pipe.Do(ctx, cases[i].args...))
						continue
					}
					cmds = append(cmds, rdb.Do(ctx, cases[i].args...))
				}
				if _, err := pipe.Exec(ctx); err != nil {
					t.Errorf("%s: pipeline: %v", cases[i].name, err)
					return
				}
				for _, cmd := range cmds {
					r, err := cmd.Int64Slice()
					if err != nil {
						t.Errorf("%s: %v", cases[i].name, err)
						return
					}
					if r[0] == 0 {
						admitted[i].Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	for i, c := range cases {
		if got := admitted[i].Load(); got != int64(c.limit) {
			t.Errorf("%s: %d admitted over %d calls from three instances, want exactly %d", c.name, got, conns*calls, c.limit)
		}
	}
}

// peek returns a limit's reply to a call of quantity 0.
func peek(t *testing.T, rdb *redis.Client, args ...any) []int64 {
	t.Helper()
	r, err := rdb.Do(context.Background(), args...).Int64Slice()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}

// TestRunSharedExact: three cellservers in shared mode on one Redis admit
// exactly the limit of each family and of a THROTTLE.ALL in total, and the
// THROTTLE.ALL records all or nothing.
func TestRunSharedExact(t *testing.T) {
	t.Parallel()
	for _, a := range runExactOn(t, redistest.Start(t)) {
		// Redis 7.0 has no SET IFEQ, and no key here is known absent (the
		// store's own SET NX is for keys whose value expired): every key
		// goes through the script.
		if n := nativeSets(t, a); n != 0 {
			t.Errorf("%s: %d SETs outside the script, want none", a, n)
		}
	}
}

// runExactOn starts three instances on store and checks that they admit
// exactly the limit between them; it returns their addresses.
func runExactOn(t *testing.T, store *redistest.Server) []string {
	t.Helper()
	var addrs []string
	for range 3 {
		addrs = append(addrs, startRun(t, sharedArgs(store.URL()), nil).addr)
	}
	runExact(t, addrs, exactCases(""))
	checkAllOrNothing(t, newClient(t, addrs[1]), "")
	checkNoFallback(t, addrs)
	return addrs
}

// TestRunSharedExactValkey: the same on Valkey 8.1, where the instances
// check and write single keys with its own SET IFEQ (INFO's
// shared_native_sets) rather than the script.
func TestRunSharedExactValkey(t *testing.T) {
	t.Parallel()
	for _, a := range runExactOn(t, redistest.StartValkey(t)) {
		if n := nativeSets(t, a); n == 0 {
			t.Errorf("%s: no SET outside the script, want SET IFEQ used", a)
		}
	}
}

// nativeSets is INFO persistence's shared_native_sets of the instance at
// addr.
func nativeSets(t *testing.T, addr string) int64 {
	t.Helper()
	v := infoField(t, newClient(t, addr), "persistence", "shared_native_sets")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s: shared_native_sets %q", addr, v)
	}
	t.Logf("%s: %d SETs outside the script", addr, n)
	return n
}

// TestRunSharedExactCluster: the same on a three-node Redis Cluster, with
// the THROTTLE.ALL's keys sharing a hash tag; keys in different slots get
// Redis Cluster's CROSSSLOT error and write nothing.
func TestRunSharedExactCluster(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartCluster(t, 3)
	var addrs []string
	for range 3 {
		addrs = append(addrs, startRun(t, sharedArgs(clusterURL(nodes)), nil).addr)
	}
	runExact(t, addrs, exactCases("{all}:"))
	rdb := newClient(t, addrs[0])
	checkAllOrNothing(t, rdb, "{all}:")
	checkNoFallback(t, addrs)

	err := rdb.Do(context.Background(), "THROTTLE.ALL", "FW", "x1", 5, "1h", "FW", "x2", 5, "1h").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT Keys in request don't hash to the same slot") {
		t.Errorf("THROTTLE.ALL across slots: %v, want CROSSSLOT", err)
	}
	if n, err := rdb.Exists(context.Background(), "x1", "x2").Result(); err != nil || n != 0 {
		t.Errorf("a CROSSSLOT THROTTLE.ALL wrote %d keys (%v)", n, err)
	}
}

// checkAllOrNothing: the THROTTLE.ALL's SW and FW keys hold exactly the 100
// requests it admitted, no more.
func checkAllOrNothing(t *testing.T, rdb *redis.Client, tag string) {
	t.Helper()
	if r := peek(t, rdb, "SW.THROTTLE", tag+"b", 150, "1h", 0); r[2] != 50 {
		t.Errorf("the THROTTLE.ALL's SW key has %d of 150 left, want 50: it recorded requests the call refused", r[2])
	}
	if r := peek(t, rdb, "FW.THROTTLE", tag+"c", 200, "1h", 0); r[2] != 100 {
		t.Errorf("the THROTTLE.ALL's FW key has %d of 200 left, want 100: it recorded requests the call refused", r[2])
	}
}

// checkNoFallback: every decision went through the store.
func checkNoFallback(t *testing.T, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		rdb := newClient(t, a)
		if v := infoField(t, rdb, "persistence", "shared_local_decisions"); v != "0" {
			t.Errorf("%s decided %s requests locally, want every one in the store", a, v)
		}
		if v := infoField(t, rdb, "persistence", "shared_round_trips"); v == "" || v == "0" {
			t.Errorf("%s: shared_round_trips %q", a, v)
		}
	}
}

// TestRunSharedKeyspace: the keyspace commands act on the store, so every
// instance sees a key another created or deleted, and a refusal cached by
// one instance is dropped when another deletes the key.
func TestRunSharedKeyspace(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	a := newClient(t, startRun(t, sharedArgs(store.URL()), nil).addr)
	b := newClient(t, startRun(t, sharedArgs(store.URL()), nil).addr)
	ctx := context.Background()

	if r := peek(t, a, "CL.THROTTLE", "k", 0, 1, 60); r[0] != 0 {
		t.Fatalf("first call refused: %v", r)
	}
	if r := peek(t, a, "CL.THROTTLE", "k", 0, 1, 60); r[0] != 1 {
		t.Fatalf("second call admitted: %v", r)
	}
	if v, err := b.Type(ctx, "k").Result(); err != nil || v != "string" {
		t.Errorf("TYPE on the other instance = %q, %v", v, err)
	}
	if ms, err := b.PTTL(ctx, "k").Result(); err != nil || ms <= 0 {
		t.Errorf("PTTL on the other instance = %v, %v", ms, err)
	}
	if n, err := b.DBSize(ctx).Result(); err != nil || n != 1 {
		t.Errorf("DBSIZE = %d, %v", n, err)
	}
	tat, err := store.Client(t).Get(ctx, "t:k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get(ctx, "k").Result(); err != nil || v != tat {
		t.Errorf("GET on the other instance = %q, %v; the store holds %q", v, err, tat)
	}
	if s, err := b.TTL(ctx, "k").Result(); err != nil || s <= 0 || s > time.Minute {
		t.Errorf("TTL = %v, %v", s, err)
	}
	if n, err := b.Exists(ctx, "k", "k", "none").Result(); err != nil || n != 2 {
		t.Errorf("EXISTS k k none = %d, %v", n, err)
	}
	peek(t, a, "SW.THROTTLE", "sw", 5, "1m")
	if err := b.Get(ctx, "sw").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Errorf("GET of an SW key = %v, want WRONGTYPE", err)
	}
	if keys, err := b.Keys(ctx, "*").Result(); err != nil || len(keys) != 2 {
		t.Errorf("KEYS * = %q, %v; want k and sw", keys, err)
	}
	if keys, _, err := b.ScanType(ctx, 0, "*", 100, "sw").Result(); err != nil || len(keys) != 1 || keys[0] != "sw" {
		t.Errorf("SCAN TYPE sw = %q, %v", keys, err)
	}
	// Another application's hash under the prefix is a hash, as Redis says.
	store.Client(t).HSet(ctx, "t:h", "f", "v")
	if v, err := b.Type(ctx, "h").Result(); err != nil || v != "hash" {
		t.Errorf("TYPE of another application's hash = %q, %v", v, err)
	}
	if keys, _, err := b.ScanType(ctx, 0, "*", 100, "hash").Result(); err != nil || len(keys) != 1 || keys[0] != "h" {
		t.Errorf("SCAN TYPE hash = %q, %v", keys, err)
	}
	store.Client(t).Del(ctx, "t:h")
	// As in Redis and in memory: an empty MATCH matches only the empty key,
	// an empty TYPE no key.
	for _, args := range [][]any{{"SCAN", 0, "MATCH", ""}, {"SCAN", 0, "TYPE", ""}} {
		r, err := b.Do(ctx, args...).Slice()
		if err != nil || len(r) != 2 || len(r[1].([]any)) != 0 {
			t.Errorf("%v = %v, %v; want no key", args, r, err)
		}
	}
	if n, err := b.Del(ctx, "k").Result(); err != nil || n != 1 {
		t.Fatalf("DEL on the other instance = %d, %v", n, err)
	}
	// a refused k until it is deleted; the deletion reaches its cache.
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := peek(t, a, "CL.THROTTLE", "k", 0, 1, 60)
		if r[0] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an instance still refuses a key another instance deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL under a prefix: %v", err)
	}
	if n, _ := store.Client(t).DBSize(ctx).Result(); n != 0 {
		t.Errorf("the store keeps %d keys after FLUSHALL", n)
	}
	store.Client(t).Set(ctx, "other-app", "1", 0)
	noPrefix := newClient(t, startRun(t, []string{"--addr", "127.0.0.1:0", "--backing-redis", store.URL(), "--backing-mode", "shared"}, nil).addr)
	if err := noPrefix.FlushDB(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR shared mode flushes only keys under --backing-prefix") {
		t.Errorf("FLUSHDB without a prefix = %v, want a refusal naming --backing-prefix", err)
	}
	if n, _ := store.Client(t).Exists(ctx, "other-app").Result(); n != 1 {
		t.Error("FLUSHDB without a prefix deleted another application's key")
	}
}

// TestRunSharedStoreStopped: while the store is stopped (SIGSTOP), a PING on
// a connection beside 50 clients waiting for it answers at once: no event
// loop waits on the store. The waiting commands are answered by the local
// fallback within the timeout, none with an error.
func TestRunSharedStoreStopped(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	const timeout = time.Second
	addr := startRun(t, sharedArgs(store.URL(), "--shared-timeout", timeout.String()), nil).addr
	ctx := context.Background()
	ping := newClient(t, addr)
	if err := ping.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	store.Pause()
	defer store.Resume()

	const waiting = 50
	var wg sync.WaitGroup
	errs := make(chan error, waiting)
	longest := make(chan time.Duration, waiting)
	var answered atomic.Int32 // the waiting commands answered so far
	for i := range waiting {
		rdb := newClient(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := rdb.Do(ctx, "CL.THROTTLE", fmt.Sprint("w", i), 10, 10, 60).Err()
			answered.Add(1)
			longest <- time.Since(start)
			if err != nil {
				errs <- err
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the 50 are waiting on the stopped store
	start := time.Now()
	if err := ping.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The PING is answered while the 50 still wait (none can be answered
	// before the timeout): a loop waiting on the store would answer it only
	// with them, a timeout later. The README's bound, 50 ms, is far above a
	// PING's usual time here (under 1 ms).
	if n, d := answered.Load(), time.Since(start); n != 0 || d > 50*time.Millisecond {
		t.Errorf("PING beside 50 clients waiting on a stopped store was answered after %d of them, in %v, want none and within 50ms", n, d)
	}
	wg.Wait()
	close(errs)
	close(longest)
	for err := range errs {
		t.Errorf("a client got an error while the store was stopped: %v", err)
	}
	for d := range longest {
		if d > timeout+500*time.Millisecond {
			t.Errorf("a command waited %v, more than the timeout (%v) and some slack", d, timeout)
		}
	}
	if v := infoField(t, ping, "persistence", "shared_fallback_active"); v != "1" {
		t.Errorf("shared_fallback_active = %q while the store is stopped, want 1", v)
	}
}

// TestRunSharedTransaction: MULTI/EXEC in shared mode answers every queued
// command, in order, each decided in the store.
func TestRunSharedTransaction(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	rdb := newClient(t, startRun(t, sharedArgs(store.URL()), nil).addr)
	ctx := context.Background()
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "CL.THROTTLE", "tx:cl", 0, 1, 60)
		p.Do(ctx, "CL.THROTTLE", "tx:cl", 0, 1, 60)
		p.Do(ctx, "PING")
		p.Do(ctx, "FW.THROTTLE", "tx:fw", 5, "1m", 2)
		p.Exists(ctx, "tx:cl", "tx:fw", "tx:none")
		return nil
	})
	if err != nil {
		t.Fatalf("EXEC: %v", err)
	}
	// (FW's reset_after, the time to its window's end, varies.)
	want := []string{"[0 1 0 -1 60]", "[1 1 0 60 60]", "PONG", "[0 5 3 -1 ", "2"}
	for i, c := range cmds {
		var got string
		switch v := c.(type) {
		case *redis.Cmd:
			got = fmt.Sprint(v.Val())
		case *redis.IntCmd:
			got = fmt.Sprint(v.Val())
		}
		if !strings.HasPrefix(got, want[i]) {
			t.Errorf("queued command %d answered %s, want %s", i, got, want[i])
		}
	}
	if n, _ := store.Client(t).Exists(ctx, "t:tx:cl", "t:tx:fw").Result(); n != 2 {
		t.Errorf("the store holds %d of the transaction's 2 keys", n)
	}
}

// TestRunSharedPipelineOrder: a client's pipelined commands are decided in
// order, as in memory: the DEL of a refused key before its next call, a
// refund before the call after it, an admission under another window of
// the key before the refused window's next call; none is refused from a
// refusal remembered before the command ahead of it.
func TestRunSharedPipelineOrder(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	rdb := newClient(t, startRun(t, sharedArgs(store.URL()), nil).addr)
	ctx := context.Background()
	admitted := func(cmd *redis.Cmd) bool {
		r, err := cmd.Int64Slice()
		if err != nil {
			t.Fatalf("%v: %v", cmd.Args(), err)
		}
		return r[0] == 0
	}
	for i := range 10 {
		k, r, w := fmt.Sprint("del", i), fmt.Sprint("refund", i), fmt.Sprint("window", i)
		// Each key refused, and the refusal remembered.
		peek(t, rdb, "CL.THROTTLE", k, 0, 1, 60)
		for range 5 { // a refund of one leaves the TAT ahead of now
			peek(t, rdb, "CL.THROTTLE", r, 4, 1, 60)
		}
		for range 2 {
			peek(t, rdb, "FW.THROTTLE", w, 2, "1h")
		}
		for _, args := range [][]any{{"CL.THROTTLE", k, 0, 1, 60}, {"CL.THROTTLE", r, 4, 1, 60}, {"FW.THROTTLE", w, 2, "1h"}} {
			if got := peek(t, rdb, args...); got[0] != 1 {
				t.Fatalf("%v: %v, want refused", args, got)
			}
		}
		now := time.Now()
		newCount := !now.Truncate(time.Minute).Equal(now.Truncate(time.Hour))
		pipe := rdb.Pipeline()
		del := pipe.Del(ctx, k)
		afterDel := pipe.Do(ctx, "CL.THROTTLE", k, 0, 1, 60)
		refund := pipe.Do(ctx, "CL.THROTTLE", r, 4, 1, 60, -1)
		afterRefund := pipe.Do(ctx, "CL.THROTTLE", r, 4, 1, 60)
		minute := pipe.Do(ctx, "FW.THROTTLE", w, 100, "1m")
		hour := pipe.Do(ctx, "FW.THROTTLE", w, 2, "1h")
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := del.Result(); err != nil || n != 1 {
			t.Fatalf("DEL %s = %d, %v", k, n, err)
		}
		if !admitted(afterDel) {
			t.Errorf("round %d: the call pipelined after DEL %s was refused", i, k)
		}
		if n, _ := store.Client(t).Exists(ctx, "t:"+k).Result(); n != 1 {
			t.Errorf("round %d: the store lacks %s after the DEL and the call after it", i, k)
		}
		if !admitted(refund) || !admitted(afterRefund) {
			t.Errorf("round %d: refund %v, the call after it %v: want both admitted", i, refund.Val(), afterRefund.Val())
		}
		// The minute's admission starts a new count, which admits the
		// hour's call, unless the minute starts with the hour: the count
		// then goes on (as in memory).
		if !admitted(minute) || admitted(hour) != newCount {
			t.Errorf("round %d: the minute's call %v, the hour's after it %v: want the minute's admitted, the hour's admitted %v", i, minute.Val(), hour.Val(), newCount)
		}
	}
}

// TestRunSharedTransactionBounded: the commands of one EXEC wait for one
// another as starts kept in order, not as a goroutine each: a transaction
// of thousands of rate-limit calls holds a handful of goroutines.
func TestRunSharedTransactionBounded(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	run := startRun(t, sharedArgs(store.URL()), nil)
	c, err := net.Dial("tcp", run.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 5000
	before := runtime.NumGoroutine()
	var b strings.Builder
	b.WriteString("*1\r\n$5\r\nMULTI\r\n")
	for range n {
		b.WriteString("*5\r\n$11\r\nCL.THROTTLE\r\n$2\r\nek\r\n$4\r\n1000\r\n$1\r\n1\r\n$1\r\n1\r\n")
	}
	b.WriteString("*1\r\n$4\r\nEXEC\r\n")
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	// The replies: +OK, n QUEUED, then EXEC's array, whose header comes
	// once its first reply is written and its last once all are.
	answered := make(chan error, 1)
	go func() {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		r := bufio.NewReader(c)
		for i := 0; i < n+2; i++ {
			var s strings.Builder
			if err := readReply(r, &s); err != nil {
				answered <- err
				return
			}
			if i == n+1 && !strings.HasPrefix(s.String(), fmt.Sprintf("*%d\r\n", n)) {
				answered <- fmt.Errorf("EXEC answered %.40q", s.String())
				return
			}
		}
		answered <- nil
	}()
	most := 0
	for done := false; !done; {
		select {
		case err := <-answered:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-time.After(time.Millisecond):
			most = max(most, runtime.NumGoroutine()-before)
		}
	}
	if most > 100 {
		t.Errorf("an EXEC of %d calls held %d goroutines more at its peak, want a handful", n, most)
	}
}
