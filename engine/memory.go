package engine

import (
	"errors"
	"math"
	"sync/atomic"
)

// ErrOutOfMemory is returned when a new key does not fit its shard's share of
// Options.MaxMemory even with every other key of the shard evicted; nothing
// is written.
var ErrOutOfMemory = errors.New("key does not fit in maxmemory")

// keyOverhead is what a key costs beyond the bytes of its name, in the
// estimate that Used reports and MaxMemory bounds: its slab entry (32
// bytes), index cell, expiry item and arena bytes, with the slab, index,
// buckets and arena at their usual fill. Measured as the growth of the Go
// heap (runtime.MemStats.HeapAlloc, after a GC) over new CL keys with
// 16-byte names in 128 shards, less the names: 53 bytes a key at 100,000
// and at 1,000,000 keys on linux/amd64 with Go 1.26 (between 52 and 56
// from 100,000 to 3,000,000 keys, as the shards' arrays sit between two
// growths, each shard at its own phase), so 53.
// An SWC or FW key adds its counter (counterBytes); an SW key's log adds
// 8 bytes per slot of its ring (12 in its wide form: swLog.bytes). TestKeyOverheadMeasured and
// TestKeyMemoryBeyondName measure it again. Not counted: the names of keys
// waiting for a backing store's writer (Options.TrackChanges), and the
// slab, index and arena space that removed keys leave behind for new keys
// to reuse.
const keyOverhead = 53

// counterBytes is what an SWC or FW key's buckets add, beside the slab:
// 16 bytes and their share of the table's growth.
const counterBytes = 18

// keyCost is the estimated bytes a key of family f with a name of n bytes
// uses (an SW key's log not included: swLog.bytes counts it).
func keyCost(f Family, n int) int64 {
	if f == FamilySWC || f == FamilyFW {
		return int64(n) + keyOverhead + counterBytes
	}
	return int64(n) + keyOverhead
}

// bytesOf is what ent's key uses by the keyspace's estimate: its keyCost
// and, for an SW key, its log's ring.
func (s *shard) bytesOf(ent *entry) int64 {
	n := keyCost(ent.family(), int(ent.size()))
	if ent.family() == FamilySW {
		n += s.log(ent).bytes()
	}
	return n
}

// MaxMemory is Options.MaxMemory: the bound on Used, 0 for none.
func (e *Engine) MaxMemory() int64 { return e.maxMemory }

// Used is the estimated bytes the keyspace uses: the length of each key's
// name plus a fixed overhead per key (keyOverhead), summed over the keys
// held, including expired keys the sweep has not removed yet.
func (e *Engine) Used() int64 {
	return e.sum(func(s *shard) *atomic.Int64 { return &s.used })
}

// EvictedKeys is how many live keys have been removed to stay within
// MaxMemory.
func (e *Engine) EvictedKeys() int64 {
	return e.sum(func(s *shard) *atomic.Int64 { return &s.evicted })
}

// fits reports whether cost more bytes fit the shard's budget as it is.
func (s *shard) fits(cost int64) bool {
	return s.budget == 0 || s.used.Load()+cost <= s.budget
}

// makeRoom evicts the shard's keys, the soonest to expire first, until cost
// more bytes fit its budget, and reports whether they do. It never evicts a
// key that expires at or after outlive (Restore passes the new key's
// expiry, so that a key read back never pushes out keys that outlive it;
// create passes anyExpiry). It reports false, evicting nothing, when cost
// alone is over the budget or evicting every key that expires before
// outlive would not make room, and true when only pinned keys are left: a
// ThrottleAll's reserve has counted them.
func (s *shard) makeRoom(cost, outlive, nowMs int64) bool {
	if s.budget == 0 {
		return true
	}
	if cost > s.budget || outlive != anyExpiry && !s.roomBefore(cost, outlive) {
		return false
	}
	for !s.fits(cost) {
		i, ok := s.soonest()
		if !ok {
			break // nothing left but pinned keys
		}
		if outlive != anyExpiry && s.entries[i].expireAt >= outlive {
			return false
		}
		s.evict(i, nowMs)
	}
	return true
}

// roomBefore reports whether cost more bytes would fit the budget with
// every key that expires before outlive evicted (pinned keys aside), so
// that makeRoom refuses before it evicts anything rather than after. It
// reads the buckets in order, up to the first that starts at or after
// outlive (a key is filed at or before its expiry), and stops as soon as
// the keys seen make room.
func (s *shard) roomBefore(cost, outlive int64) bool {
	short := s.used.Load() + cost - s.budget // bytes to free
	for num := uint32(0); short > 0; num++ {
		b := s.expiry.from(num)
		if b == nil || bucketStart(b.num) >= outlive {
			return false
		}
		num = b.num
		for _, slot := range b.slots {
			if ent := &s.entries[slot]; ent.expireAt < outlive && !ent.pinned() {
				short -= s.bytesOf(ent)
			}
		}
		if num == math.MaxUint32 {
			break
		}
	}
	return short <= 0
}

// makeRoomFor brings the shard back within its budget after ent grew (an
// SW key's ring): it evicts the other keys, the soonest to expire first, as
// makeRoom does for a new key, and keeps ent, pinning it meanwhile. A
// shard whose budget its pinned keys fill on their own stays over it.
func (s *shard) makeRoomFor(ent *entry, nowMs int64) {
	if s.fits(0) {
		return
	}
	pinned := ent.pinned()
	ent.setPinned(true)
	s.makeRoom(0, anyExpiry, nowMs)
	ent.setPinned(pinned)
}

// anyExpiry is makeRoom's outlive for a new key that may evict any other.
const anyExpiry = math.MaxInt64

// soonest returns the slot of the key that expires first (the first by
// name on a tie), or false when the shard has no key but pinned ones. It
// takes the buckets in order and stops at the first that starts after the
// best key found; a key filed in a bucket before its expiry's is refiled
// there, as the sweep does, so the answer is exact and the next search
// does not meet it again.
func (s *shard) soonest() (uint32, bool) {
	var best *entry
	var bestSlot uint32
	for num := uint32(0); ; num++ {
		b := s.expiry.from(num)
		if b == nil || best != nil && bucketStart(b.num) > best.expireAt {
			break
		}
		num = b.num
		// From the last item back: refiling an item moves the bucket's last
		// item, already seen, into its place.
		for j := len(b.slots) - 1; j >= 0; j-- {
			slot := b.slots[j]
			ent := &s.entries[slot]
			switch {
			case expiryBucketOf(ent.expireAt) > num:
				s.refile(slot)
			case ent.pinned():
				// a key a ThrottleAll is recording: not a candidate
			case best == nil || ent.expireAt < best.expireAt ||
				ent.expireAt == best.expireAt && s.name(ent) < s.name(best):
				best, bestSlot = ent, slot
			}
		}
		if num == math.MaxUint32 {
			break
		}
	}
	return bestSlot, best != nil
}

// evict removes the key in slot i to make room, and notes it as changed so
// that a backing store deletes it too. A key that had expired anyway counts
// as expired, not evicted, and is left to the backing store's own expiry,
// as the sweep leaves it.
func (s *shard) evict(i uint32, nowMs int64) {
	ent := &s.entries[i]
	if nowMs > ent.expireAt {
		s.expired.Add(1)
	} else {
		s.evicted.Add(1)
		s.markChanged(s.name(ent))
	}
	s.remove(i, s.cellOf(i))
}
