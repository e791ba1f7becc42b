package topk

import (
	"hash/maphash"
	"sync"
	"testing"
)

// TestWindowSlides: the previous sub-window counts in proportion to how
// much of it the window still covers, and goes once two lengths pass.
func TestWindowSlides(t *testing.T) {
	w := NewWindow(60, 16, maphash.MakeSeed())
	addAt := func(key string, n int, now int64) {
		for range n {
			b := []byte(key)
			w.Add(b, w.Hash(b), 3, now)
		}
	}
	addAt("a", 100, 60) // sub-window [60, 120)
	addAt("b", 10, 119)
	steps := []struct {
		now        int64
		wantA      uint64
		wantB      uint64
		wantEvents uint64
	}{
		{119, 100, 10, 110},
		{120, 100, 10, 110}, // the next sub-window starts: all of the previous one counts
		{150, 50, 5, 55},    // half of it
		{165, 25, 3, 28},    // a quarter (2.5 rounds up)
		{180, 0, 0, 0},      // it has left
	}
	for _, s := range steps {
		got := map[string]uint64{}
		for _, r := range w.Top(s.now, 10) {
			got[r.Key] = r.Count
			if r.Tag != 3 || r.First > r.Last {
				t.Errorf("at %d: %+v", s.now, r)
			}
		}
		if got["a"] != s.wantA || got["b"] != s.wantB || w.Events(s.now) != s.wantEvents {
			t.Errorf("at %d: got %v, %d events; want a %d, b %d, %d events",
				s.now, got, w.Events(s.now), s.wantA, s.wantB, s.wantEvents)
		}
	}
	if d := w.Distinct(180); d != 0 {
		t.Errorf("distinct after the window: %d", d)
	}
	addAt("c", 1, 1000) // long after: both sub-windows start afresh
	if top := w.Top(1000, 10); len(top) != 1 || top[0].Key != "c" || top[0].First != 1000 {
		t.Errorf("after a gap: %+v", top)
	}
	if d := w.Distinct(1000); d != 1 {
		t.Errorf("distinct: %d, want 1", d)
	}
}

// TestWindowHashBesideAdd: Hash runs outside the lock that guards Add and
// Top (as THROTTLE.TOP's caller hashes a key before locking), while the
// sub-windows roll; run with -race. It gives the sketches' hash.
func TestWindowHashBesideAdd(t *testing.T) {
	w := NewWindow(10, 4, maphash.MakeSeed())
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte{'k', byte(g)}
			for i := range 2000 {
				h := w.Hash(key)
				mu.Lock()
				if h != w.cur.Hash(key) {
					t.Errorf("Hash %x, the sketch's %x", h, w.cur.Hash(key))
				}
				w.Add(key, h, 1, int64(i))
				if i%7 == 0 {
					w.Top(int64(i), 1)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
