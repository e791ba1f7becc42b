package engine

import (
	"slices"
	"testing"
)

// TestShardsGrowAtDifferentTimes: shards filling at the same pace grow
// their slabs and indexes at points spread over a whole growth's span,
// not all at the same key count, however many growths they have made.
func TestShardsGrowAtDifferentTimes(t *testing.T) {
	const shards = 128
	e := New(Options{Shards: shards, SweepInterval: -1})
	defer e.Close()
	for _, a := range []struct {
		name   string
		base   int
		factor float64
	}{
		{"slab", firstSlabLen, slabGrowth},
		{"arena", firstArenaLen, slabGrowth},
		{"index", firstIndexCells, indexGrowth},
	} {
		// Where each shard's array first grows past a million items.
		var points []int
		for _, s := range e.shards {
			c := 0
			for c < 1_000_000 {
				next := grownLen(c, 0, a.base, a.factor, s.phase)
				if c > a.base && float64(next) > float64(c)*a.factor+1 {
					t.Fatalf("%s: grew from %d to %d, more than by a factor of %.3f", a.name, c, next, a.factor)
				}
				c = next
			}
			points = append(points, c)
		}
		slices.Sort(points)
		points = slices.Compact(points)
		if len(points) < shards/2 {
			t.Errorf("%s: the shards grow at %d distinct sizes, want at least %d", a.name, len(points), shards/2)
		}
		// Spread over nearly a whole growth factor.
		if spread := float64(points[len(points)-1]) / float64(points[0]); spread < 1+0.9*(a.factor-1) {
			t.Errorf("%s: the shards' sizes past a million span a factor of %.3f, want nearly %.3f", a.name, spread, a.factor)
		}
	}
}

// TestTakeSlotGrowsBySlabGrowth: a full slab grows by slabGrowth, from its
// first size, keeping its items and zeroing the new one.
func TestTakeSlotGrowsBySlabGrowth(t *testing.T) {
	var table []uint64
	var free []uint32
	for i := range 5000 {
		if got := takeSlot(&table, &free, 0); got != uint32(i) {
			t.Fatalf("slot %d taken, want %d", got, i)
		}
		if table[i] != 0 {
			t.Fatalf("slot %d not zeroed", i)
		}
		table[i] = uint64(i) + 1
		if i == 0 && cap(table) != firstSlabLen {
			t.Fatalf("first capacity %d, want %d", cap(table), firstSlabLen)
		}
	}
	if c := cap(table); c < 5000 || float64(c) > 5000*slabGrowth+1 {
		t.Errorf("capacity %d for 5000 items, want at most %.4f times as many", c, slabGrowth)
	}
	for i, v := range table {
		if v != uint64(i)+1 {
			t.Fatalf("slot %d holds %d after growths, want %d", i, v, i+1)
		}
	}
	free = append(free, 7)
	if got := takeSlot(&table, &free, 0); got != 7 {
		t.Errorf("took slot %d, want the free slot 7", got)
	}
}
