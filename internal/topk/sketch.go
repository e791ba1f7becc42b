// Package topk finds the most frequent keys of a stream in fixed memory:
// the space-saving algorithm (Metwally, Agrawal and El Abbadi, 2005) over a
// fixed number of counters, and a HyperLogLog of the distinct keys.
package topk

import (
	"bytes"
	"hash/maphash"
	"unsafe"
)

// MaxKeyLen is the longest key a sketch keeps: a longer key is counted
// under its first MaxKeyLen bytes (and Entry.Truncated says so), so that
// every counter's key fits its fixed storage.
const MaxKeyLen = 256

// Sketch counts keys with space-saving: a key that holds a counter adds to
// it; a key that holds none takes the counter with the smallest count, c,
// and counts on from c+1, remembering c as its error. So with k counters
// and n events counted: every key counted more than n/k times holds a
// counter; a key's count overestimates its true count by at most its Err,
// and Err is at most the smallest count, which is at most n/k. Memory is
// fixed at construction: k counters, k*MaxKeyLen bytes of keys and an
// index of 2k slots; counting allocates nothing.
//
// The invariant: counters[:size] is a min-heap by count; index maps each
// held key's hash, by linear probing from hash&mask, to 1 + its counter's
// heap position (0 is an empty slot); counters[i].slot is its index slot.
// Not safe for concurrent use.
type Sketch struct {
	seed     maphash.Seed
	counters []counter
	size     int
	index    []int32
	mask     uint64
	keys     []byte // MaxKeyLen bytes per counter, at counter.keyOff
	n        uint64 // events counted
	distinct hll
}

// counter is one key's count. Its key stays where keyOff points while the
// counter moves about the heap.
type counter struct {
	hash        uint64
	count, err  uint64
	first, last int64 // times of the first and last events counted
	keyOff      int32
	slot        int32
	keyLen      uint16
	truncated   bool
	tag         uint8 // what the caller says of the key (its family)
}

// NewSketch returns a sketch of k counters (at least 1), hashing with seed.
func NewSketch(k int, seed maphash.Seed) *Sketch {
	k = max(k, 1)
	slots := 2
	for slots < 2*k {
		slots *= 2
	}
	s := &Sketch{
		seed:     seed,
		counters: make([]counter, k),
		index:    make([]int32, slots),
		mask:     uint64(slots - 1),
		keys:     make([]byte, k*MaxKeyLen),
	}
	for i := range s.counters {
		s.counters[i].keyOff = int32(i * MaxKeyLen)
	}
	return s
}

// Hash returns key's hash as Add wants it, of its first MaxKeyLen bytes.
func (s *Sketch) Hash(key []byte) uint64 {
	return maphash.Bytes(s.seed, key[:min(len(key), MaxKeyLen)])
}

// Add counts one event of key at time now (any unit; Entry reports it
// back), with h = s.Hash(key); tag is kept with the key, replaced by the
// latest event's. key is copied only when it takes a counter.
func (s *Sketch) Add(key []byte, h uint64, tag uint8, now int64) {
	s.n++
	s.distinct.add(h)
	truncated := len(key) > MaxKeyLen
	key = key[:min(len(key), MaxKeyLen)]
	if pos, ok := s.find(key, h); ok {
		c := &s.counters[pos]
		c.count++
		c.last, c.tag = now, tag
		s.down(pos)
		return
	}
	pos := 0
	if s.size < len(s.counters) {
		pos = s.size
		s.size++
		c := &s.counters[pos]
		*c = counter{keyOff: c.keyOff}
	} else {
		s.unindex(s.counters[0].slot)
		c := &s.counters[0]
		*c = counter{keyOff: c.keyOff, err: c.count, count: c.count}
	}
	c := &s.counters[pos]
	c.hash, c.count, c.first, c.last, c.tag, c.truncated = h, c.count+1, now, now, tag, truncated
	c.keyLen = uint16(copy(s.keys[c.keyOff:int(c.keyOff)+MaxKeyLen], key))
	c.slot = s.insert(h, pos)
	if pos > 0 {
		s.up(pos)
	} else {
		s.down(0)
	}
}

// key returns counter c's key, in the sketch's storage.
func (s *Sketch) key(c *counter) []byte {
	return s.keys[c.keyOff : int(c.keyOff)+int(c.keyLen)]
}

// find returns the heap position of key's counter.
func (s *Sketch) find(key []byte, h uint64) (int, bool) {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		p := s.index[i]
		if p == 0 {
			return 0, false
		}
		c := &s.counters[p-1]
		if c.hash == h && bytes.Equal(s.key(c), key) {
			return int(p - 1), true
		}
	}
}

// insert puts heap position pos in the index under h and returns its slot.
func (s *Sketch) insert(h uint64, pos int) int32 {
	i := h & s.mask
	for s.index[i] != 0 {
		i = (i + 1) & s.mask
	}
	s.index[i] = int32(pos + 1)
	return int32(i)
}

// unindex empties index slot i, shifting back the entries after it that
// probed past it, so that no probe sequence has a hole (no tombstones).
func (s *Sketch) unindex(i int32) {
	hole := uint64(i)
	for j := (hole + 1) & s.mask; s.index[j] != 0; j = (j + 1) & s.mask {
		c := &s.counters[s.index[j]-1]
		home := c.hash & s.mask
		// Move j into the hole unless its home lies cyclically in (hole, j].
		if (j-home)&s.mask >= (j-hole)&s.mask {
			s.index[hole] = s.index[j]
			c.slot = int32(hole)
			hole = j
		}
	}
	s.index[hole] = 0
}

// swap exchanges heap positions i and j, keeping the index pointing at them.
func (s *Sketch) swap(i, j int) {
	s.counters[i], s.counters[j] = s.counters[j], s.counters[i]
	s.index[s.counters[i].slot] = int32(i + 1)
	s.index[s.counters[j].slot] = int32(j + 1)
}

func (s *Sketch) less(i, j int) bool { return s.counters[i].count < s.counters[j].count }

func (s *Sketch) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Sketch) down(i int) {
	for {
		l := 2*i + 1
		if l >= s.size {
			return
		}
		m := l
		if r := l + 1; r < s.size && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			return
		}
		s.swap(i, m)
		i = m
	}
}

// Reset forgets every key, keeping the memory.
func (s *Sketch) Reset() {
	clear(s.index)
	s.size, s.n = 0, 0
	s.distinct.reset()
}

// Total is the number of events counted since the last Reset.
func (s *Sketch) Total() uint64 { return s.n }

// MinCount is the smallest count held when every counter is taken (a key
// not held was counted at most that many times), and 0 before.
func (s *Sketch) MinCount() uint64 {
	if s.size < len(s.counters) {
		return 0
	}
	return s.counters[0].count
}

// Entry is one key's count, as Entries reports it.
type Entry struct {
	Key string
	// Tag is what the latest Add said of the key.
	Tag uint8
	// Count overestimates the key's events by at most Err.
	Count, Err uint64
	// First and Last are the times of the first and the latest event
	// counted since the key took its counter.
	First, Last int64
	// Truncated says that the key was longer than MaxKeyLen; Key is its
	// first MaxKeyLen bytes.
	Truncated bool
}

// Entries appends every key held to buf, in no order. It allocates the keys.
func (s *Sketch) Entries(buf []Entry) []Entry {
	for i := range s.size {
		c := &s.counters[i]
		buf = append(buf, Entry{
			Key: string(s.key(c)), Tag: c.tag, Count: c.count, Err: c.err,
			First: c.first, Last: c.last, Truncated: c.truncated,
		})
	}
	return buf
}

// Bytes is the memory the sketch holds, fixed at construction.
func (s *Sketch) Bytes() int {
	return len(s.counters)*int(unsafe.Sizeof(counter{})) + len(s.index)*4 + len(s.keys) + len(s.distinct.reg)
}
