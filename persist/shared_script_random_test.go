package persist

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// TestCASScriptRandom: random calls of groups of every shape (one
// key or several; expected absent, a value, another type; matching or
// not; kept, set or deleted) against a model of the script, in a real
// Redis and in miniredis. Every other trial's values are all decimal
// numbers, which the call sends as one JSON argument; the others hold
// values that are not, sent one argument each.
func TestCASScriptRandom(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		casRandom(t, srv.Client(t))
	})
	t.Run("miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { c.Close() })
		casRandom(t, c)
	})
}

type casActual struct {
	kind valueKind
	val  string
	exp  int64 // PXAT of a value set by the script; 0 for the initial
}

func casRandom(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	jsonTrials := 0
	defer func() {
		if jsonTrials == 0 && !t.Failed() {
			t.Error("no trial sent its values as JSON")
		}
	}()
	for trial := range 300 {
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		exp := time.Now().Add(time.Hour).UnixMilli() + int64(trial)
		// numeric: the trial's values are decimal numbers, as CL keys'
		// are (and the JSON form is taken); otherwise they are not.
		numeric := trial%2 == 0
		value := func(prefix string, n int) string {
			if numeric {
				return strconv.Itoa(n)
			}
			return prefix + strconv.Itoa(n)
		}
		var groups [][]casKey
		actual := map[string]*casActual{}
		nk := 0
		ng := 1 + rng.IntN(8)
		for range ng {
			size := 1
			if rng.IntN(3) == 0 {
				size = 2 + rng.IntN(3)
			}
			var g []casKey
			for range size {
				key := fmt.Sprintf("k%d", nk)
				nk++
				a := &casActual{}
				switch rng.IntN(3) {
				case 0:
					a.kind = kindAbsent
				case 1:
					a.kind, a.val = kindValue, value("v", rng.IntN(3))
					c.Set(ctx, key, a.val, 0)
				default:
					a.kind = kindForeign
					c.RPush(ctx, key, "x")
				}
				actual[key] = a
				ck := casKey{key: key}
				// expected: usually what is there
				ek := []valueKind{kindAbsent, kindValue, kindForeign}[rng.IntN(3)]
				if rng.IntN(2) == 0 {
					ek = a.kind
				}
				ck.expected = storeValue{kind: ek}
				if ek == kindValue {
					ck.expected.val = value("v", rng.IntN(3))
					if a.kind == kindValue && rng.IntN(2) == 0 {
						ck.expected.val = a.val
					}
					if rng.IntN(3) == 0 {
						// a CL TAT, as a number
						ck.expected = storeValue{kind: kindValue, tat: uint64(rng.IntN(2)), num: true}
					}
				}
				ck.write = []casWrite{writeKeep, writeSet, writeDel}[rng.IntN(3)]
				if ck.write == writeSet {
					ck.newVal = storeValue{kind: kindValue, val: value("n", 1000+nk), expireAtMs: exp + int64(nk)}
				}
				g = append(g, ck)
			}
			groups = append(groups, g)
		}
		// tats as values
		for _, g := range groups {
			for _, k := range g {
				if k.expected.num && rng.IntN(2) == 0 {
					a := actual[k.key]
					if a.kind == kindValue {
						a.val = fmt.Sprint(k.expected.tat)
						c.Set(ctx, k.key, a.val, 0)
					}
				}
			}
		}
		// model
		wantConflict := make([]bool, len(groups))
		want := map[string]casActual{}
		for key, a := range actual {
			want[key] = *a
		}
		for gi, g := range groups {
			ok := true
			for _, k := range g {
				a := actual[k.key]
				ev := k.expected.val
				if k.expected.num {
					ev = fmt.Sprint(k.expected.tat)
				}
				switch k.expected.kind {
				case kindAbsent:
					ok = ok && a.kind == kindAbsent
				case kindValue:
					ok = ok && a.kind == kindValue && a.val == ev
				case kindForeign:
					ok = ok && a.kind == kindForeign
				}
			}
			wantConflict[gi] = !ok
			if !ok {
				continue
			}
			for _, k := range g {
				switch k.write {
				case writeSet:
					want[k.key] = casActual{kind: kindValue, val: k.newVal.val, exp: k.newVal.expireAtMs}
				case writeDel:
					want[k.key] = casActual{kind: kindAbsent}
				}
			}
		}
		call := &casCall{}
		for _, g := range groups {
			call.add(g)
		}
		replies, errs, _, _ := runCAS(ctx, c, []*casCall{call}, nil, false)
		if errs[0] != nil {
			t.Fatalf("trial %d: %v (codes %s)", trial, errs[0], call.codes)
		}
		// The JSON form is taken exactly when there are values and each is
		// a number.
		values, numbers := 0, 0
		for _, g := range groups {
			for _, k := range g {
				if k.expected.kind == kindValue {
					values++
					if k.expected.num || isDigits(k.expected.val) {
						numbers++
					}
				}
				if k.write == writeSet {
					values += 2
					numbers++ // the expiry
					if isDigits(k.newVal.val) {
						numbers++
					}
				}
			}
		}
		asJSON := slices.Contains(call.argv, any(&call.jsonArg))
		if asJSON != (values > 0 && numbers == values) {
			t.Fatalf("trial %d (codes %s): values sent as JSON %v, %d of %d values numbers", trial, call.codes, asJSON, numbers, values)
		}
		if asJSON {
			jsonTrials++
		}
		for gi, g := range groups {
			cur := replies[0].conflicted(gi)
			if (cur != nil) != wantConflict[gi] {
				t.Fatalf("trial %d (codes %s): group %d conflicted %v, want %v", trial, call.codes, gi+1, cur != nil, wantConflict[gi])
			}
			for j, k := range g {
				if cur == nil {
					break
				}
				a := actual[k.key]
				if cur[j].kind != a.kind || cur[j].val != a.val {
					t.Fatalf("trial %d (codes %s): group %d key %s current %+v, want %+v", trial, call.codes, gi+1, k.key, cur[j], *a)
				}
			}
		}
		for key, w := range want {
			typ, _ := c.Type(ctx, key).Result()
			switch w.kind {
			case kindAbsent:
				if typ != "none" {
					t.Fatalf("trial %d (codes %s): %s is a %s, want none", trial, call.codes, key, typ)
				}
			case kindForeign:
				if typ != "list" {
					t.Fatalf("trial %d (codes %s): %s is a %s, want list", trial, call.codes, key, typ)
				}
			case kindValue:
				got, err := c.Get(ctx, key).Result()
				if err != nil || got != w.val {
					t.Fatalf("trial %d (codes %s): %s = %q %v, want %q", trial, call.codes, key, got, err, w.val)
				}
				if w.exp != 0 {
					pt, _ := c.PTTL(ctx, key).Result()
					if d := time.Now().Add(pt).UnixMilli() - w.exp; pt <= 0 || d < -2000 || d > 2000 {
						t.Fatalf("trial %d (codes %s): %s PTTL %v, want expiry at %d", trial, call.codes, key, pt, w.exp)
					}
				}
			}
		}
	}
}
