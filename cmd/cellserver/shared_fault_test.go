package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// loadResult is what a background load saw: the longest wait for a reply
// and the errors.
type loadResult struct {
	longest time.Duration
	errs    []error
}

// loadUntil calls an SW key of a large limit from 4 connections to each
// address until stop is closed; wait returns what they saw.
func loadUntil(t *testing.T, addrs []string, stop <-chan struct{}) func() loadResult {
	t.Helper()
	var (
		mu   sync.Mutex // guards res
		res  loadResult
		wait func()
	)
	clients := make([]*redis.Client, 4*len(addrs))
	for i := range clients {
		clients[i] = redis.NewClient(&redis.Options{Addr: addrs[i%len(addrs)], PoolSize: 1, MaxRetries: -1, ReadTimeout: 10 * time.Second})
		t.Cleanup(func() { clients[i].Close() })
	}
	wait = repeatUntil(len(clients), stop, func(i int) {
		began := time.Now()
		err := clients[i].Do(context.Background(), "SW.THROTTLE", "load", 1_000_000, "1h").Err()
		took := time.Since(began)
		mu.Lock()
		res.longest = max(res.longest, took)
		if err != nil {
			res.errs = append(res.errs, err)
		}
		mu.Unlock()
		time.Sleep(time.Millisecond)
	})
	return func() loadResult {
		wait()
		return res
	}
}

// repeatUntil calls fn(i) over and over on n goroutines (i from 0 to n-1)
// until stop is closed; wait waits for them.
func repeatUntil(n int, stop <-chan struct{}, fn func(i int)) (wait func()) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				fn(i)
			}
		}()
	}
	return wg.Wait
}

// admitUntilRefused calls FW.THROTTLE fw 10 1h through clients in turn
// until one is refused, and returns how many were admitted.
func admitUntilRefused(t *testing.T, clients ...*redis.Client) int {
	t.Helper()
	for n := 0; n <= 100; n++ {
		if r := peek(t, clients[n%len(clients)], "FW.THROTTLE", "fw", 10, "1h"); r[0] == 1 {
			return n
		}
	}
	t.Fatal("FW.THROTTLE fw 10 1h admitted more than 100 calls")
	return 0
}

// TestRunSharedStoreKilled: the store is killed (SIGKILL) under load, then
// started again, empty, on the same port. While it is dead, two instances
// with --shared-fallback local answer every command, none with an error
// and none later than the timeout, each from its own memory (the limit in
// full: the 4 requests the store recorded are unknown to it). Once it is
// back, both return to it within a few seconds and its state wins: it came
// back empty, so the key has its whole limit again and the requests
// admitted locally are not carried over.
func TestRunSharedStoreKilled(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	const timeout, slack = 200 * time.Millisecond, 300 * time.Millisecond
	args := sharedArgs(store.URL(), "--shared-timeout", timeout.String(), "--shared-fallback", "local")
	addrs := []string{startRun(t, args, nil).addr, startRun(t, args, nil).addr}
	a, b := newClient(t, addrs[0]), newClient(t, addrs[1])
	for i := range 4 {
		if r := peek(t, []*redis.Client{a, b}[i%2], "FW.THROTTLE", "fw", 10, "1h"); r[0] != 0 || r[2] != int64(9-i) {
			t.Fatalf("call %d before the kill: %v, want admitted with %d left", i+1, r, 9-i)
		}
	}

	stop := make(chan struct{})
	wait := loadUntil(t, addrs, stop)
	time.Sleep(50 * time.Millisecond)
	store.Kill()
	for _, rdb := range []*redis.Client{a, b} {
		waitInfo(t, rdb, "persistence", "shared_fallback_active", "1")
	}
	for _, c := range []struct {
		name string
		rdb  *redis.Client
	}{{"a", a}, {"b", b}} {
		if n := admitUntilRefused(t, c.rdb); n != 10 {
			t.Errorf("instance %s admitted %d while the store was dead, want 10: its memory, which has not seen the store's 4", c.name, n)
		}
	}
	time.Sleep(200 * time.Millisecond) // more load while the store is dead

	store.Restart()
	back := time.Now()
	for _, rdb := range []*redis.Client{a, b} {
		waitInfo(t, rdb, "persistence", "shared_fallback_active", "0")
	}
	recovered := time.Since(back)
	if recovered > 3*time.Second {
		t.Errorf("the instances went back to the store %v after it restarted, want within 3s", recovered)
	}
	time.Sleep(100 * time.Millisecond) // load on the store again
	close(stop)
	res := wait()

	// The store came back empty and its state wins.
	for _, rdb := range []*redis.Client{a, b} {
		if r := peek(t, rdb, "FW.THROTTLE", "fw", 10, "1h", 0); r[2] != 10 {
			t.Errorf("after the restart the key has %d of 10 left, want 10: the restarted store is empty and neither the 4 recorded before the kill nor the 10 admitted locally count", r[2])
		}
	}
	if n := admitUntilRefused(t, a, b); n != 10 {
		t.Errorf("after the restart the two instances admitted %d, want 10 in total: decisions are the store's again", n)
	}
	for i, rdb := range []*redis.Client{a, b} {
		if v := infoField(t, rdb, "persistence", "shared_fallbacks"); v != "1" {
			t.Errorf("instance %d: shared_fallbacks = %s, want 1 (one outage, no flapping after the restart)", i, v)
		}
	}
	for _, err := range res.errs {
		t.Errorf("a client got an error around the outage: %v", err)
	}
	if res.longest > timeout+slack {
		t.Errorf("a command waited %v, more than the timeout (%v) and some slack", res.longest, timeout)
	}
	t.Logf("longest wait %v; back on the store %v after the restart; local decisions %s and %s", res.longest, recovered,
		infoField(t, a, "persistence", "shared_local_decisions"), infoField(t, b, "persistence", "shared_local_decisions"))
}

// TestRunSharedInstanceKilled: three cellserver processes in shared mode on
// one Redis; 30 connections spread over them call a CL key and an SW key of
// limit 100 each; one process is killed with SIGKILL mid-run. Its clients
// get connection errors; the other two keep answering. No more than 100
// admissions per key reach the clients, and the store records every one
// that did (it may record a few more: admissions the dead process wrote but
// could not answer); the survivors then drive each key to exactly 100.
func TestRunSharedInstanceKilled(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("cannot find the test binary: %v", err))
	}
	store := redistest.Start(t)
	procs := make([]*process, 3)
	for i := range procs {
		// --shared-fallback error: a survivor never decides from its memory,
		// where it would admit more than the limit; an error would show.
		p := startProcess(t, exe, sharedArgs(store.URL(), "--log-format", "json", "--shared-timeout", "2s", "--shared-fallback", "error")...)
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			io.Copy(io.Discard, p.logs)
		}()
		t.Cleanup(func() {
			p.cmd.Process.Kill()
			<-drained
			p.wait()
		})
		procs[i] = p
	}
	victim := procs[2]

	keys := []struct {
		name string
		args []any
	}{
		{"CL", []any{"CL.THROTTLE", "cl", 99, 100, 3600}},
		{"SW", []any{"SW.THROTTLE", "sw", 100, "1h"}},
	}
	const conns, limit, killAt = 30, 100, 40
	var (
		acked      [2]atomic.Int64 // admissions answered, per key
		ackedAfter atomic.Int64    // by the survivors after the kill
		killed     atomic.Bool
		killOnce   sync.Once
		killedAt   = make(chan struct{})
		victimErrs atomic.Int64
		wg         sync.WaitGroup
	)
	kill := func() {
		killOnce.Do(func() {
			killed.Store(true)
			victim.cmd.Process.Kill()
			close(killedAt)
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for c := range conns {
		p := procs[c%len(procs)]
		rdb := redis.NewClient(&redis.Options{Addr: p.addr, PoolSize: 1, MaxRetries: -1, ReadTimeout: 5 * time.Second})
		defer rdb.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var refusedAfterKill [2]bool
			for !refusedAfterKill[0] || !refusedAfterKill[1] {
				if time.Now().After(deadline) {
					t.Errorf("connection %d: the keys not refused within 10s", c)
					return
				}
				for i, k := range keys {
					after := killed.Load()
					r, err := rdb.Do(context.Background(), k.args...).Int64Slice()
					if err != nil {
						if p == victim && killed.Load() {
							victimErrs.Add(1) // the dead process's client: not counted
							return
						}
						t.Errorf("connection %d to a live process: %s: %v", c, k.name, err)
						return
					}
					if r[0] == 0 {
						if acked[i].Add(1) >= killAt {
							kill()
						}
						if after {
							ackedAfter.Add(1)
						}
					} else if after {
						refusedAfterKill[i] = true
					}
				}
				time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
			}
		}()
	}

	// Right after the kill, the store has recorded at least what was
	// answered: every admission counted so far was written before this peek.
	survivor := newClient(t, procs[0].addr)
	select {
	case <-killedAt:
	case <-time.After(10 * time.Second):
		t.Fatal("the kill did not happen within 10s")
	}
	for i, k := range keys {
		answered := acked[i].Load()
		recorded := limit - peek(t, survivor, append(k.args, 0)...)[2]
		if recorded < answered || recorded > limit {
			t.Errorf("%s after the kill: %d answered admitted, %d recorded, want %d ≤ recorded ≤ %d", k.name, answered, recorded, answered, limit)
		}
		t.Logf("%s after the kill: %d answered admitted, %d recorded", k.name, answered, recorded)
	}
	wg.Wait()

	for i, k := range keys {
		if n := acked[i].Load(); n > limit {
			t.Errorf("%s: %d admissions answered, more than the limit %d", k.name, n, limit)
		} else {
			t.Logf("%s: %d admissions answered in all, %d recorded but not answered", k.name, n, limit-n)
		}
		for _, p := range procs[:2] {
			if r := peek(t, newClient(t, p.addr), append(k.args, 0)...); r[2] != 0 {
				t.Errorf("%s through %s after the run: %d left, want 0: the survivors drove it to its limit", k.name, p.addr, r[2])
			}
		}
	}
	if victimErrs.Load() == 0 {
		t.Error("no client of the killed process got an error: it was not killed mid-run")
	}
	if ackedAfter.Load() == 0 {
		t.Error("the survivors admitted nothing after the kill")
	}
	t.Logf("%d clients of the killed process got errors; the survivors admitted %d after the kill", victimErrs.Load(), ackedAfter.Load())
}

// TestRunSharedStopWhileStoreStopped: a graceful stop while the store is
// stopped (SIGSTOP) and marked down returns at once: the prober's call,
// which waits for the store for up to --shared-timeout (go-redis's read
// timeout, 3 s, at most), is cut by closing the store's connections, not
// waited for.
func TestRunSharedStopWhileStoreStopped(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	r := startRun(t, sharedArgs(store.URL(), "--shared-timeout", "3s"), nil)
	rdb := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	if v := peek(t, rdb, "CL.THROTTLE", "k", 9, 10, 60); v[0] != 0 {
		t.Fatalf("CL.THROTTLE before the stop: %v", v)
	}
	store.Pause()
	defer store.Resume()
	// Answered by the fallback once the store has not answered within the
	// timeout: the store is then down, and the prober tries it.
	peek(t, rdb, "CL.THROTTLE", "k", 9, 10, 60)
	if v := infoField(t, rdb, "persistence", "shared_fallback_active"); v != "1" {
		t.Fatalf("shared_fallback_active = %q after a timeout, want 1", v)
	}
	time.Sleep(200 * time.Millisecond) // the prober's first call waits on the stopped store
	start := time.Now()
	if code := r.stop(t); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderr.String())
	}
	if took := time.Since(start); took > 2*time.Second { // about 3 s when the call is waited out
		t.Errorf("the stop took %v with no request under way, want it within 2s (the prober's call to the stopped store is not waited out)", took)
	} else {
		t.Logf("the stop took %v", took)
	}
}

// TestRunSharedClusterNodeDownAtStart: --backing-redis names one node of a
// Redis Cluster, down as cellserver starts. Once it answers it is asked
// whether it is a cluster node, and cellserver turns to a cluster client:
// every key is decided in the store, whichever node holds it, and the
// keyspace commands walk every master. Taken for a single Redis, the
// store never counted as back (its probe's key got MOVED) and DBSIZE
// counted one node's keys.
func TestRunSharedClusterNodeDownAtStart(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartCluster(t, 3)
	node := nodes[0]
	node.Kill()
	r := startRun(t, sharedArgs(node.URL()), nil)
	rdb := newClient(t, r.addr)
	node.Restart()
	ctx := context.Background()
	// The restarted node answers CLUSTERDOWN for a moment, until it has
	// rejoined the others.
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range nodes {
		for {
			info, err := n.Client(t).ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the cluster not ok again within 30s: %v\n%s", n.Addr, err, info)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitInfo(t, rdb, "persistence", "shared_fallback_active", "0")
	const n = 30
	for i := range n {
		if v := peek(t, rdb, "CL.THROTTLE", fmt.Sprint("k", i), 9, 10, 60); v[0] != 0 || v[2] != 9 {
			t.Fatalf("CL.THROTTLE k%d: %v, want admitted with 9 left", i, v)
		}
	}
	if v := infoField(t, rdb, "persistence", "shared_local_decisions"); v != "0" {
		t.Errorf("shared_local_decisions = %s, want every decision made in the store", v)
	}
	if size, err := rdb.DBSize(ctx).Result(); err != nil || size != n {
		t.Errorf("DBSIZE = %d, %v; want %d, the keys of every master", size, err, n)
	}
	for _, nd := range nodes {
		if size, err := nd.Client(t).DBSize(ctx).Result(); err != nil || size == 0 {
			t.Errorf("node %s holds %d keys (%v), want some", nd.Addr, size, err)
		}
	}
	if !strings.Contains(r.stderr.String(), "the shared store is a Redis Cluster") {
		t.Errorf("the log does not say the store is a Redis Cluster:\n%s", r.stderr.String())
	}
}

// TestRunSharedDroppedCounted: the decisions of a client that resets its
// connection while they wait on the store are made there all the same, and
// counted as a client that stayed would see them counted: INFO's allowed
// and limited calls, and THROTTLE.TOP's refusals.
func TestRunSharedDroppedCounted(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	run := startRun(t, sharedArgs(store.URL(), "--shared-timeout", "10s"), nil)
	admin := newClient(t, run.addr)
	ctx := context.Background()
	if err := admin.Do(ctx, "CL.THROTTLE", "warm", 1, 1, 60).Err(); err != nil {
		t.Fatal(err)
	}
	store.Pause()
	c, err := net.Dial("tcp", run.addr)
	if err != nil {
		store.Resume()
		t.Fatal(err)
	}
	const n = 20
	var b strings.Builder
	for range n {
		b.WriteString("*5\r\n$11\r\nCL.THROTTLE\r\n$2\r\ndk\r\n$1\r\n0\r\n$1\r\n1\r\n$2\r\n60\r\n")
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		store.Resume()
		t.Fatal(err)
	}
	// Every call read and waiting on the store, then a reset (linger 0),
	// as a client killed or timing out sends.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasPrefix(infoField(t, admin, "commandstats", "cmdstat_cl.throttle"), fmt.Sprintf("calls=%d,", n+1)) {
		if time.Now().After(deadline) {
			store.Resume()
			t.Fatal("the calls were not all read")
		}
		time.Sleep(time.Millisecond)
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	store.Resume()
	waitInfo(t, admin, "stats", "throttle_limited_calls", fmt.Sprint(n-1))
	if v := infoField(t, admin, "stats", "throttle_allowed_calls"); v != "2" { // warm's and dk's first
		t.Errorf("throttle_allowed_calls = %s, want 2", v)
	}
	top, err := admin.Do(ctx, "THROTTLE.TOP").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(top), "dk") {
		t.Errorf("THROTTLE.TOP does not list dk, refused %d times: %v", n-1, top)
	}
}
