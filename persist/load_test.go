package persist

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
)

// TestLoad100k loads 100,000 keys from a real Redis into an engine and
// reports how long it took and what it allocated per key.
func TestLoad100k(t *testing.T) {
	t.Parallel()
	backing := redistest.Start(t)
	r, err := Dial(backing.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	const n = 100_000
	nowMs := time.Now().UnixMilli()
	recs := make([]engine.Record, 0, 10_000)
	for i := 0; i < n; i++ {
		recs = append(recs, engine.Record{Key: "user:" + strconv.Itoa(i), Family: engine.FamilyCL,
			TAT: uint64(nowMs)*1e6 + uint64(i), ExpireAtMs: nowMs + 600_000})
		if len(recs) == cap(recs) {
			if err := r.Save(ctx, recs); err != nil {
				t.Fatal(err)
			}
			recs = recs[:0]
		}
	}

	eng := engine.New(engine.Options{SweepInterval: -1, TrackChanges: true})
	defer eng.Close()
	w := New(eng, r, Options{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	if err := w.Load(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if got := eng.Len(nil); got != n {
		t.Fatalf("%d keys loaded, want %d", got, n)
	}
	if s := w.Stats(); s.LoadedKeys != n || s.PendingKeys != 0 {
		t.Errorf("Stats = %+v", s)
	}
	t.Logf("loaded %d keys in %v (%.0f keys/s), %.1f allocations and %.0f bytes per key (the engine's own included)",
		n, took.Round(time.Millisecond), n/took.Seconds(),
		float64(after.Mallocs-before.Mallocs)/n, float64(after.TotalAlloc-before.TotalAlloc)/n)
}
