package engine

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// keyMemory is what one key of a family costs the Go heap, measured over n
// keys with 16-byte names, each hit perKey times.
func keyMemory(t *testing.T, n int, f Family, perKey int, limit int64) float64 {
	t.Helper()
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
	}
	c := NewManualClock(time.Unix(0, epochDay))
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 128})
	defer e.Close()
	q := WindowQuota{Limit: limit, Window: int64(time.Hour)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Round by round, every key gets one request a millisecond apart, as
	// traffic spread over the keys would.
	for r := range perKey {
		c.Set(time.Unix(0, epochDay+int64(r)*int64(time.Millisecond)))
		for _, k := range keys {
			var err error
			if f == FamilyCL {
				_, err = e.Throttle(nil, k, GCRAQuota{MaxBurst: 1_000, Count: 1_000, Period: 3600}, 1)
			} else {
				_, err = e.ThrottleWindow(nil, Rule{Key: k, Family: f, Window: q}, 1)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(e)
	runtime.KeepAlive(keys)
	if got := e.Len(nil); got != n {
		t.Fatalf("%d keys held, want %d", got, n)
	}
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// TestWindowKeyMemoryMeasured measures the bytes a key costs per family:
// runtime.MemStats.HeapAlloc after runtime.GC(), before and after creating
// 100,000 keys with 16-byte names (the name's bytes included), on
// linux/amd64. The figures for the README come from
//
//	go test -count=1 -v -run TestWindowKeyMemoryMeasured ./engine/
//
// The bounds are loose enough for any platform, tight enough to catch a
// layout gone wrong (a counter key growing a pointer's worth of heap). An
// SW request at its key's limit costs what the key holding 100 requests
// costs over the key holding 1, a 99th of it: at most 12 bytes (8 and the
// allocator's rounding of the ring, on linux/amd64).
func TestWindowKeyMemoryMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 100,000 keys per family")
	}
	n := 100_000
	if raceEnabled {
		n = 10_000 // the race detector makes the 10 million SW requests slow
	}
	cases := []struct {
		name   string
		f      Family
		perKey int
		limit  int64
		bound  float64
	}{
		{"CL (for reference)", FamilyCL, 1, 1_000, 100},
		{"FW", FamilyFW, 1, 1_000, 120},
		{"SWC", FamilySWC, 1, 1_000, 120},
		{"SW holding 1 request", FamilySW, 1, 1_000, 300},
		{"SW holding 100 requests", FamilySW, 100, 1_000, 2500},
		// At its limit the ring stops doubling: 8 bytes a request.
		{"SW 100 requests, limit 100", FamilySW, 100, 100, 1650},
	}
	got := map[string]float64{}
	for _, c := range cases {
		got[c.name] = keyMemory(t, n, c.f, c.perKey, c.limit)
		t.Logf("%-24s %6.0f bytes a key (%d keys, 16-byte names included)", c.name, got[c.name], n)
		if got[c.name] > c.bound {
			t.Errorf("%s: %.0f bytes a key, over %.0f", c.name, got[c.name], c.bound)
		}
	}
	perRequest := (got["SW 100 requests, limit 100"] - got["SW holding 1 request"]) / 99
	t.Logf("SW, a request at the limit %6.1f bytes", perRequest)
	if perRequest > 12 {
		t.Errorf("an SW request costs %.1f bytes, over 12", perRequest)
	}
}

// TestKeyMemoryBeyondName measures what a key costs beyond its name's 16
// bytes, per family, at 100,000 and 1,000,000 keys, and holds a CL key to
// the product's bound of 64 bytes at a million keys:
//
//	go test -count=1 -v -run TestKeyMemoryBeyondName ./engine/
func TestKeyMemoryBeyondName(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a million keys per family")
	}
	const nameLen = 16
	cases := []struct {
		name string
		f    Family
	}{
		{"CL", FamilyCL},
		{"FW", FamilyFW},
		{"SWC", FamilySWC},
		{"SW holding 1 request", FamilySW},
	}
	for _, n := range []int{100_000, 1_000_000} {
		if n > 100_000 && raceEnabled {
			t.Logf("the million-key case is skipped under the race detector, which makes it too slow")
			continue
		}
		for _, c := range cases {
			got := keyMemory(t, n, c.f, 1, 1_000) - nameLen
			t.Logf("%9d keys: %-22s %6.1f bytes a key beyond its name", n, c.name, got)
			// The bound holds at every size measured: under -race (the
			// test command) only the 100,000-key case runs.
			if c.f == FamilyCL && got > 64 {
				t.Errorf("a CL key costs %.1f bytes beyond its name at %d keys, over 64", got, n)
			}
		}
	}
}
