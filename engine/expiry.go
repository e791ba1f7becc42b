package engine

import (
	"math"

	"github.com/tidwall/btree"
)

// bucketShift sets the span of time one expiry bucket covers, in milliseconds
// (a power of two).
const bucketShift = 10 // 1,024 ms

// expiryBucketOf is the bucket that files a key expiring at ms: ms's bucket,
// clamped to the buckets a uint32 numbers (the last one, from the year 2109
// on, files later expiries early, which the index allows).
func expiryBucketOf(ms int64) uint32 {
	return uint32(min(max(ms>>bucketShift, 0), math.MaxUint32))
}

// bucketStart is the first millisecond of bucket b.
func bucketStart(b uint32) int64 { return int64(b) << bucketShift }

// expiryBucket holds the slots of the keys filed in one bucket of time, in
// no order. A key knows its position here, so that it leaves in O(1).
type expiryBucket struct {
	num   uint32
	slots []uint32
}

// expiryIndex files each key of a shard in the bucket of a time at or
// before its expiry; the buckets are kept in order in a B-tree. Per key it
// costs one uint32 in a bucket's array (which holds no pointers) and the
// bucket and position the entry remembers. Not safe for concurrent use.
type expiryIndex struct {
	buckets *btree.BTreeG[*expiryBucket]
	pivot   expiryBucket // the key searches are made with, so that they allocate nothing
}

func newExpiryIndex() expiryIndex {
	less := func(a, b *expiryBucket) bool { return a.num < b.num }
	return expiryIndex{buckets: btree.NewBTreeGOptions(less, btree.Options{NoLocks: true})}
}

// first returns the earliest bucket, or nil.
func (x *expiryIndex) first() *expiryBucket {
	b, _ := x.buckets.Min()
	return b
}

// from returns the first bucket numbered num or later, or nil.
func (x *expiryIndex) from(num uint32) *expiryBucket {
	var found *expiryBucket
	x.pivot.num = num
	x.buckets.Ascend(&x.pivot, func(b *expiryBucket) bool {
		found = b
		return false
	})
	return found
}

// get returns bucket num.
func (x *expiryIndex) get(num uint32) (*expiryBucket, bool) {
	x.pivot.num = num
	return x.buckets.Get(&x.pivot)
}

// file adds slot to bucket num and returns its position there.
func (x *expiryIndex) file(num, slot uint32) uint32 {
	b, ok := x.get(num)
	if !ok {
		b = &expiryBucket{num: num}
		x.buckets.Set(b)
	}
	b.slots = append(b.slots, slot)
	return uint32(len(b.slots) - 1)
}

// unfile removes the item at pos from bucket num, moving the bucket's last
// item into its place, and returns the slot removed and, when another item
// moved, that item's slot (and true), so that the caller updates that key's
// position. An emptied bucket is dropped.
func (x *expiryIndex) unfile(num, pos uint32) (slot, moved uint32, ok bool) {
	b, _ := x.get(num)
	slot = b.slots[pos]
	last := len(b.slots) - 1
	if int(pos) != last {
		moved, ok = b.slots[last], true
		b.slots[pos] = moved
	}
	b.slots = b.slots[:last]
	if last == 0 {
		x.buckets.Delete(b)
	}
	return slot, moved, ok
}

// reset empties the index.
func (x *expiryIndex) reset() { x.buckets.Clear() }
