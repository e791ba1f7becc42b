package engine

import (
	"math/rand/v2"
	"testing"
)

// TestKeyIndexAgainstMap: random inserts and removals, with tags drawn from
// a small range so that keys collide, wrap around the table's end and are
// shifted back on removal, always find what a map finds.
func TestKeyIndexAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tagRange := range []uint32{1 << 31, 1 << 8} {
		var x keyIndex
		model := map[uint32]uint32{} // slot → tag
		find := func(slot, tag uint32) int {
			if len(x.cells) == 0 {
				return -1
			}
			for i := x.home(tag); x.cells[i] != 0; i = x.next(i) {
				if uint32(x.cells[i]>>32) == tag && x.slot(i) == slot {
					return i
				}
			}
			return -1
		}
		for step := range 200_000 {
			slot := uint32(r.IntN(4000))
			tag, held := model[slot]
			switch {
			case held && r.IntN(2) == 0:
				i := find(slot, tag)
				if i < 0 {
					t.Fatalf("step %d: slot %d (tag %d) not found", step, slot, tag)
				}
				x.remove(i)
				delete(model, slot)
			case !held:
				// Tags at both ends land in the table's last and first
				// cells, so that probes wrap and meet keys at home there.
				tag = r.Uint32N(tagRange)
				if r.IntN(2) == 0 {
					tag = ^tag
				}
				x.insert(tag, slot)
				model[slot] = tag
			}
			if x.n != len(model) {
				t.Fatalf("step %d: %d keys indexed, want %d", step, x.n, len(model))
			}
		}
		for slot, tag := range model {
			if find(slot, tag) < 0 {
				t.Fatalf("slot %d (tag %d) lost", slot, tag)
			}
		}
		if load := float64(x.n) / float64(len(x.cells)); load > 0.85 {
			t.Errorf("load %.2f over the maximum", load)
		}
	}
}
