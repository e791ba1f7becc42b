package persist

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// equivCase is one random decision: rules, the keys' states as written to
// the store (FamilyNone: absent), and a quantity.
type equivCase struct {
	op     engine.Op
	rules  []engine.Rule
	states []engine.Record
	qty    int64
	// qtys, for half the OpAll cases, are a quantity a rule: a
	// ThrottleAllEach, as RLS calls it.
	qtys []int64
}

// randomCase draws a case at now: mostly small limits and states near
// their edges, some states a few ms ahead of now (another instance's
// clock).
func randomCase(rng *rand.Rand, i int, now int64) equivCase {
	c := equivCase{op: engine.OpWindow, qty: rng.Int64N(4)}
	n := 1
	switch rng.IntN(5) {
	case 0:
		c.op = engine.OpThrottle
	case 1:
		c.op, n = engine.OpAll, 2+rng.IntN(2)
	}
	fams := []engine.Family{engine.FamilyCL, engine.FamilySW, engine.FamilySWC, engine.FamilyFW}
	for j := range n {
		f := fams[1+rng.IntN(3)]
		if c.op == engine.OpThrottle || c.op == engine.OpAll && rng.IntN(3) == 0 {
			f = engine.FamilyCL
		}
		if c.op == engine.OpWindow && rng.IntN(4) == 0 {
			f = engine.FamilyLB
		}
		r := engine.Rule{Key: []byte(fmt.Sprintf("eq:%d:%d", i, j)), Family: f}
		r.GCRA = engine.GCRAQuota{MaxBurst: rng.Int64N(5), Count: 1 + rng.Int64N(5), Period: 1 + rng.Int64N(10)}
		w := int64(time.Second) * (1 + rng.Int64N(60))
		r.Window = engine.WindowQuota{Limit: 1 + rng.Int64N(6), Window: w}
		r.Leaky = engine.LeakyQuota{Count: 1 + rng.Int64N(6), Period: w, MaxWait: w * rng.Int64N(3)}
		c.rules = append(c.rules, r)
		st := engine.Record{Key: string(r.Key)}
		if rng.IntN(5) > 0 {
			st.Family = f
			st.ExpireAtMs = now/1e6 + 3_600_000
			switch f {
			case engine.FamilyCL:
				st.TAT = uint64(now + rng.Int64N(int64(40*time.Second)) - int64(10*time.Second))
			case engine.FamilySW:
				k := 1 + rng.IntN(int(r.Window.Limit))
				for range k {
					st.Log = append(st.Log, now-rng.Int64N(w*3/2)+rng.Int64N(int64(3*time.Millisecond)))
					st.Quantities = append(st.Quantities, uint32(1+rng.IntN(2)))
				}
				slices.Sort(st.Log)
			case engine.FamilySWC, engine.FamilyFW:
				t := now - rng.Int64N(2*w) + rng.Int64N(int64(3*time.Millisecond))
				st.Start = t - t%w
				st.Cur = uint32(rng.Int64N(r.Window.Limit + 1))
				if f == engine.FamilySWC {
					st.Prev = uint32(rng.Int64N(r.Window.Limit + 1))
				}
			case engine.FamilyLB:
				st.Tail = now + rng.Int64N(3*w) - w/2
			}
		}
		c.states = append(c.states, st)
	}
	if c.op == engine.OpAll && rng.IntN(2) == 0 {
		c.qtys = make([]int64, n)
		for j := range c.qtys {
			c.qtys[j] = rng.Int64N(4)
		}
	}
	return c
}

// TestSharedEqualsDecide: random states written to a real Redis in the
// store's format, decided through Shared, give engine.Decide's decision on
// the same states at the same time, and leave Decide's new states in the
// store.
func TestSharedEqualsDecide(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond).UnixNano() + 123_456 // not on a ms
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}),
		Timeout: 10 * time.Second, NoDenyCache: true, now: func() int64 { return now }})
	startShared(t, s)
	rng := rand.New(rand.NewPCG(7, uint64(now)))
	for i := range 300 {
		tc := randomCase(rng, i, now)
		for _, st := range tc.states {
			if st.Family == engine.FamilyNone {
				continue
			}
			v := encodeValue(&st)
			if err := rdb.Do(ctx, "SET", st.Key, v.val, "PXAT", v.expireAtMs).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// The reference: Decide at the time Shared decides at.
		want := slices.Clone(tc.states)
		at := now
		for _, st := range want {
			at = max(at, newestTime(&st))
		}
		var wantD engine.Decision
		var wantErr error
		var wantEach, gotEach []engine.Decision
		if tc.qtys != nil {
			wantEach = make([]engine.Decision, len(tc.rules))
			wantD, wantErr = engine.DecideEach(at, tc.rules, want, tc.qtys, wantEach)
		} else {
			wantD, wantErr = engine.Decide(at, tc.op, tc.rules, want, tc.qty)
		}

		var got answer
		switch {
		case tc.qtys != nil:
			ch := make(chan answer, 1)
			s.ThrottleAllEach(tc.rules, tc.qtys, func(d engine.Decision, each []engine.Decision, err error) {
				gotEach = each
				ch <- answer{d: d, err: err}
			})
			got = wait(t, ch)
		case tc.op == engine.OpThrottle:
			got = wait(t, throttleAsync(s, string(tc.rules[0].Key), tc.rules[0].GCRA, tc.qty))
		case tc.op == engine.OpWindow:
			got = wait(t, windowAsync(s, tc.rules[0], tc.qty))
		default:
			got = wait(t, allAsync(s, tc.rules, tc.qty))
		}
		ok := got.err == wantErr
		if tc.op == engine.OpThrottle {
			ok = ok && got.res == wantD.Seconds()
		} else {
			ok = ok && got.d == wantD
		}
		if tc.qtys != nil && wantErr == nil {
			ok = ok && slices.Equal(gotEach, wantEach)
		}
		if !ok {
			t.Fatalf("case %d %+v:\n got %+v %v %+v\nwant %+v %v %+v", i, tc, got.d, got.err, gotEach, wantD, wantErr, wantEach)
		}
		for j, st := range want {
			if wantErr != nil && !st.Deleted {
				st = tc.states[j] // untouched
			}
			val, err := rdb.Get(ctx, st.Key).Result()
			if err == redis.Nil && !st.Deleted && st.ExpireAtMs < time.Now().UnixMilli()+100 {
				// The test's clock stands still while the store's runs on:
				// a key written to expire at once is gone.
				continue
			}
			if st.Deleted || st.Family == engine.FamilyNone {
				if err != redis.Nil {
					t.Fatalf("case %d key %d: %q in the store, want none (%+v)", i, j, val, tc)
				}
				continue
			}
			if wantVal := encodeValue(&st).val; val != wantVal {
				t.Fatalf("case %d key %d: store holds %q, want %q (%+v)", i, j, val, wantVal, tc)
			}
			exp := rdb.Do(ctx, "PEXPIRETIME", st.Key).Val().(int64)
			// A state read back has its expiry from PTTL and the store's
			// TIME, within a millisecond.
			if d := exp - st.ExpireAtMs; d < -2 || d > 2 {
				t.Fatalf("case %d key %d: expires at %d, want %d", i, j, exp, st.ExpireAtMs)
			}
		}
	}
}

// TestSharedRedisCellFormat: a CL key as redis-cell writes it (SET key
// <tat> PX <ms>) is decided on as engine.Decide decides on that TAT, and
// what Shared writes reads back as a decimal TAT with a PXAT expiry.
func TestSharedRedisCellFormat(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond).UnixNano()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}),
		Timeout: 10 * time.Second, now: func() int64 { return now }})
	startShared(t, s)
	q := engine.GCRAQuota{MaxBurst: 9, Count: 10, Period: 60}
	tat := uint64(now + 30e9) // five requests' worth ahead
	if err := rdb.Do(ctx, "SET", "rc", strconv.FormatUint(tat, 10), "PX", 30_000).Err(); err != nil {
		t.Fatal(err)
	}
	recs := []engine.Record{{Key: "rc", Family: engine.FamilyCL, TAT: tat, ExpireAtMs: now/1e6 + 30_000}}
	rules := []engine.Rule{{Key: []byte("rc"), Family: engine.FamilyCL, GCRA: q}}
	wantD, err := engine.Decide(now, engine.OpThrottle, rules, recs, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := wait(t, throttleAsync(s, "rc", q, 2))
	if got.err != nil || got.res != wantD.Seconds() || got.res.Remaining != 3 {
		t.Fatalf("got %+v %v, want %+v", got.res, got.err, wantD.Seconds())
	}
	val := rdb.Get(ctx, "rc").Val()
	if val != strconv.FormatUint(recs[0].TAT, 10) || recs[0].TAT != tat+12e9 {
		t.Fatalf("stored %q, want the decimal TAT %d", val, recs[0].TAT)
	}
	if exp := rdb.Do(ctx, "PEXPIRETIME", "rc").Val().(int64); exp != recs[0].ExpireAtMs {
		t.Fatalf("expires at %d, want %d", exp, recs[0].ExpireAtMs)
	}
}
