package persist

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// TestSharedNativeProbe: Shared finds SET IFEQ on Valkey and not on Redis
// 7, and a store that lacks it is never sent it.
func TestSharedNativeProbe(t *testing.T) {
	for _, store := range sharedStores() {
		t.Run(store.name, func(t *testing.T) {
			srv := store.start(t)
			c := redis.NewClient(&redis.Options{Addr: srv.Addr})
			t.Cleanup(func() { c.Close() })
			s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 10 * time.Second})
			startShared(t, s)
			if got := s.ifeq.Load(); got != store.ifeq {
				t.Fatalf("SET IFEQ found: %v, want %v", got, store.ifeq)
			}
			if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || a.res.Limited {
				t.Fatalf("first call: %+v", a)
			}
		})
	}
}

// TestSharedNativeMatchesScript: on one store, an instance that checks and
// writes single keys with the store's own SET (NX, and IFEQ on Valkey), and
// one that sends everything through the script (which TestSharedEqualsDecide
// holds to the engine), each under its own prefix, give the same replies
// to the same random calls at the same times and leave the same values and
// expiries, while the keys are also changed behind their backs (deleted,
// overwritten, made another type), which makes native SETs conflict.
func TestSharedNativeMatchesScript(t *testing.T) {
	for _, store := range sharedStores() {
		t.Run(store.name, func(t *testing.T) { testNativeMatchesScript(t, store) })
	}
}

func testNativeMatchesScript(t *testing.T, store sharedStore) {
	srv := store.start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	// Both decide at the same times, on a clock that stays behind the
	// store's (10s at the start, about 2s more by the end) so that no key
	// the store holds is past its expiry on the instances' clock; every
	// expiry is at least 30s after that clock, so that none comes while
	// the test runs.
	var now atomic.Int64
	now.Store(time.Now().Add(-10 * time.Second).UnixNano())
	newInst := func(prefix string, scriptOnly bool) *Shared {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		t.Cleanup(func() { c.Close() })
		s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Prefix: prefix,
			Timeout: 10 * time.Second, NoDenyCache: true, ScriptOnly: scriptOnly, now: now.Load})
		startShared(t, s)
		return s
	}
	native, script := newInst("n:", false), newInst("s:", true)
	if native.ifeq.Load() != store.ifeq || script.ifeq.Load() {
		t.Fatalf("SET IFEQ found: native %v, script-only %v; want %v, false", native.ifeq.Load(), script.ifeq.Load(), store.ifeq)
	}

	rng := rand.New(rand.NewPCG(11, 12))
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	quotas := []engine.GCRAQuota{{MaxBurst: 4, Count: 1, Period: 60}, {MaxBurst: 2, Count: 2, Period: 120}}
	families := []engine.Family{engine.FamilySW, engine.FamilySWC, engine.FamilyFW}
	window := func(key string) engine.Rule {
		return engine.Rule{Key: []byte(key), Family: families[rng.IntN(len(families))],
			Window: engine.WindowQuota{Limit: int64(1 + rng.IntN(5)), Window: int64(time.Duration(30+rng.IntN(60)) * time.Second)}}
	}
	for i := range 2000 {
		key := keys[rng.IntN(len(keys))]
		// Behind both instances' backs, to both prefixes alike.
		switch r := rng.IntN(40); {
		case r == 0:
			rdb.Del(ctx, "n:"+key, "s:"+key)
		case r == 1:
			// One expiry for both, at the same instant: a TTL would start at
			// each SET's own time, apart by as long as the machine makes
			// the second call wait.
			v := fmt.Sprint(now.Load() + rng.Int64N(int64(time.Minute)))
			at := redis.SetArgs{ExpireAt: time.Now().Add(time.Minute).Truncate(time.Millisecond)}
			rdb.SetArgs(ctx, "n:"+key, v, at)
			rdb.SetArgs(ctx, "s:"+key, v, at)
		case r == 2:
			rdb.Del(ctx, "n:"+key, "s:"+key)
			rdb.RPush(ctx, "n:"+key, "x")
			rdb.RPush(ctx, "s:"+key, "x")
		}
		// Mostly CL keys, most often on the same quota: their values are
		// what SET IFEQ compares.
		qty := rng.Int64N(4)
		var call func(s *Shared) <-chan answer
		other := key
		switch r := rng.IntN(10); {
		case r < 6:
			q := quotas[0]
			if r == 5 {
				q = quotas[rng.IntN(len(quotas))]
				qty = rng.Int64N(5) - 1 // a refund now and then
			}
			call = func(s *Shared) <-chan answer { return throttleAsync(s, key, q, qty) }
		case r < 9:
			rule := window(key)
			call = func(s *Shared) <-chan answer { return windowAsync(s, rule, qty) }
		default:
			other = keys[rng.IntN(len(keys))]
			rules := []engine.Rule{{Key: []byte(key), Family: engine.FamilyCL, GCRA: quotas[0]}, window(other)}
			if other == key {
				rules = rules[:1]
			}
			call = func(s *Shared) <-chan answer { return allAsync(s, rules, qty) }
		}
		want := wait(t, call(script))
		got := wait(t, call(native))
		if got.res != want.res || got.d != want.d || fmt.Sprint(got.err) != fmt.Sprint(want.err) {
			t.Fatalf("call %d on %q: native %+v %v, script %+v %v", i, key, got.res, got.err, want.res, want.err)
		}
		for _, k := range []string{key, other} {
			vals, err := rdb.MGet(ctx, "n:"+k, "s:"+k).Result()
			if err != nil && !redis.HasErrorPrefix(err, "WRONGTYPE") {
				t.Fatal(err)
			}
			if fmt.Sprint(vals[0]) != fmt.Sprint(vals[1]) {
				t.Fatalf("call %d: key %q holds %v natively, %v through the script", i, k, vals[0], vals[1])
			}
			pipe := rdb.Pipeline()
			en, es := pipe.PExpireTime(ctx, "n:"+k), pipe.PExpireTime(ctx, "s:"+k)
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			// A state read back after a conflict has its expiry from PTTL
			// and the store's TIME, within a millisecond, on each side.
			if d := en.Val() - es.Val(); d < -2*time.Millisecond || d > 2*time.Millisecond {
				t.Fatalf("call %d: key %q expires at %v natively, %v through the script", i, k, en.Val(), es.Val())
			}
		}
		now.Add(rng.Int64N(int64(2 * time.Millisecond)))
	}
	st := native.Stats()
	t.Logf("%d SETs outside the script, %d conflicts", st.NativeSets, st.Conflicts)
	// On Valkey every single key set goes natively, on Redis only those
	// known absent (about 70 a run: keys deleted behind the instances'
	// backs, once a conflict has told them).
	least := int64(200)
	if !store.ifeq {
		least = 30
	}
	if st.NativeSets < least || st.Conflicts == 0 || script.Stats().NativeSets != 0 {
		t.Fatalf("%d SETs outside the script (%d script-only) and %d conflicts: the native path was hardly run",
			st.NativeSets, script.Stats().NativeSets, st.Conflicts)
	}
}

// TestSharedNewKeyRoundTrips: a key the value cache does not hold goes
// through the script, which creates it when absent and, when another
// instance made it, carries its state back (two round trips, as before the
// store's own SET NX); a key known absent, its value past its expiry, is
// created with SET NX in one round trip, or three when another instance
// made it meanwhile.
func TestSharedNewKeyRoundTrips(t *testing.T) {
	m := miniredis.RunT(t)
	var now atomic.Int64
	now.Store(time.Now().Truncate(time.Millisecond).UnixNano())
	m.SetTime(time.Unix(0, now.Load()))
	client := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	s := NewShared(client, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Prefix: "p:",
		Timeout: 5 * time.Second, NoDenyCache: true, now: now.Load})
	startShared(t, s)
	later := func(d time.Duration) {
		now.Add(int64(d))
		m.FastForward(d) // the store drops the keys that expired
		m.SetTime(time.Unix(0, now.Load()))
	}
	tat := func() string { return strconv.FormatInt(now.Load()+int64(time.Minute), 10) }
	for _, step := range []struct {
		name        string
		key         string
		before      func()
		trips, sets int64
	}{
		{"made by another instance, unseen", "other", func() { m.Set("p:other", tat()) }, 2, 0},
		{"absent and unseen", "fresh", nil, 1, 0},
		{"expired: known absent", "fresh", func() { later(time.Hour) }, 1, 1},
		{"known absent, made by another instance", "fresh", func() { later(time.Hour); m.Set("p:fresh", tat()) }, 3, 1},
	} {
		if step.before != nil {
			step.before()
		}
		st0 := s.Stats()
		if a := wait(t, throttleAsync(s, step.key, clQuota, 1)); a.err != nil || a.res.Limited {
			t.Fatalf("%s: %+v", step.name, a)
		}
		st := s.Stats()
		if trips, sets := st.RoundTrips-st0.RoundTrips, st.NativeSets-st0.NativeSets; trips != step.trips || sets != step.sets {
			t.Errorf("%s: %d round trips and %d SETs outside the script, want %d and %d", step.name, trips, sets, step.trips, step.sets)
		}
		if !m.Exists("p:" + step.key) {
			t.Errorf("%s: the key was not written", step.name)
		}
	}
}
