package engine

// keyIndex maps a shard's keys to their slots in the slab: an open-addressing
// hash table of uint64 cells, each the key's 32-bit hash tag above its slot
// plus one (0 is an empty cell), with linear probing and backward-shift
// deletion, so that no deleted cell lingers (during a growth the old table
// marks the cells it has moved instead). The cells hold no pointers.
// A key's home cell is its tag scaled to the table's size, so growing the
// table needs no key's name. Not safe for concurrent use.
//
// The table grows without stopping the shard: a growth allocates the bigger
// table and leaves the keys in the old one, and every later operation moves
// a bounded number of old cells (moveStep) into the new table, as Redis's
// dict rehashes, until none is left. Meanwhile a key is in exactly one of
// the two tables: new keys go into the new one, and a search looks in the
// new table, then in the old. The old table only ever loses keys: a moved
// or removed key leaves a movedCell there, which searches probe past, so
// that the keys still in it stay reachable from their homes.
type keyIndex struct {
	cells []uint64 // the table new keys go into
	old   []uint64 // the table being moved into cells; nil when none is
	moved int      // old's cells before moved have been moved
	n     int      // keys held, in both tables
}

// Growth: the table grows by about half when a new key would take it past
// maxLoad, which keeps it between 57% and 85% full (about 12 bytes a key
// on average) with short probes; its sizes are the shard's own (see
// grownLen). During a growth each operation moves moveStep cells of the
// old table, so that a move ends after len(old)/moveStep operations, long
// before the new table could fill: little work per operation, and the old
// table is let go soon.
const (
	maxLoadNum, maxLoadDen = 85, 100
	indexGrowth            = 1.5
	firstIndexCells        = 8 // the base of the table's sizes
	moveStep               = 64
)

// movedCell marks an old table's cell whose key has moved to the new table
// or been removed. No key's cell is all ones: a slot plus one is at most
// maxSlabSize.
const movedCell = ^uint64(0)

// cellTag is the tag a cell files its key under.
func cellTag(c uint64) uint32 { return uint32(c >> 32) }

// cellSlot is the slot a cell holds.
func cellSlot(c uint64) uint32 { return uint32(c) - 1 }

// homeIn is the first cell of a table of size cells that tag may sit in.
func homeIn(tag uint32, size int) int {
	return int(uint64(tag) * uint64(size) >> 32)
}

// home is the first cell of the current table tag may sit in.
func (x *keyIndex) home(tag uint32) int { return homeIn(tag, len(x.cells)) }

// next is the cell after i in the current table, wrapping.
func (x *keyIndex) next(i int) int {
	if i++; i == len(x.cells) {
		return 0
	}
	return i
}

// moving reports whether a growth is moving cells.
func (x *keyIndex) moving() bool { return x.old != nil }

// search returns the cell that files tag's key, for which match reports
// true, after moving the next cells of a growth. A cell of the old table is
// numbered from len(x.cells) up (cell numbers stay valid until the index
// next changes).
func (x *keyIndex) search(tag uint32, match func(slot uint32) bool) (cell int, ok bool) {
	if x.n == 0 {
		return 0, false
	}
	if x.moving() {
		x.move(moveStep)
	}
	for i := x.home(tag); ; i = x.next(i) {
		c := x.cells[i]
		if c == 0 {
			break
		}
		if cellTag(c) == tag && match(cellSlot(c)) {
			return i, true
		}
	}
	if !x.moving() {
		return 0, false
	}
	size := len(x.old)
	for i, seen := homeIn(tag, size), 0; seen < size; seen++ {
		c := x.old[i]
		if c == 0 {
			break
		}
		if c != movedCell && cellTag(c) == tag && match(cellSlot(c)) {
			return len(x.cells) + i, true
		}
		if i++; i == size {
			i = 0
		}
	}
	return 0, false
}

// slot is the slot held in cell, as search numbers cells.
func (x *keyIndex) slot(cell int) uint32 {
	if cell < len(x.cells) {
		return cellSlot(x.cells[cell])
	}
	return cellSlot(x.old[cell-len(x.cells)])
}

// insert files slot under tag; the key must not be in the index. phase is
// the shard's.
func (x *keyIndex) insert(tag, slot uint32, phase float64) {
	if x.moving() {
		x.move(moveStep)
	}
	if (x.n+1)*maxLoadDen > len(x.cells)*maxLoadNum {
		x.grow(phase)
	}
	x.place(uint64(tag)<<32 | uint64(slot) + 1)
	x.n++
}

// place puts cell c in the first free cell from its home in the current
// table.
func (x *keyIndex) place(c uint64) {
	i := x.home(cellTag(c))
	for x.cells[i] != 0 {
		i = x.next(i)
	}
	x.cells[i] = c
}

// grow starts moving the cells into a table about half as big again
// (grownLen). A growth
// still under way (which the load bound and moveStep make rare: only tiny
// tables fill that fast) is finished first.
func (x *keyIndex) grow(phase float64) {
	if x.moving() {
		x.move(len(x.old))
	}
	old := x.cells
	x.cells = make([]uint64, grownLen(len(old), 0, firstIndexCells, indexGrowth, phase))
	if x.n == 0 {
		return
	}
	x.old, x.moved = old, 0
}

// move moves up to steps cells of the old table into the current one, and
// lets the old table go once every cell is moved.
func (x *keyIndex) move(steps int) {
	end := min(x.moved+steps, len(x.old))
	for i := x.moved; i < end; i++ {
		if c := x.old[i]; c != 0 && c != movedCell {
			x.place(c)
			x.old[i] = movedCell
		}
	}
	x.moved = end
	if end == len(x.old) {
		x.old, x.moved = nil, 0
	}
}

// remove empties cell, as search numbers cells. In the current table it
// shifts back the cells after it that probed past it, so that every key
// stays reachable from its home without tombstones; in the old table it
// leaves a movedCell.
func (x *keyIndex) remove(cell int) {
	x.n--
	if cell >= len(x.cells) {
		x.old[cell-len(x.cells)] = movedCell
		if x.n == 0 {
			x.old, x.moved = nil, 0
		}
		return
	}
	i := cell
	for j := x.next(i); x.cells[j] != 0; j = x.next(j) {
		h := x.home(cellTag(x.cells[j]))
		// The cell at j may move to i unless its home lies cyclically in
		// (i, j].
		if i <= j && (i < h && h <= j) || i > j && (i < h || h <= j) {
			continue
		}
		x.cells[i] = x.cells[j]
		i = j
	}
	x.cells[i] = 0
}

// reset empties the index and lets its tables go.
func (x *keyIndex) reset() { *x = keyIndex{} }
