package topk

import (
	"cmp"
	"hash/maphash"
	"slices"
)

// Window counts the keys of about the last Length time units in two
// sketches: the current sub-window's, which starts at a multiple of Length,
// and the previous sub-window's. A key's count is its count in the current
// sub-window plus its count in the previous one weighted by the share of
// the previous sub-window that the last Length still covers (w = 1 -
// elapsed/Length), as a sliding-window counter weighs it: exact when the
// previous sub-window's events were spread evenly over it. So the
// estimate's error, beyond that assumption, is each sketch's: at most
// n_cur/k + w*n_prev/k either way (a key that lost its counter was counted
// at most the smallest count, and a count overestimates by at most Err).
// Memory is two sketches. Not safe for concurrent use, but for Hash.
type Window struct {
	seed      maphash.Seed // the sketches'; read-only, so that Hash needs no lock
	length    int64
	start     int64 // the current sub-window's start
	cur, prev *Sketch
}

// NewWindow returns a window of length time units (at least 1) holding k
// keys per sub-window.
func NewWindow(length int64, k int, seed maphash.Seed) *Window {
	return &Window{seed: seed, length: max(length, 1), cur: NewSketch(k, seed), prev: NewSketch(k, seed)}
}

// CopyInto makes dst a copy of w and returns it; a new window when dst is
// nil or holds another number of keys. Top and Distinct on the copy cost
// the caller's lock on w only the copy, a few memory copies, while the
// ranking, which builds a map of every key and sorts them, runs outside
// it.
func (w *Window) CopyInto(dst *Window) *Window {
	if dst == nil || len(dst.cur.counters) != len(w.cur.counters) {
		dst = NewWindow(w.length, len(w.cur.counters), w.seed)
	}
	dst.seed, dst.length, dst.start = w.seed, w.length, w.start
	w.cur.copyTo(dst.cur)
	w.prev.copyTo(dst.prev)
	return dst
}

// Length is the window's length.
func (w *Window) Length() int64 { return w.length }

// Hash returns key's hash, for Add. It reads nothing that Add or Top
// changes, so it may run beside them, outside the caller's lock (the
// sketches, which roll swaps, share its seed).
func (w *Window) Hash(key []byte) uint64 { return hashKey(w.seed, key) }

// roll moves the sub-windows on to the one now falls in. A clock that goes
// back leaves them where they are.
func (w *Window) roll(now int64) {
	start := now - mod(now, w.length)
	switch {
	case start <= w.start:
	case start == w.start+w.length:
		w.cur, w.prev = w.prev, w.cur
		w.cur.Reset()
	default:
		w.cur.Reset()
		w.prev.Reset()
	}
	w.start = max(w.start, start)
}

// mod is a mod b in [0, b), for b > 0.
func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// weight is the share of the previous sub-window still in the window at now.
func (w *Window) weight(now int64) float64 {
	elapsed := min(max(now-w.start, 0), w.length)
	return float64(w.length-elapsed) / float64(w.length)
}

// Add counts one event of key at now, with h = w.Hash(key) (see
// Sketch.Add). It allocates nothing.
func (w *Window) Add(key []byte, h uint64, tag uint8, now int64) {
	w.roll(now)
	w.cur.Add(key, h, tag, now)
}

// Ranked is one key's estimated count over the window.
type Ranked struct {
	Key       string
	Tag       uint8
	Truncated bool
	// Count estimates the key's events in the window; it overestimates by
	// at most Err (and may underestimate by up to Window.Bound).
	Count, Err uint64
	// First and Last are the times of the first and the latest event the
	// two sub-windows hold of the key.
	First, Last int64
}

// Top returns the n keys of highest estimated count at now, highest first
// (ties: the latest event first, then by key). It allocates its answer.
func (w *Window) Top(now int64, n int) []Ranked {
	w.roll(now)
	f := w.weight(now)
	byKey := make(map[string]*Ranked, w.cur.size+w.prev.size)
	var buf []Entry
	merge := func(s *Sketch, weight float64) {
		if weight == 0 {
			return
		}
		buf = s.Entries(buf[:0])
		for _, e := range buf {
			r := byKey[e.Key]
			if r == nil {
				r = &Ranked{Key: e.Key, First: e.First, Last: e.Last}
				byKey[e.Key] = r
			}
			r.Count += uint64(float64(e.Count)*weight + 0.5)
			r.Err += uint64(float64(e.Err)*weight + 0.5)
			r.First, r.Truncated = min(r.First, e.First), r.Truncated || e.Truncated
			if e.Last >= r.Last {
				r.Last, r.Tag = e.Last, e.Tag
			}
		}
	}
	merge(w.prev, f)
	merge(w.cur, 1)
	out := make([]Ranked, 0, len(byKey))
	for _, r := range byKey {
		if r.Count > 0 {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b Ranked) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Last, a.Last); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if n >= 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// Bound is the most by which a count Top returns at now may be off, either
// way, besides the even-spread assumption: each sub-window's smallest
// count, the previous one's weighted.
func (w *Window) Bound(now int64) uint64 {
	w.roll(now)
	return w.cur.MinCount() + uint64(float64(w.prev.MinCount())*w.weight(now)+0.5)
}

// Events estimates how many events the window holds at now.
func (w *Window) Events(now int64) uint64 {
	w.roll(now)
	return w.cur.Total() + uint64(float64(w.prev.Total())*w.weight(now)+0.5)
}

// Distinct estimates how many distinct keys the two sub-windows counted
// (so over the last Length to 2*Length: distinct keys cannot be weighed),
// within a standard error of 1.6%.
func (w *Window) Distinct(now int64) uint64 {
	w.roll(now)
	var u hll
	u.union(&w.cur.distinct)
	u.union(&w.prev.distinct)
	return u.estimate()
}
