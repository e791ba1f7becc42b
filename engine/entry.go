package engine

// entry is one key's state, in a shard's slab. It holds no pointers, so that
// the garbage collector never looks inside the slab. Expiry follows Redis's
// rule: the key is gone once the clock in milliseconds is past expireAt.
type entry struct {
	expireAt int64 // unix ms
	// state is the family's state: a CL key's TAT; an LB key's tail; for
	// SWC and FW keys the index of their buckets in shard.counters; for SW
	// keys the index of their log in shard.logs's table, in the low 32
	// bits, and the log's hint (swLogs.hint) in the high 32.
	state uint64
	// nameOff and nameLen place the key's name in the shard's arena; the
	// top bit of nameLen is the pin (see pinned).
	nameOff, nameLen uint32
	// bucket is the expiry bucket the key is filed in (a time at or before
	// expireAt), and filed packs the key's family (top 3 bits) with its
	// position in that bucket.
	bucket, filed uint32
}

const (
	pinBit      = 1 << 31
	posBits     = 29
	posMask     = 1<<posBits - 1
	maxNameLen  = pinBit - 1
	maxSlabSize = posMask // a bucket's positions must fit posBits
)

// family is the key's family; FamilyNone marks a free slot.
func (ent *entry) family() Family { return Family(ent.filed >> posBits) }

// pos is the key's position in its expiry bucket.
func (ent *entry) pos() uint32 { return ent.filed & posMask }

func (ent *entry) setPos(p uint32) { ent.filed = ent.filed&^posMask | p }

// size is the length of the key's name.
func (ent *entry) size() uint32 { return ent.nameLen &^ pinBit }

// pinned reports whether the key is kept from eviction while a ThrottleAll
// records its rules, so that one rule's new key never evicts another's.
func (ent *entry) pinned() bool { return ent.nameLen&pinBit != 0 }

func (ent *entry) setPinned(p bool) {
	ent.nameLen &^= pinBit
	if p {
		ent.nameLen |= pinBit
	}
}

// tat is a CL key's theoretical arrival time.
func (ent *entry) tat() uint64 { return ent.state }

// tail is an LB key's next free departure.
func (ent *entry) tail() int64 { return int64(ent.state) }

// counter is an SWC or FW key's buckets, kept beside the slab: the current
// bucket's start in ns since the epoch, its count, and the previous
// bucket's count (SWC only).
type counter struct {
	start     int64
	cur, prev uint32
}
