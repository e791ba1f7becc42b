//go:build measure && linux

package persist

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/procstat"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// TestStoreCostPerKey measures what shared mode's compare-and-set script
// costs the store, in redis-server's CPU per key (utime + stime from
// /proc), with nothing else running against it: calls of 370 keys (about
// what a round carries at -P 16 in the bench) drawn at random from 100,000
// CL keys, each expected to hold the value the call names. It alternates
// four shapes, eight blocks of 700 calls each, and logs their medians:
//
//   - set: the value is as expected and a new one is written with its
//     expiry (an admission, the common case);
//   - keep: the value is checked and nothing written (a refusal);
//   - new: the key is expected absent and is created (SET NX), in the
//     script;
//   - new-nx: the same as the store's own SET ... PXAT ... NX, which is
//     how shared mode sends it (shared_native.go): one pipeline of 370
//     SETs in place of the call.
//
// It logs and asserts nothing about time:
//
//	go test -tags measure -count=1 -v -run TestStoreCostPerKey ./persist/
func TestStoreCostPerKey(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	pid := srv.PID()
	const nkeys, perCall, calls, blocks = 100_000, 370, 700, 8
	exp := time.Now().Add(time.Hour).UnixMilli()
	keys, vals := storeCLKeys(t, c, nkeys, exp)
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := []string{"set", "keep", "new", "new-nx"}
	perKey := map[string][]float64{}
	cas := make([]casKey, perCall)
	call := &casCall{}
	fresh := 0
	for range blocks {
		for _, shape := range shapes {
			cpu0 := storeCPU(t, pid)
			for range calls {
				call.reset()
				picked := rng.Perm(nkeys)[:perCall]
				for j, k := range picked {
					cur := storeValue{kind: kindValue, num: true, tat: vals[k]}
					next := storeValue{kind: kindValue, num: true, tat: vals[k] + 1000, expireAtMs: exp}
					switch shape {
					case "set":
						cas[j] = casKey{key: keys[k], expected: cur, write: writeSet, newVal: next}
					case "keep":
						cas[j] = casKey{key: keys[k], expected: cur, write: writeKeep}
					case "new", "new-nx":
						fresh++
						cas[j] = casKey{key: fmt.Sprintf("bench:shared:new:%d", fresh), expected: storeValue{kind: kindAbsent}, write: writeSet, newVal: next}
					}
					call.add(cas[j : j+1])
				}
				if shape == "new-nx" {
					runStoreSETs(t, c, cas)
					continue
				}
				runStoreCall(t, c, call)
				if shape == "set" {
					for _, k := range picked {
						vals[k] += 1000
					}
				}
			}
			perKey[shape] = append(perKey[shape], (storeCPU(t, pid)-cpu0).Seconds()*1e6/(perCall*calls))
		}
	}
	for _, shape := range shapes {
		logMedian(t, shape, perKey[shape])
	}
}

// storeCLKeys writes n CL keys, each a TAT of now expiring at exp (PXAT),
// and returns their names and values.
func storeCLKeys(t *testing.T, c *redis.Client, n int, exp int64) ([]string, []uint64) {
	ctx := context.Background()
	keys, vals := make([]string, n), make([]uint64, n)
	pipe := c.Pipeline()
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:shared:shcl:%d", i)
		vals[i] = uint64(time.Now().UnixNano())
		pipe.Do(ctx, "SET", keys[i], strconv.FormatUint(vals[i], 10), "PXAT", exp)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return keys, vals
}

// logMedian logs the median of a shape's blocks, in µs of store CPU a key.
func logMedian(t *testing.T, name string, blocks []float64) {
	s := slices.Clone(blocks)
	slices.Sort(s)
	t.Logf("%-10s median %.2f µs of store CPU a key (blocks: %.2f)", name, s[len(s)/2], blocks)
}

// runStoreCall sends one script call (runCAS) and fails the test unless
// every group was written.
func runStoreCall(t *testing.T, c *redis.Client, call *casCall) {
	t.Helper()
	replies, errs, _, _ := runCAS(context.Background(), c, []*casCall{call}, nil, false)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	for g, cur := range replies[0].current {
		if cur != nil {
			t.Fatalf("group %d conflicted: %+v", g+1, cur)
		}
	}
}

// runStoreSETs sends each key's SET ... PXAT ... NX as shared mode does
// (nativeCmd), in one pipeline (without the TIME a round adds once), and
// fails the test unless every key was written.
func runStoreSETs(t *testing.T, c *redis.Client, cas []casKey) {
	t.Helper()
	ctx := context.Background()
	pipe := c.Pipeline()
	cmds := make([]*redis.StatusCmd, len(cas))
	for i := range cas {
		g := &group{cas: cas[i : i+1]}
		n := &nativeCmd{g: g}
		cmds[i] = n.command(ctx, false)
		_ = pipe.Process(ctx, cmds[i])
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if cmd.Val() != "OK" {
			t.Fatalf("key %s not created: %v", cas[i].key, cmd.Err())
		}
	}
}

// storeCPU is the CPU time the store has used (procstat.CPU).
func storeCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, err := procstat.CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStoreScriptParts measures, as TestStoreCostPerKey does, what each
// part of a compare-and-set of one key costs the store inside a script
// call of 370 keys: scripts that stop after each part (the keys passed,
// their values decoded from one JSON argument, the MGET, the comparison,
// the SET ... PXAT ... GET), and, for scale, the store's own GET and
// SET ... PXAT of the same keys in a pipeline. It logs and asserts
// nothing about time:
//
//	go test -tags measure -count=1 -v -run TestStoreScriptParts ./persist/
func TestStoreScriptParts(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	pid := srv.PID()
	const nkeys, perCall, calls, blocks = 100_000, 370, 500, 6
	expMs := time.Now().Add(time.Hour).UnixMilli()
	keys, vals := storeCLKeys(t, c, nkeys, expMs)
	exp := strconv.FormatInt(expMs, 10)
	const decode = `local a = cjson.decode(ARGV[1]) `
	const mget = decode + `local v = redis.call('MGET', unpack(KEYS)) `
	parts := []struct{ name, src string }{
		{"keys", `return 0`},
		{"+values", decode + `return 0`},
		{"+mget", mget + `return 0`},
		{"+compare", mget + `local n = 0 for i = 1, #KEYS do if v[i] == a[3*i-2] then n = n + 1 end end return 0`},
		{"+set", mget + `for i = 1, #KEYS do if v[i] == a[3*i-2] then redis.call('SET', KEYS[i], a[3*i-1], 'PXAT', a[3*i], 'GET') end end return 0`},
		{"native GET", ""},
		{"native SET", ""},
	}
	shas := make([]string, len(parts))
	for i, p := range parts {
		if p.src != "" {
			var err error
			if shas[i], err = c.ScriptLoad(ctx, p.src).Result(); err != nil {
				t.Fatal(err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	perKey := make([][]float64, len(parts))
	ks := make([]string, perCall)
	args := make([]string, 3*perCall)
	for range blocks {
		for i, p := range parts {
			cpu0 := storeCPU(t, pid)
			for range calls {
				picked := rng.Perm(nkeys)[:perCall]
				for j, k := range picked {
					ks[j] = keys[k]
					args[3*j] = strconv.FormatUint(vals[k], 10)
					args[3*j+1] = strconv.FormatUint(vals[k]+1000, 10)
					args[3*j+2] = exp
				}
				var err error
				switch p.name {
				case "native GET", "native SET":
					pipe := c.Pipeline()
					for j := range ks {
						if p.name == "native GET" {
							pipe.Get(ctx, ks[j])
						} else {
							pipe.Do(ctx, "SET", ks[j], args[3*j+1], "PXAT", exp)
						}
					}
					_, err = pipe.Exec(ctx)
				default:
					var js []byte
					if js, err = json.Marshal(args); err == nil {
						err = c.EvalSha(ctx, shas[i], ks, string(js)).Err()
					}
				}
				if err != nil {
					t.Fatal(p.name, err)
				}
				if p.name == "+set" || p.name == "native SET" {
					for _, k := range picked {
						vals[k] += 1000
					}
				}
			}
			perKey[i] = append(perKey[i], (storeCPU(t, pid)-cpu0).Seconds()*1e6/(perCall*calls))
		}
	}
	for i, p := range parts {
		logMedian(t, p.name, perKey[i])
	}
}
