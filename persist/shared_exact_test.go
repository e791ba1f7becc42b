package persist

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// longWindow is a window no test run straddles the end of: FW and SWC
// buckets are aligned to its multiples since the epoch (the next boundary
// is in 2030).
const longWindow = 10 * 365 * 24 * int64(time.Hour)

// exactQuota is CL.THROTTLE k 99 100 3600: 100 at once, then one every 36s.
var exactQuota = engine.GCRAQuota{MaxBurst: 99, Count: 100, Period: 3600}

func windowRule(key string, f engine.Family) engine.Rule {
	return engine.Rule{Key: []byte(key), Family: f, Window: engine.WindowQuota{Limit: 100, Window: longWindow}}
}

// startInstances starts n Shared instances, each with its own client from
// newClient, on the real clock.
func startInstances(t *testing.T, n int, noDeny bool, newClient func() redis.UniversalClient) []*Shared {
	t.Helper()
	var out []*Shared
	for range n {
		c := newClient()
		t.Cleanup(func() { c.Close() })
		local := engine.New(engine.Options{SweepInterval: -1})
		// A generous timeout: this test is about exactness, and -race on a
		// loaded machine is slow; it checks that nothing fell back.
		s := NewShared(c, SharedOptions{Local: local, Timeout: 10 * time.Second, NoDenyCache: noDeny})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}

// runExact has 60 goroutines spread over the instances call 20 times each
// on one key of each family and on one THROTTLE.ALL, all limited to 100,
// and checks that exactly 100 were admitted of each, and that the
// THROTTLE.ALL's keys hold exactly what it admitted.
func runExact(t *testing.T, insts []*Shared, rdb redis.Cmdable, tag string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	allRules := []engine.Rule{
		{Key: []byte(tag + "all:cl"), Family: engine.FamilyCL, GCRA: exactQuota},
		windowRule(tag+"all:sw", engine.FamilySW),
		windowRule(tag+"all:fw", engine.FamilyFW),
	}
	const goroutines, calls = 60, 20
	var mu sync.Mutex
	admitted := map[string]int{}
	var failures []error
	var wg sync.WaitGroup
	for g := range goroutines {
		s := insts[g%len(insts)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				chs := map[string]<-chan answer{
					"cl":  throttleAsync(s, "cl", exactQuota, 1),
					"sw":  windowAsync(s, windowRule("sw", engine.FamilySW), 1),
					"swc": windowAsync(s, windowRule("swc", engine.FamilySWC), 1),
					"fw":  windowAsync(s, windowRule("fw", engine.FamilyFW), 1),
					"all": allAsync(s, allRules, 1),
				}
				for name, ch := range chs {
					a := <-ch
					mu.Lock()
					if a.err != nil {
						failures = append(failures, errors.New(name+": "+a.err.Error()))
					} else if !a.res.Limited {
						admitted[name]++
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	if len(failures) > 0 {
		t.Fatalf("%d calls failed, the first: %v", len(failures), failures[0])
	}
	for _, name := range []string{"cl", "sw", "swc", "fw", "all"} {
		if admitted[name] != 100 {
			t.Errorf("%s: %d admitted of %d calls, want exactly 100", name, admitted[name], goroutines*calls)
		}
	}
	// The THROTTLE.ALL's keys hold its 100 admissions, no more, no fewer.
	var sw, fw engine.Record
	if err := decodeState(rdb.Get(ctx, tag+"all:sw").Val(), &sw); err != nil || len(sw.Log) != 100 {
		t.Errorf("all:sw holds %d requests (%v), want 100", len(sw.Log), err)
	}
	if err := decodeState(rdb.Get(ctx, tag+"all:fw").Val(), &fw); err != nil || fw.Cur != 100 {
		t.Errorf("all:fw counts %d (%v), want 100", fw.Cur, err)
	}
	// 100 admissions move the TAT 100 emission intervals (36 s) past the
	// first one's time.
	tat, err := strconv.ParseInt(rdb.Get(ctx, tag+"all:cl").Val(), 10, 64)
	lo, hi := start.Add(-time.Second).UnixNano()+100*36e9, end.Add(time.Second).UnixNano()+100*36e9
	if err != nil || tat < lo || tat > hi {
		t.Errorf("all:cl TAT %d (%v), want 100 intervals after the run's start: in [%d, %d]", tat, err, lo, hi)
	}
	var trips, decided, conflicts, hits int64
	for _, s := range insts {
		st := s.Stats()
		if st.LocalDecisions != 0 || st.Timeouts != 0 || st.Downs != 0 {
			t.Errorf("an instance fell back: %+v", st)
		}
		trips, decided, conflicts, hits = trips+st.RoundTrips, decided+st.Decisions, conflicts+st.Conflicts, hits+st.DenyCacheHits
	}
	t.Logf("%d calls in %v: %d decided in the store in %d round trips (%.1f per round trip), %d conflicts, %d deny-cache hits",
		goroutines*calls*5, end.Sub(start).Round(time.Millisecond), decided, trips, float64(decided)/float64(trips), conflicts, hits)
}

// TestSharedExactAcrossInstances: three instances on one Redis admit
// exactly the limit between them, with the deny cache and without it
// (every call then goes to the store).
// On Valkey the single keys that hold a value are checked and written by
// SET IFEQ (shared_native.go), which Stats counts; on Redis every key goes
// through the script (no key here is known absent, the store's own SET NX
// being for keys whose value expired), and only Valkey is found to have
// SET IFEQ.
func TestSharedExactAcrossInstances(t *testing.T) {
	for _, store := range sharedStores() {
		for _, noDeny := range []bool{false, true} {
			t.Run(store.name+"/NoDenyCache="+strconv.FormatBool(noDeny), func(t *testing.T) {
				srv := store.start(t)
				insts := startInstances(t, 3, noDeny, func() redis.UniversalClient {
					return redis.NewClient(&redis.Options{Addr: srv.Addr})
				})
				runExact(t, insts, srv.Client(t), "")
				var sets int64
				for _, s := range insts {
					sets += s.Stats().NativeSets
					if s.ifeq.Load() != store.ifeq {
						t.Fatalf("%s: SET IFEQ found %v", store.name, s.ifeq.Load())
					}
				}
				if store.ifeq != (sets > 0) {
					t.Fatalf("%s: %d SETs outside the script, want them only where the store has SET IFEQ", store.name, sets)
				}
			})
		}
	}
}

// sharedStore is a server the shared tests run on.
type sharedStore struct {
	name  string
	start func(testing.TB) *redistest.Server
	ifeq  bool // it has SET IFEQ
}

// sharedStores are Redis (7.0 on Debian 12: single keys through the script,
// but SET NX for keys known absent) and Valkey (8.1: SET IFEQ as well).
func sharedStores() []sharedStore {
	return []sharedStore{{"redis", redistest.Start, false}, {"valkey", redistest.StartValkey, true}}
}

// TestSharedExactCluster: the same on a three-node Redis Cluster, with the
// THROTTLE.ALL's keys in one slot by a hash tag; keys in different slots
// get ErrCrossSlot.
func TestSharedExactCluster(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	newClient := func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}) }
	insts := startInstances(t, 3, false, newClient)
	rdb := newClient()
	t.Cleanup(func() { rdb.Close() })
	runExact(t, insts, rdb, "{t}")

	a := wait(t, allAsync(insts[0], []engine.Rule{windowRule("a", engine.FamilyFW), windowRule("b", engine.FamilyFW)}, 1))
	if a.err != ErrCrossSlot {
		t.Fatalf("keys in two slots: %v, want ErrCrossSlot", a.err)
	}
	if n := rdb.Exists(context.Background(), "a", "b").Val(); n != 0 {
		t.Fatalf("a refused THROTTLE.ALL wrote %d keys", n)
	}
}
