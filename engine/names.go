package engine

import (
	"math"
	"unsafe"
)

// maxNameBytes bounds a shard's name arena: entries address it with 32-bit
// offsets. A shard whose live names fill it takes no new key
// (ErrOutOfMemory); with the default 128 shards that is 512 GiB of names.
const maxNameBytes = math.MaxUint32

// names is a shard's key names, appended one after the other in one byte
// array that holds no pointers, so that millions of names cost the garbage
// collector nothing to mark. A removed name's bytes stay as garbage until
// the garbage outweighs the live names; then the live names are copied to
// a new array. Bytes once written are never changed (a compaction writes a
// new array and leaves the old one as it was), which is what lets a name be
// read as a string without copying it. Not safe for concurrent use.
type names struct {
	buf     []byte
	garbage int // bytes of buf that belong to no key
}

// add appends name and returns its offset; false when the arena cannot
// hold it. A full arena grows as a slab does (grownLen), phase being the
// shard's.
func (a *names) add(name []byte, phase float64) (uint32, bool) {
	need := len(a.buf) + len(name)
	if int64(need) > maxNameBytes {
		return 0, false
	}
	if need > cap(a.buf) {
		buf := make([]byte, len(a.buf), int(min(int64(grownLen(cap(a.buf), need, firstArenaLen, slabGrowth, phase)), maxNameBytes)))
		copy(buf, a.buf)
		a.buf = buf
	}
	off := uint32(len(a.buf))
	a.buf = append(a.buf, name...)
	return off, true
}

// get returns the name at off as a string sharing the arena's bytes, which
// never change, so the string stays valid (and keeps its array alive) after
// any later compaction.
func (a *names) get(off, n uint32) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&a.buf[off], n)
}

// drop counts n bytes as garbage, and reports whether the arena should be
// compacted: when the garbage outweighs the live bytes (and is worth a copy).
func (a *names) drop(n uint32) bool {
	a.garbage += int(n)
	return a.garbage > 4096 && a.garbage > len(a.buf)-a.garbage
}

// bytesOf reads s as a byte slice, without copying; the slice must not be
// written.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
