package topk

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// add counts key once at now.
func add(s *Sketch, key string, now int64) {
	b := []byte(key)
	s.Add(b, s.Hash(b), 1, now)
}

// checkInvariant verifies the order, the runs and the index against each
// other.
func checkInvariant(t *testing.T, s *Sketch) {
	t.Helper()
	for i := 1; i < s.size; i++ {
		if s.counters[i].count > s.counters[i-1].count {
			t.Fatalf("order broken at %d: %d after %d", i, s.counters[i].count, s.counters[i-1].count)
		}
	}
	inRuns := 0
	for i := 0; i < s.size; {
		c := &s.counters[i]
		r := s.runs[c.run]
		if int(r.first) != i || r.last < r.first || int(r.last) >= s.size {
			t.Fatalf("counter %d's run is %+v", i, r)
		}
		for j := r.first; j <= r.last; j++ {
			if s.counters[j].run != c.run || s.counters[j].count != c.count {
				t.Fatalf("run %+v holds counter %d of run %d, count %d, not %d", r, j, s.counters[j].run, s.counters[j].count, c.count)
			}
		}
		if int(r.last)+1 < s.size && s.counters[r.last+1].count == c.count {
			t.Fatalf("two runs of count %d meet at %d", c.count, r.last)
		}
		inRuns++
		i = int(r.last) + 1
	}
	if inRuns+len(s.freeRuns) != len(s.runs) || cap(s.freeRuns) != len(s.runs) {
		t.Fatalf("%d runs in use and %d free (room for %d), of %d", inRuns, len(s.freeRuns), cap(s.freeRuns), len(s.runs))
	}
	free := make(map[int32]bool, len(s.freeRuns))
	for _, r := range s.freeRuns {
		if free[r] {
			t.Fatalf("run %d is free twice", r)
		}
		free[r] = true
	}
	for i := range s.size {
		if free[s.counters[i].run] {
			t.Fatalf("counter %d's run %d is free", i, s.counters[i].run)
		}
	}
	used := 0
	for _, p := range s.index {
		if p != 0 {
			used++
		}
	}
	if used != s.size {
		t.Fatalf("index holds %d keys, the counters %d", used, s.size)
	}
	for i := range s.size {
		c := &s.counters[i]
		if s.index[c.slot] != int32(i+1) {
			t.Fatalf("counter %d's slot %d points at %d", i, c.slot, s.index[c.slot]-1)
		}
		if pos, ok := s.find(s.key(c), c.hash); !ok || pos != i {
			t.Fatalf("key %q not found at %d", s.key(c), i)
		}
	}
}

func TestSketchExactWhileKeysFit(t *testing.T) {
	s := NewSketch(8, maphash.MakeSeed())
	want := map[string]uint64{"a": 5, "b": 3, "c": 1, "d": 8}
	now := int64(0)
	for k, n := range want {
		for range n {
			now++
			add(s, k, now)
		}
	}
	checkInvariant(t, s)
	got := s.Entries(nil)
	if len(got) != len(want) {
		t.Fatalf("got %d keys, want %d", len(got), len(want))
	}
	for _, e := range got {
		if e.Count != want[e.Key] || e.Err != 0 {
			t.Errorf("%s: count %d err %d, want %d err 0", e.Key, e.Count, e.Err, want[e.Key])
		}
		if e.First > e.Last {
			t.Errorf("%s: first %d after last %d", e.Key, e.First, e.Last)
		}
	}
}

func TestSketchTruncatesLongKeys(t *testing.T) {
	s := NewSketch(4, maphash.MakeSeed())
	long := strings.Repeat("x", MaxKeyLen+10)
	add(s, long, 1)
	add(s, long[:MaxKeyLen], 2) // the same key once truncated
	e := s.Entries(nil)
	if len(e) != 1 || e[0].Key != long[:MaxKeyLen] || e[0].Count != 2 || !e[0].Truncated {
		t.Fatalf("got %+v", e)
	}
}

// TestSketchAgainstModel follows every count against an exact model of
// space-saving, after every event, for sketches of 1 to 64 counters, keys
// spread evenly, skewed or colliding in the index, and Resets now and
// then: a held key's count is its error (the smallest count when it took
// its counter) plus its events since, the key that loses its counter held
// the smallest count, MinCount is the smallest count once the counters
// are all taken, and the counts add up to Total.
func TestSketchAgainstModel(t *testing.T) {
	for _, k := range []int{1, 2, 3, 4, 7, 16, 64} {
		for seed := range uint64(10) {
			r := rand.New(rand.NewPCG(seed, uint64(k)))
			s := NewSketch(k, maphash.MakeSeed())
			since := map[string]uint64{} // a held key's events since it took its counter
			errs := map[string]uint64{}  // and its error then
			nkeys, skew := 1+r.IntN(4*k+2), r.IntN(3)
			for i := range 2000 {
				if r.IntN(500) == 0 {
					s.Reset()
					clear(since)
					clear(errs)
					checkInvariant(t, s)
				}
				ki := r.IntN(nkeys)
				switch skew {
				case 1:
					ki = int(r.ExpFloat64()*float64(nkeys)/4) % nkeys
				case 2:
					ki = r.IntN(1 + r.IntN(nkeys))
				}
				key := fmt.Sprint("k", ki)
				h := s.Hash([]byte(key))
				if skew == 2 && ki%3 == 0 {
					h = uint64(ki) & 3 // collisions in the index
				}
				_, held := errs[key]
				least := s.MinCount()
				s.Add([]byte(key), h, 1, int64(i))
				entries := s.Entries(nil)
				if !held {
					if len(errs) == k {
						kept := make(map[string]bool, len(entries))
						for _, e := range entries {
							kept[e.Key] = true
						}
						var lost []string
						for kk := range errs {
							if !kept[kk] {
								lost = append(lost, kk)
							}
						}
						if len(lost) != 1 || errs[lost[0]]+since[lost[0]] != least {
							t.Fatalf("k=%d event %d: keys %q lost their counters, want one of count %d", k, i, lost, least)
						}
						delete(errs, lost[0])
						delete(since, lost[0])
						errs[key] = least
					} else {
						errs[key] = 0
					}
				}
				since[key]++
				checkInvariant(t, s)
				if len(entries) != len(errs) {
					t.Fatalf("k=%d event %d: %d keys held, want %d", k, i, len(entries), len(errs))
				}
				sum, smallest := uint64(0), ^uint64(0)
				for _, e := range entries {
					if e.Err != errs[e.Key] || e.Count != errs[e.Key]+since[e.Key] {
						t.Fatalf("k=%d event %d: %s counts %d (err %d), want %d (err %d)",
							k, i, e.Key, e.Count, e.Err, errs[e.Key]+since[e.Key], errs[e.Key])
					}
					sum += e.Count
					smallest = min(smallest, e.Count)
				}
				if sum != s.Total() {
					t.Fatalf("k=%d event %d: counts add up to %d, Total %d", k, i, sum, s.Total())
				}
				if want := uint64(0); len(entries) == k && s.MinCount() != smallest || len(entries) < k && s.MinCount() != want {
					t.Fatalf("k=%d event %d: MinCount %d with %d keys held, smallest %d", k, i, s.MinCount(), len(entries), smallest)
				}
			}
		}
	}
}

// TestSketchChurn evicts keys at random and checks the structure after
// each event, so that the index's backward shifts are exercised.
func TestSketchChurn(t *testing.T) {
	s := NewSketch(16, maphash.MakeSeed())
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20_000 {
		add(s, fmt.Sprint(r.IntN(64)), int64(i))
		if i%97 == 0 {
			checkInvariant(t, s)
		}
	}
	checkInvariant(t, s)
	sum := uint64(0)
	for _, e := range s.Entries(nil) {
		sum += e.Count
	}
	if sum != s.Total() {
		t.Fatalf("counts add up to %d, %d events", sum, s.Total())
	}
}

// heavyLoad is the synthetic load of the issue: light keys once each
// (100,000 of them) and 10 heavy keys taking 90% of all events, shuffled.
func heavyLoad() (events []string, heavy map[string]uint64) {
	const lightKeys, heavyKeys = 100_000, 10
	perHeavy := lightKeys * 9 / heavyKeys // 10 × 90,000 = 900,000: 90%
	heavy = make(map[string]uint64)
	for i := range lightKeys {
		events = append(events, fmt.Sprintf("user:%d", i))
	}
	for i := range heavyKeys {
		k := fmt.Sprintf("heavy:%d", i)
		heavy[k] = uint64(perHeavy)
		for range perHeavy {
			events = append(events, k)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	return events, heavy
}

// TestSketchHeavyHitters: under 1,000,000 events over 100,010 keys, the
// 10 heavy keys come first, each within its stated error and within n/k.
func TestSketchHeavyHitters(t *testing.T) {
	events, heavy := heavyLoad()
	const k = 1024
	s := NewSketch(k, maphash.MakeSeed())
	for i, key := range events {
		add(s, key, int64(i))
	}
	checkInvariant(t, s)
	w := &Window{length: 1, cur: s, prev: NewSketch(1, maphash.MakeSeed())}
	top := w.Top(0, 20)
	bound := uint64(len(events)) / k
	worst := uint64(0)
	for i, r := range top[:10] {
		want, ok := heavy[r.Key]
		if !ok {
			t.Fatalf("rank %d is %q (%d), not a heavy key", i+1, r.Key, r.Count)
		}
		over := r.Count - want // space-saving never underestimates a held key
		if r.Count < want || over > r.Err || r.Err > bound {
			t.Errorf("%s: count %d, true %d, err %d, n/k %d", r.Key, r.Count, want, r.Err, bound)
		}
		worst = max(worst, over)
	}
	if top[10].Count > top[9].Count {
		t.Errorf("not sorted")
	}
	t.Logf("events %d, k %d: n/k %d, min count %d, worst overcount of a heavy key %d (%.3f%%)",
		len(events), k, bound, s.MinCount(), worst, 100*float64(worst)/90_000)
	if d := s.distinct.estimate(); d < 95_000 || d > 105_000 {
		t.Errorf("distinct estimate %d, want about 100,010", d)
	}
	t.Logf("distinct keys 100,010, estimated %d", s.distinct.estimate())
}

// TestSketchMemoryBounded: counting 1,000,000 events of 100,010 keys
// allocates nothing and leaves the heap where it was.
func TestSketchMemoryBounded(t *testing.T) {
	events, _ := heavyLoad()
	keys := make([][]byte, len(events))
	for i, e := range events {
		keys[i] = []byte(e)
	}
	events = nil
	s := NewSketch(1024, maphash.MakeSeed())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	i := 0
	allocs := testing.AllocsPerRun(len(keys)-1, func() {
		s.Add(keys[i], s.Hash(keys[i]), 2, int64(i))
		i++
	})
	runtime.GC()
	runtime.ReadMemStats(&after)
	if allocs != 0 {
		t.Errorf("Add allocates %v per event", allocs)
	}
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("sketch of 1024 counters: %d bytes; heap change over %d events: %d bytes",
		s.Bytes(), len(keys), grew)
	if grew > 64<<10 {
		t.Errorf("heap grew by %d bytes", grew)
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(keys)
}

// BenchmarkSketchAdd counts events of many distinct keys, each taking the
// smallest count's counter (refusals spread over many keys), and of the
// heavy load, whose heavy keys add to counters they hold:
//
//	go test -run xxx -bench SketchAdd -benchmem ./internal/topk/
func BenchmarkSketchAdd(b *testing.B) {
	heavy, _ := heavyLoad()
	for _, load := range []struct {
		name   string
		events []string
	}{
		{"distinct", func() []string {
			keys := make([]string, 100_000)
			for i := range keys {
				keys[i] = fmt.Sprintf("user:%d", i)
			}
			return keys
		}()},
		{"heavy", heavy},
	} {
		keys := make([][]byte, len(load.events))
		hashes := make([]uint64, len(keys))
		s := NewSketch(1024, maphash.MakeSeed())
		for i, e := range load.events {
			keys[i] = []byte(e)
			hashes[i] = s.Hash(keys[i])
		}
		b.Run(load.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				j := i % len(keys)
				s.Add(keys[j], hashes[j], 1, int64(i))
			}
		})
	}
}
