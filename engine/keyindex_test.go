package engine

import (
	"math/rand/v2"
	"testing"
)

// findSlot returns the cell that files slot under tag, as search numbers
// cells, or -1.
func findSlot(x *keyIndex, slot, tag uint32) int {
	cell, ok := x.search(tag, func(held uint32) bool { return held == slot })
	if !ok {
		return -1
	}
	if got := x.slot(cell); got != slot {
		panic("search matched a cell that holds another slot")
	}
	return cell
}

// checkIndex fails unless the index holds exactly model's keys (slot → tag),
// each once across its two tables, within the load bound, with every key
// of the current table reachable from its home without crossing an empty
// cell.
func checkIndex(t *testing.T, x *keyIndex, model map[uint32]uint32) {
	t.Helper()
	if x.n != len(model) {
		t.Fatalf("%d keys indexed, want %d", x.n, len(model))
	}
	held := map[uint32]int{}
	for i, c := range x.cells {
		if c == 0 {
			continue
		}
		if c == movedCell {
			t.Fatalf("cell %d of the current table is marked moved", i)
		}
		held[cellSlot(c)]++
		for j := x.home(cellTag(c)); j != i; j = x.next(j) {
			if x.cells[j] == 0 {
				t.Fatalf("cell %d (home %d) lies past the empty cell %d", i, x.home(cellTag(c)), j)
			}
		}
	}
	for i, c := range x.old {
		if i < x.moved && c != 0 && c != movedCell {
			t.Fatalf("old cell %d is before the move's position %d but not moved", i, x.moved)
		}
		if c != 0 && c != movedCell {
			held[cellSlot(c)]++
		}
	}
	for slot, tag := range model {
		if held[slot] != 1 {
			t.Fatalf("slot %d held %d times, want once", slot, held[slot])
		}
		if findSlot(x, slot, tag) < 0 {
			t.Fatalf("slot %d (tag %#x) not found", slot, tag)
		}
	}
	if len(held) != len(model) {
		t.Fatalf("%d slots held, want %d", len(held), len(model))
	}
	if len(x.cells) > 0 && x.n*maxLoadDen > len(x.cells)*maxLoadNum {
		t.Fatalf("load %d/%d over the maximum", x.n, len(x.cells))
	}
}

// TestKeyIndexAgainstMap: random inserts, lookups and removals, with tags
// drawn from a small range so that keys collide, wrap around the table's
// end and are shifted back on removal, always find what a map finds, during
// growths as between them.
func TestKeyIndexAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tagRange := range []uint32{1 << 31, 1 << 8} {
		var x keyIndex
		model := map[uint32]uint32{} // slot → tag
		movingSteps := 0
		for step := range 300_000 {
			// The key count drifts up and down so that the table grows
			// while keys are also removed.
			slots := 2000
			if step/50_000%2 == 1 {
				slots = 8000
			}
			slot := uint32(r.IntN(slots))
			tag, held := model[slot]
			switch {
			case held && r.IntN(3) == 0:
				cell := findSlot(&x, slot, tag)
				if cell < 0 {
					t.Fatalf("step %d: slot %d (tag %#x) not found", step, slot, tag)
				}
				x.remove(cell)
				delete(model, slot)
			case held:
				if findSlot(&x, slot, tag) < 0 {
					t.Fatalf("step %d: slot %d (tag %#x) not found", step, slot, tag)
				}
			default:
				// Tags at both ends land in the table's last and first
				// cells, so that probes wrap and meet keys at home there.
				tag = r.Uint32N(tagRange)
				if r.IntN(2) == 0 {
					tag = ^tag
				}
				x.insert(tag, slot, 0)
				model[slot] = tag
			}
			if x.moving() {
				movingSteps++
			}
			if step%4999 == 0 {
				checkIndex(t, &x, model)
			}
		}
		checkIndex(t, &x, model)
		if movingSteps == 0 {
			t.Errorf("tag range %#x: no step ran during a growth", tagRange)
		}
	}
}

// TestKeyIndexGrowsIncrementally: the insert that grows the table moves no
// more than moveStep cells, and the growth ends within len(old)/moveStep
// further inserts, after which the old table is gone.
func TestKeyIndexGrowsIncrementally(t *testing.T) {
	var x keyIndex
	model := map[uint32]uint32{}
	r := rand.New(rand.NewPCG(5, 6))
	slot := uint32(0)
	insert := func() {
		tag := r.Uint32()
		x.insert(tag, slot, 0)
		model[slot] = tag
		slot++
	}
	for len(x.cells) < 10_000 {
		insert()
	}
	for !x.moving() {
		insert()
	}
	// Just grown: the new table holds the new key and at most moveStep
	// moved ones.
	inNew := 0
	for _, c := range x.cells {
		if c != 0 {
			inNew++
		}
	}
	if inNew > moveStep+1 {
		t.Fatalf("the growing insert moved %d cells at once, want at most %d", inNew-1, moveStep)
	}
	oldSize := len(x.old)
	ops := 0
	for x.moving() {
		insert()
		ops++
		if ops%100 == 0 {
			checkIndex(t, &x, model)
		}
	}
	if limit := (oldSize + moveStep - 1) / moveStep; ops > limit {
		t.Errorf("the growth took %d inserts, want at most %d", ops, limit)
	}
	checkIndex(t, &x, model)
}

// TestKeyIndexRemoveDuringGrowth: removals from both tables during a move,
// including runs of colliding tags that wrap around the new table's end,
// leave every other key reachable; removing the last key lets the old table
// go.
func TestKeyIndexRemoveDuringGrowth(t *testing.T) {
	for _, tags := range []struct {
		name string
		draw func(r *rand.Rand) uint32
	}{
		{"spread", func(r *rand.Rand) uint32 { return r.Uint32() }},
		// Few distinct tags near both ends: long clusters that wrap.
		{"colliding at the ends", func(r *rand.Rand) uint32 {
			tag := r.Uint32N(64)
			if r.IntN(2) == 0 {
				tag = ^tag
			}
			return tag
		}},
	} {
		t.Run(tags.name, func(t *testing.T) {
			var x keyIndex
			model := map[uint32]uint32{}
			r := rand.New(rand.NewPCG(7, 8))
			slot := uint32(0)
			for len(x.cells) < 2_000 || !x.moving() {
				tag := tags.draw(r)
				x.insert(tag, slot, 0)
				model[slot] = tag
				slot++
			}
			// Remove every key, in random order, checking the rest as the
			// move goes on (lookups move cells too).
			order := make([]uint32, 0, len(model))
			for s := range slot { // in slot order, not the map's: the run is the seed's
				order = append(order, s)
			}
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			fromOld, fromNew := 0, 0
			for k, s := range order {
				cell := findSlot(&x, s, model[s])
				if cell < 0 {
					t.Fatalf("slot %d not found", s)
				}
				if cell >= len(x.cells) {
					fromOld++
				} else {
					fromNew++
				}
				x.remove(cell)
				delete(model, s)
				if k%50 == 0 {
					checkIndex(t, &x, model)
				}
			}
			checkIndex(t, &x, model)
			if fromOld == 0 || fromNew == 0 {
				t.Errorf("removed %d keys from the old table and %d from the new; want both", fromOld, fromNew)
			}
			if x.moving() {
				t.Errorf("the old table outlived the last key")
			}
		})
	}
}
