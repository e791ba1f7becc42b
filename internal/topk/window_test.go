package topk

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"
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

// TestWindowCopyInto: a copy ranks and counts what the window does, and
// goes on doing so while the window counts on; copying again into it
// reuses it.
func TestWindowCopyInto(t *testing.T) {
	const length = int64(time.Minute)
	w := NewWindow(length, 64, maphash.MakeSeed())
	rng := rand.New(rand.NewPCG(3, 4))
	add := func(from int64, n int) {
		for i := range n {
			key := []byte(fmt.Sprintf("k%d", rng.IntN(300)))
			w.Add(key, w.Hash(key), uint8(i%3), from+int64(i)*int64(time.Millisecond))
		}
	}
	add(0, 20_000)       // the first sub-window
	add(length+1, 5_000) // the next: both hold counts
	now := length + 1 + 5_000*int64(time.Millisecond)
	c := w.CopyInto(nil)
	want, wantDistinct := w.Top(now, 20), w.Distinct(now)
	add(now, 5_000)
	if got := c.Top(now, 20); !reflect.DeepEqual(got, want) {
		t.Fatalf("the copy's top:\n%v\nthe window's when copied:\n%v", got, want)
	}
	if got := c.Distinct(now); got != wantDistinct {
		t.Fatalf("the copy's distinct %d, the window's %d", got, wantDistinct)
	}
	if again := w.CopyInto(c); again != c {
		t.Fatal("copying again into a copy of the same shape made a new window")
	}
	later := now + 5_000*int64(time.Millisecond)
	if got, want := c.Top(later, 20), w.Top(later, 20); !reflect.DeepEqual(got, want) {
		t.Fatalf("copied again, the copy's top:\n%v\nthe window's:\n%v", got, want)
	}
}

// BenchmarkWindowCopyInto is what a ranking of THROTTLE.TOP's window
// (topCounters keys a sub-window, keys as long as MaxKeyLen) holds the
// refusals' lock for; BenchmarkWindowTop is the ranking it no longer holds
// it for.
func BenchmarkWindowCopyInto(b *testing.B) {
	w := fullWindow()
	c := w.CopyInto(nil)
	b.ReportAllocs()
	for b.Loop() {
		c = w.CopyInto(c)
	}
}

func BenchmarkWindowTop(b *testing.B) {
	w := fullWindow()
	b.ReportAllocs()
	for b.Loop() {
		w.Top(int64(time.Minute)+1, 10)
	}
}

// fullWindow is a window of 1,024 keys a sub-window, both full of keys of
// MaxKeyLen bytes.
func fullWindow() *Window {
	const length = int64(time.Minute)
	w := NewWindow(length, 1024, maphash.MakeSeed())
	key := make([]byte, MaxKeyLen)
	for _, from := range []int64{0, length} {
		for i := range 4096 {
			copy(key, fmt.Sprintf("%0256d", i))
			w.Add(key, w.Hash(key), 0, from+int64(i))
		}
	}
	return w
}
