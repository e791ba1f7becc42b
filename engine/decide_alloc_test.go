package engine

import (
	"runtime"
	"testing"
	"time"
)

// TestDecideSWAllocBytes: Decide, which decides every SW request in shared
// mode (and every retry and deny-cache check), builds its log in a set of
// logs of its own; that set takes about what the log needs, not a shard's
// room (its free lists, a slab of headers, a chunk of 64 words).
func TestDecideSWAllocBytes(t *testing.T) {
	now := epochDay + int64(time.Minute)
	record := func(n int) Record {
		rec := Record{Key: "k", Family: FamilySW, ExpireAtMs: now/1e6 + 60_000}
		for i := range n {
			rec.Log = append(rec.Log, epochDay+int64(i)*int64(time.Second))
			rec.Quantities = append(rec.Quantities, 1)
		}
		return rec
	}
	rules := []Rule{{Key: []byte("k"), Family: FamilySW, Window: WindowQuota{Limit: 100, Window: int64(time.Hour)}}}
	perCall := func(states func() []Record) uint64 {
		var a, b runtime.MemStats
		const n = 2000
		runtime.GC()
		runtime.ReadMemStats(&a)
		for range n {
			if _, err := Decide(now, OpWindow, rules, states(), 1); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&b)
		return (b.TotalAlloc - a.TotalAlloc) / n
	}
	// 20 requests leave room in the ring; 16 fill it, and the request
	// decided grows it, giving the old ring up.
	for _, n := range []int{20, 16} {
		rec := record(n)
		if got := perCall(func() []Record { return []Record{rec} }); got > 1024 {
			t.Errorf("Decide of an SW key holding %d requests allocates %d bytes a call, want at most 1,024", n, got)
		}
	}
	rules[0].Key = []byte("new")
	if got := perCall(func() []Record { return []Record{{Key: "new"}} }); got > 512 {
		t.Errorf("Decide of a new SW key allocates %d bytes a call, want at most 512", got)
	}
}
