package engine

import "math"

// A shard's arrays (its index, slab, side tables and name arena) grow by
// making a bigger array. Keys spread evenly over the shards, so shards fill
// at the same pace; were their arrays the same sizes, every shard would
// grow them within the same fraction of a second, and a pipeline of new
// keys would meet every shard's growth at once. Each shard's arrays
// therefore take sizes of their own, base times their growth factor to the
// power of k plus the shard's phase (between 0 and 1, set by the shard's
// number): the shards' growths are spread evenly over each growth's span
// of keys.
//
// The slab, side tables and arena grow by a sixteenth, copying: each copy
// is small, and the arrays are 97% full on average (append's quarter leaves
// them 89% full on average, all shards at the same point), which keeps a
// CL key at 51–52 bytes beyond its name from a million keys up. The price
// is garbage: the copies leave about three times as many old arrays to
// collect as append's growth does, which the collector, with no pointers
// to follow in them, takes in stride.
const (
	slabGrowth    = 17.0 / 16
	firstSlabLen  = 8  // base of the slab and side tables, in items
	firstArenaLen = 64 // base of the name arena, in bytes
)

// phaseOf is shard i of n's phase, in [0, 1).
func phaseOf(i, n int) float64 { return float64(i) / float64(n) }

// grownLen is the capacity an array of capacity c grows to, at least need:
// the first of base × factor^(k + phase), for k = 0, 1, 2, ..., above c.
// Each size is computed from base, not from the last one, so that shards of
// different phases keep apart however small their first sizes.
func grownLen(c, need, base int, factor, phase float64) int {
	k := 0.0
	if c > base {
		k = max(math.Floor(math.Log(float64(c)/float64(base))/math.Log(factor)-phase), 0)
	}
	for {
		if n := int(math.Ceil(float64(base) * math.Pow(factor, k+phase))); n > c {
			return max(n, need)
		}
		k++
	}
}

// takeSlot returns a free slot of a slab or side table, growing it if none
// is free; phase is the shard's.
func takeSlot[T any](table *[]T, free *[]uint32, phase float64) uint32 {
	if n := len(*free); n > 0 {
		i := (*free)[n-1]
		*free = (*free)[:n-1]
		return i
	}
	t := *table
	if len(t) == cap(t) {
		g := make([]T, len(t), grownLen(cap(t), len(t)+1, firstSlabLen, slabGrowth, phase))
		copy(g, t)
		t = g
	}
	var zero T
	t = append(t, zero)
	*table = t
	return uint32(len(t) - 1)
}
