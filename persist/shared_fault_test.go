package persist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// faultTimeout is the shared timeout of the fault tests, and faultSlack
// what an op may wait beyond it on a loaded machine under -race.
const (
	faultTimeout = 200 * time.Millisecond
	faultSlack   = 200 * time.Millisecond
)

// newFaultShared starts a Shared over srv with a client left at go-redis's
// defaults (its read timeout is 3s: Shared's own timeout must hold).
func newFaultShared(t *testing.T, srv *redistest.Server, mode FallbackMode) *Shared {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}),
		Timeout: faultTimeout, Fallback: mode})
	startShared(t, s)
	return s
}

// loadWhile runs ops from 8 goroutines until stop is closed, and returns
// the longest wait and the errors seen.
func loadWhile(s *Shared, stop <-chan struct{}) (wait func() (time.Duration, []error)) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		longest time.Duration
		errs    []error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				began := time.Now()
				a := <-windowAsync(s, windowRule("load", engine.FamilyFW), 0)
				took := time.Since(began)
				mu.Lock()
				longest = max(longest, took)
				if a.err != nil {
					errs = append(errs, a.err)
				}
				mu.Unlock()
			}
		}()
	}
	return func() (time.Duration, []error) {
		wg.Wait()
		return longest, errs
	}
}

// TestSharedFallbackLocal: with the store stopped (SIGSTOP) under load, no
// op fails and none waits longer than the timeout; the local engine
// decides meanwhile; once the store answers again its state wins.
func TestSharedFallbackLocal(t *testing.T) {
	srv := redistest.Start(t)
	s := newFaultShared(t, srv, FallbackLocal)
	w := windowRule("w", engine.FamilyFW) // limit 100
	for range 5 {
		if a := wait(t, windowAsync(s, w, 1)); a.err != nil {
			t.Fatal(a.err)
		}
	}
	stop := make(chan struct{})
	done := loadWhile(s, stop)
	time.Sleep(100 * time.Millisecond)
	srv.Pause()
	waitFor(t, "down", func() bool { return s.Stats().StoreDown })
	var local atomic.Int64
	for range 7 {
		a := wait(t, windowAsync(s, w, 1))
		if a.err != nil || a.d.Limited {
			t.Fatalf("local decision while down: %+v", a)
		}
		local.Store(a.d.Remaining)
	}
	if local.Load() != 93 {
		t.Errorf("the local engine's 7th decision left %d, want 93 (it starts empty)", local.Load())
	}
	time.Sleep(300 * time.Millisecond)
	srv.Resume()
	waitFor(t, "back", func() bool { return !s.Stats().StoreDown })
	time.Sleep(100 * time.Millisecond)
	close(stop)
	longest, errs := done()
	if len(errs) > 0 {
		t.Errorf("%d ops failed, the first: %v", len(errs), errs[0])
	}
	if longest > faultTimeout+faultSlack {
		t.Errorf("an op waited %v, timeout %v", longest, faultTimeout)
	}
	// The store's 5 count, not the local 7.
	if a := wait(t, windowAsync(s, w, 1)); a.err != nil || a.d.Remaining != 94 {
		t.Errorf("after the store came back: %+v, want remaining 94 (the store's state)", a)
	}
	st := s.Stats()
	if st.Downs != 1 || st.LocalDecisions < 7 || st.Timeouts == 0 {
		t.Errorf("stats %+v, want one down period, the local decisions and the ops that waited out the timeout counted", st)
	}
	t.Logf("longest wait %v; stats %+v", longest, st)
}

// TestSharedStoreRefusingWrites: a store that answers but refuses writes
// (here out of memory under noeviction) is down until it takes them again:
// the local engine decides all along, once emptied, and enforces the limit,
// instead of being emptied each time a probe finds the store answering.
func TestSharedStoreRefusingWrites(t *testing.T) {
	srv := redistest.Start(t)
	s := newFaultShared(t, srv, FallbackLocal)
	admin := srv.Client(t)
	ctx := context.Background()
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for range 20 {
		a := wait(t, throttleAsync(s, "k", clQuota, 1))
		if a.err != nil {
			t.Fatal(a.err)
		}
		if !a.res.Limited {
			admitted++
		}
		time.Sleep(3 * probeInterval / 2)
	}
	if st := s.Stats(); admitted != 5 || st.Downs != 1 {
		t.Fatalf("%d of 20 admitted (limit 5), stats %+v: want the limit and one spell down", admitted, st)
	}
	if err := admin.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "back once it takes writes", func() bool { return !s.Stats().StoreDown })
}

// TestSharedFallbackError: with the store stopped, ops get
// ErrStoreUnavailable within the timeout, and succeed once it is back.
func TestSharedFallbackError(t *testing.T) {
	srv := redistest.Start(t)
	s := newFaultShared(t, srv, FallbackError)
	stop := make(chan struct{})
	done := loadWhile(s, stop)
	time.Sleep(100 * time.Millisecond)
	srv.Pause()
	waitFor(t, "down", func() bool { return s.Stats().StoreDown })
	time.Sleep(200 * time.Millisecond)
	close(stop)
	longest, errs := done()
	if len(errs) == 0 {
		t.Fatal("no op failed while the store was stopped")
	}
	for _, err := range errs {
		if err != ErrStoreUnavailable {
			t.Fatalf("error %v, want ErrStoreUnavailable", err)
		}
	}
	if longest > faultTimeout+faultSlack {
		t.Errorf("an op waited %v, timeout %v", longest, faultTimeout)
	}
	srv.Resume()
	waitFor(t, "back", func() bool { return !s.Stats().StoreDown })
	if a := wait(t, windowAsync(s, windowRule("x", engine.FamilyFW), 1)); a.err != nil {
		t.Fatalf("after the store came back: %v", a.err)
	}
}

// TestSharedStartsDown: a store that does not answer at Start is not an
// error under FallbackLocal: Shared starts down and decides locally.
func TestSharedStartsDown(t *testing.T) {
	srv := redistest.Start(t)
	srv.Pause()
	s := newFaultShared(t, srv, FallbackLocal)
	if !s.Stats().StoreDown {
		t.Fatal("not down")
	}
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || a.res.Remaining != 4 {
		t.Fatalf("local decision: %+v", a)
	}
	srv.Resume()
	waitFor(t, "back", func() bool { return !s.Stats().StoreDown })
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || a.res.Remaining != 4 {
		t.Fatalf("after the store came back: %+v, want the store's state (none)", a)
	}
}

// cutConn is a connection to the store that, once armed, lets the next
// script call through to the store and then drops the connection instead
// of delivering the store's reply: the call was carried out, its reply
// lost.
type cutConn struct {
	net.Conn
	armed *atomic.Bool
	cut   bool // a script call was written while armed: cut at the reply
}

func (c *cutConn) Write(p []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(p), []byte("evalsha")) && c.armed.CompareAndSwap(true, false) {
		c.cut = true
	}
	return c.Conn.Write(p)
}

func (c *cutConn) Read(p []byte) (int, error) {
	if !c.cut {
		return c.Conn.Read(p)
	}
	if _, err := c.Conn.Read(p); err != nil { // the store has answered
		return 0, err
	}
	c.Conn.Close()
	return 0, io.EOF
}

// TestSharedLostReplyAppliedOnce: a refund whose script call the store
// carried out but whose reply was lost with its connection is applied once,
// not once more by the client sending the call again (it would conflict
// with its own write and be decided again): the key then admits one
// request more, not two.
func TestSharedLostReplyAppliedOnce(t *testing.T) {
	srv := redistest.Start(t)
	lostReplyAppliedOnce(t, srv.URL(), false)
}

// TestSharedLostReplyAppliedOnceCluster: the same on a Redis Cluster,
// whose client sends a node's pipeline again after its connection dropped
// (as it follows MOVED and ASK, which no option separates): noResend, on
// each node's client, keeps the call from going again.
func TestSharedLostReplyAppliedOnceCluster(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	lostReplyAppliedOnce(t, "redis://"+strings.Join(addrs, ","), true)
}

// lostReplyAppliedOnce runs a refund whose call's reply is lost, on the
// store at url, through NewStoreClient's options.
func lostReplyAppliedOnce(t *testing.T, url string, cluster bool) {
	var armed atomic.Bool
	opts, err := storeOptions(url) // NewStoreClient's
	if err != nil {
		t.Fatal(err)
	}
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &cutConn{Conn: conn, armed: &armed}, nil
	}
	var c redis.UniversalClient = redis.NewClient(opts.Simple())
	if cluster {
		c = newStoreClusterClient(opts)
	}
	t.Cleanup(func() { c.Close() })
	s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}),
		Timeout: 5 * time.Second, NoDenyCache: true})
	startShared(t, s)
	for i := range 5 {
		if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || a.res.Limited {
			t.Fatalf("call %d: %+v", i+1, a)
		}
	}
	armed.Store(true)
	wait(t, throttleAsync(s, "k", clQuota, -1)) // by the store, or locally if the cut says it is down
	if armed.Load() {
		t.Fatal("the refund's call was not cut")
	}
	waitFor(t, "the store", func() bool { return !s.Stats().StoreDown })
	admitted := 0
	for range 3 {
		a := wait(t, throttleAsync(s, "k", clQuota, 1))
		if a.err != nil {
			t.Fatal(a.err)
		}
		if !a.res.Limited {
			admitted++
		}
	}
	if st := s.Stats(); admitted != 1 {
		t.Errorf("%d admitted after one refund, want 1; stats %+v", admitted, st)
	}
}

// TestSharedAsksClusterAtFirstAnswer: a single address of a Redis Cluster
// node that is down as Shared starts is asked whether it is a cluster node
// when it first answers, before anything else is sent to it, and Shared
// turns to a cluster client: every key is then decided in the store,
// whichever node holds it (a single client got MOVED for the keys of the
// other nodes, and the store counted as down after each), THROTTLE.ALL
// keeps Redis Cluster's hash-slot rule, the keyspace commands walk every
// master, and the invalidations of another instance arrive.
func TestSharedAsksClusterAtFirstAnswer(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartCluster(t, 3)
	node := nodes[1]
	node.Kill()
	ctx := context.Background()
	client, unsure, err := NewStoreClient(ctx, node.URL())
	if err != nil || !unsure {
		t.Fatalf("NewStoreClient of a node that is down: unsure %v, %v; want unsure", unsure, err)
	}
	s := NewShared(client, SharedOptions{Prefix: "ask:", Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	startShared(t, s)
	if !s.Stats().StoreDown {
		t.Fatal("the store answered at start")
	}
	if _, ok := s.Client().(*redis.ClusterClient); ok {
		t.Fatal("a cluster client before the store answered")
	}
	node.Restart()
	// The restarted node answers CLUSTERDOWN for a moment, until it has
	// rejoined the others.
	waitFor(t, "the cluster ok again", func() bool {
		for _, nd := range nodes {
			info, err := nd.Client(t).ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	waitFor(t, "the store back", func() bool { return !s.Stats().StoreDown })
	if _, ok := s.Client().(*redis.ClusterClient); !ok {
		t.Fatalf("the client is a %T once the store answered, want a cluster client", s.Client())
	}
	before := s.Stats()

	const n = 30
	for i := range n {
		k := fmt.Sprint("k", i)
		for want := int64(4); want >= 3; want-- {
			if a := wait(t, throttleAsync(s, k, clQuota, 1)); a.err != nil || a.res.Remaining != want {
				t.Fatalf("%s: %+v, want %d remaining", k, a, want)
			}
		}
	}
	if st := s.Stats(); st.Downs != before.Downs || st.LocalDecisions != before.LocalDecisions {
		t.Errorf("stats %+v, %+v before the decisions: want every decision made in the store", st, before)
	}
	for _, nd := range nodes {
		if size, err := nd.Client(t).DBSize(ctx).Result(); err != nil || size == 0 {
			t.Errorf("node %s holds %d keys (%v), want some", nd.Addr, size, err)
		}
	}
	if a := wait(t, allAsync(s, []engine.Rule{fwRule("a", 5), fwRule("b", 5)}, 1)); !errors.Is(a.err, ErrCrossSlot) {
		t.Errorf("THROTTLE.ALL across hash slots: %v, want CROSSSLOT", a.err)
	}
	keys := s.Keyspace()
	if m, err := keys.Len(ctx); err != nil || m != n {
		t.Errorf("the keyspace's Len = %d, %v; want %d", m, err, n)
	}
	for i := range n {
		if _, ok, err := keys.Get(ctx, fmt.Sprint("k", i)); err != nil || !ok {
			t.Fatalf("GET k%d: %v, %v", i, ok, err)
		}
	}

	// Another instance's invalidation reaches this one's subscription.
	other, _, err := NewStoreClient(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	b := NewShared(other, SharedOptions{Prefix: "ask:", Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	startShared(t, b)
	exhaustCL(t, s, "d")
	if !remembered(s, "ask:d") {
		t.Fatal("the refusal was not remembered")
	}
	if _, err := b.Keyspace().Delete(ctx, []string{"d"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deny entry dropped", func() bool { return !remembered(s, "ask:d") })
}

// TestSharedAsksSingleAtFirstAnswer: a single Redis down as Shared starts
// is asked when it first answers, and stays a single Redis's: THROTTLE.ALL
// is atomic across any keys, and the invalidations of another instance
// arrive through the subscription made then.
func TestSharedAsksSingleAtFirstAnswer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Kill()
	ctx := context.Background()
	client, unsure, err := NewStoreClient(ctx, srv.URL())
	if err != nil || !unsure {
		t.Fatalf("NewStoreClient of a store that is down: unsure %v, %v; want unsure", unsure, err)
	}
	s := NewShared(client, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	startShared(t, s)
	// Until the store says what it is, the whole keyspace's commands
	// refuse rather than walk the one node the client knows.
	if _, err := s.Keyspace().Len(ctx); !errors.Is(err, errStoreUnsure) {
		t.Errorf("DBSIZE before the store said what it is: %v, want errStoreUnsure", err)
	}
	srv.Restart()
	waitFor(t, "the store back", func() bool { return !s.Stats().StoreDown })
	if n, err := s.Keyspace().Len(ctx); err != nil || n != 0 {
		t.Errorf("DBSIZE once the store said what it is: %d, %v", n, err)
	}
	if _, ok := s.Client().(*redis.Client); !ok {
		t.Fatalf("the client is a %T, want a single Redis's", s.Client())
	}
	if a := wait(t, allAsync(s, []engine.Rule{fwRule("a", 5), fwRule("b", 5)}, 1)); a.err != nil || a.d.Limited {
		t.Errorf("THROTTLE.ALL across hash slots on a single Redis: %+v, want admitted", a)
	}
	waitFor(t, "the subscription made", s.isSubscribed.Load)
	refuseThenDeleteElsewhere(t, s, srv)
	waitFor(t, "the deny entry dropped", func() bool { return !remembered(s, "d") })
	if st := s.Stats(); st.Downs != 1 || st.LocalDecisions != 0 {
		t.Errorf("stats %+v: want the one spell down at start and every decision since made in the store", st)
	}
}

// TestSharedCloseWhileStoreStopped: Close with a round waiting on a stopped
// store (SIGSTOP) returns at once, the round's op answered by the fallback:
// closing the client cuts the call, which would otherwise wait out the
// client's read timeout (3 s).
func TestSharedCloseWhileStoreStopped(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 10 * time.Second})
	startShared(t, s)
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil {
		t.Fatal(a.err)
	}
	srv.Pause()
	defer srv.Resume()
	ch := throttleAsync(s, "k", clQuota, 1)
	time.Sleep(100 * time.Millisecond) // the round waits on the stopped store
	start := time.Now()
	s.Close()
	if took := time.Since(start); took > 2*time.Second { // about 3 s when the call is waited out
		t.Errorf("Close took %v with a round waiting on a stopped store, want it within 2s", took)
	}
	if a := wait(t, ch); a.err != nil || a.res.Remaining != 4 {
		t.Errorf("the op under way at Close: %+v, want the local engine's decision", a)
	}
}

// TestSharedStoreRefusingInfo: a store whose user may not run INFO (an
// ACL's -@dangerous or -info: NOPERM), or that has renamed INFO away,
// cannot say whether it is a Redis Cluster node, and never will: it is
// taken for what its address says, a single Redis, whether it answers at
// NewStoreClient or first answers later, and decides in the store. (Asked
// again at each probe, it counted as down for good.)
func TestSharedStoreRefusingInfo(t *testing.T) {
	t.Parallel()
	srv := redistest.StartWith(t, "--user", "limited", "on", ">pw", "~*", "&*", "+@all", "-info")
	url := "redis://limited:pw@" + srv.Addr
	ctx := context.Background()
	if err := srv.Client(t).Info(ctx, "cluster").Err(); err != nil {
		t.Fatalf("the default user's INFO: %v", err)
	}
	limited := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "limited", Password: "pw"})
	err := limited.Info(ctx, "cluster").Err()
	limited.Close()
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("user limited's INFO: %v, want NOPERM", err)
	}

	// Answering at start: a single Redis's client, and Start succeeds
	// with no fallback to hide behind.
	client, unsure, err := NewStoreClient(ctx, url)
	if err != nil || unsure {
		t.Fatalf("NewStoreClient of a store refusing INFO: unsure %v, %v; want a single Redis's client", unsure, err)
	}
	if _, ok := client.(*redis.Client); !ok {
		t.Fatalf("NewStoreClient gives a %T, want a single Redis's client", client)
	}
	s := NewShared(client, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second,
		Fallback: FallbackError})
	startShared(t, s)
	if a := wait(t, throttleAsync(s, "a", clQuota, 1)); a.err != nil || a.res.Remaining != 4 {
		t.Fatalf("CL.THROTTLE a: %+v", a)
	}

	// Not answering at start: asked at its first answer, which refuses.
	srv.Pause()
	client, unsure, err = NewStoreClient(ctx, url)
	srv.Resume()
	if err != nil || !unsure {
		t.Fatalf("NewStoreClient of a store that is stopped: unsure %v, %v; want unsure", unsure, err)
	}
	b := NewShared(client, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	b.Start(ctx) // fails over to the local engine if the store is not back yet
	t.Cleanup(func() { b.Close() })
	waitFor(t, "the store back", func() bool { return !b.Stats().StoreDown })
	if a := wait(t, throttleAsync(b, "a", clQuota, 1)); a.err != nil || a.res.Remaining != 3 {
		t.Fatalf("CL.THROTTLE a through the second Shared: %+v, want the store's state", a)
	}
	if n, err := srv.Client(t).Exists(ctx, "a").Result(); err != nil || n != 1 {
		t.Errorf("the store holds a: %d, %v", n, err)
	}

	// INFO renamed away: unknown command.
	renamed := redistest.StartWith(t, "--rename-command", "INFO", "")
	client, unsure, err = NewStoreClient(ctx, renamed.URL())
	if err != nil || unsure {
		t.Fatalf("NewStoreClient of a store without INFO: unsure %v, %v; want a single Redis's client", unsure, err)
	}
	client.Close()
}

// TestSharedStartWhileStoreStopped: Start with a store that is known (it
// answered NewStoreClient) but stopped (SIGSTOP) returns once its first
// try has timed out, not after the subscription's connection has waited
// out the client's read timeout (3 s) as well; once the store answers,
// the invalidations of another instance arrive through the subscription
// made meanwhile.
func TestSharedStartWhileStoreStopped(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, unsure, err := NewStoreClient(context.Background(), srv.URL())
	if err != nil || unsure {
		t.Fatalf("NewStoreClient: unsure %v, %v", unsure, err)
	}
	srv.Pause()
	s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 250 * time.Millisecond})
	start := time.Now()
	startShared(t, s)
	took := time.Since(start)
	srv.Resume()
	if took > 2*time.Second { // the first try's 1 s, and 3 s more when the subscription is waited for
		t.Errorf("Start took %v with the store stopped, want within 2s", took)
	}
	waitFor(t, "the store back", func() bool { return !s.Stats().StoreDown })
	waitFor(t, "the subscription made", s.isSubscribed.Load)
	refuseThenDeleteElsewhere(t, s, srv)
	waitFor(t, "the deny entry dropped", func() bool { return !remembered(s, "d") })
}
