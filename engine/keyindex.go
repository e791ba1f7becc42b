package engine

// keyIndex maps a shard's keys to their slots in the slab: an open-addressing
// hash table of uint64 cells, each the key's 32-bit hash tag above its slot
// plus one (0 is an empty cell), with linear probing and backward-shift
// deletion, so that no deleted cell lingers. The cells hold no pointers.
// A key's home cell is its tag scaled to the table's size, so growing the
// table needs no key's name. Not safe for concurrent use.
type keyIndex struct {
	cells []uint64
	n     int // keys held
}

// Growth: the table grows by half when a new key would take it past
// maxLoad, which keeps it between 57% and 85% full (about 12 bytes a key
// on average) with short probes.
const (
	maxLoadNum, maxLoadDen = 85, 100
	minIndexCells          = 8
)

// home is the first cell tag may sit in.
func (x *keyIndex) home(tag uint32) int {
	return int(uint64(tag) * uint64(len(x.cells)) >> 32)
}

// next is the cell after i, wrapping.
func (x *keyIndex) next(i int) int {
	if i++; i == len(x.cells) {
		return 0
	}
	return i
}

// slot is the slot held in cell i.
func (x *keyIndex) slot(i int) uint32 { return uint32(x.cells[i]) - 1 }

// insert files slot under tag; the key must not be in the index.
func (x *keyIndex) insert(tag, slot uint32) {
	if (x.n+1)*maxLoadDen > len(x.cells)*maxLoadNum {
		x.grow()
	}
	x.place(uint64(tag)<<32 | uint64(slot) + 1)
	x.n++
}

// place puts cell c in the first free cell from its home.
func (x *keyIndex) place(c uint64) {
	i := x.home(uint32(c >> 32))
	for x.cells[i] != 0 {
		i = x.next(i)
	}
	x.cells[i] = c
}

// grow moves the cells into a table half as big again.
func (x *keyIndex) grow() {
	old := x.cells
	x.cells = make([]uint64, max(len(old)+len(old)/2, minIndexCells))
	for _, c := range old {
		if c != 0 {
			x.place(c)
		}
	}
}

// remove empties cell i, shifting back the cells after it that probed past
// it, so that every key stays reachable from its home without tombstones.
func (x *keyIndex) remove(i int) {
	for j := x.next(i); x.cells[j] != 0; j = x.next(j) {
		h := x.home(uint32(x.cells[j] >> 32))
		// The cell at j may move to i unless its home lies cyclically in
		// (i, j].
		if i <= j && (i < h && h <= j) || i > j && (i < h || h <= j) {
			continue
		}
		x.cells[i] = x.cells[j]
		i = j
	}
	x.cells[i] = 0
	x.n--
}

// reset empties the index and lets its table go.
func (x *keyIndex) reset() { *x = keyIndex{} }
