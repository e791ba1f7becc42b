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
// fixed at construction: k counters, k*MaxKeyLen bytes of keys, an index
// of 2k slots and k runs; counting allocates nothing and takes constant
// time, whatever the counts (the stream-summary of the paper, in arrays).
//
// The invariant: counters[:size] is sorted by count, largest first, so
// the smallest count is the last; the counters of one count are one run,
// runs[c.run] holding its first and last positions; index maps each held
// key's hash, by linear probing from hash&mask, to 1 + its counter's
// position (0 is an empty slot); counters[i].slot is its index slot. A
// count goes up by one by moving the counter to the front of its run and
// joining the run before it, or a new one: the order holds, and nothing
// else moves. Not safe for concurrent use.
type Sketch struct {
	seed     maphash.Seed
	counters []counter
	size     int
	runs     []run
	freeRuns []int32 // the indexes of runs no counter is in
	index    []int32
	mask     uint64
	keys     []byte // MaxKeyLen bytes per counter, at counter.keyOff
	n        uint64 // events counted
	distinct hll
}

// counter is one key's count. Its key stays where keyOff points while the
// counter moves about the array.
type counter struct {
	hash        uint64
	count, err  uint64
	first, last int64 // times of the first and last events counted
	keyOff      int32
	slot        int32
	run         int32 // the run of counters of this count it is in
	keyLen      uint16
	truncated   bool
	tag         uint8 // what the caller says of the key (its family)
}

// run is the positions, first to last, of the counters of one count.
type run struct{ first, last int32 }

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
		runs:     make([]run, k),
		freeRuns: make([]int32, 0, k),
		index:    make([]int32, slots),
		mask:     uint64(slots - 1),
		keys:     make([]byte, k*MaxKeyLen),
	}
	for i := range s.counters {
		s.counters[i].keyOff = int32(i * MaxKeyLen)
	}
	s.freeAllRuns()
	return s
}

// freeAllRuns puts every run on the free list.
func (s *Sketch) freeAllRuns() {
	s.freeRuns = s.freeRuns[:0]
	for i := len(s.runs) - 1; i >= 0; i-- {
		s.freeRuns = append(s.freeRuns, int32(i))
	}
}

// Hash returns key's hash as Add wants it, of its first MaxKeyLen bytes.
func (s *Sketch) Hash(key []byte) uint64 { return hashKey(s.seed, key) }

// hashKey is key's hash under seed, of its first MaxKeyLen bytes.
func hashKey(seed maphash.Seed, key []byte) uint64 {
	return maphash.Bytes(seed, key[:min(len(key), MaxKeyLen)])
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
		c := &s.counters[s.increment(pos)]
		c.last, c.tag = now, tag
		return
	}
	var pos int
	if s.size < len(s.counters) {
		// A new counter of count 0, last and in a run of its own.
		pos = s.size
		s.size++
		r := s.takeRun()
		s.runs[r] = run{int32(pos), int32(pos)}
		c := &s.counters[pos]
		*c = counter{keyOff: c.keyOff, run: r}
	} else {
		// The smallest count's counter, the last, becomes the key's.
		pos = s.size - 1
		s.unindex(s.counters[pos].slot)
		c := &s.counters[pos]
		*c = counter{keyOff: c.keyOff, run: c.run, err: c.count, count: c.count}
	}
	c := &s.counters[pos]
	c.hash, c.first, c.tag, c.truncated = h, now, tag, truncated
	c.keyLen = uint16(copy(s.keys[c.keyOff:int(c.keyOff)+MaxKeyLen], key))
	c.slot = s.insert(h, pos)
	c = &s.counters[s.increment(pos)]
	c.last = now
}

// increment adds one to the count at position pos and returns the
// counter's new position: the front of its run, which it leaves for the
// run before it when that one's count is the new count, or for a new run.
func (s *Sketch) increment(pos int) int {
	r := s.counters[pos].run
	front := int(s.runs[r].first)
	if front != pos {
		s.swap(pos, front)
	}
	if s.runs[r].first++; s.runs[r].first > s.runs[r].last {
		s.freeRuns = append(s.freeRuns, r)
	}
	c := &s.counters[front]
	c.count++
	if front > 0 && s.counters[front-1].count == c.count {
		c.run = s.counters[front-1].run
		s.runs[c.run].last = int32(front)
	} else {
		c.run = s.takeRun()
		s.runs[c.run] = run{int32(front), int32(front)}
	}
	return front
}

// takeRun returns a free run's index; there is always one, since no more
// runs are in use than counters.
func (s *Sketch) takeRun() int32 {
	r := s.freeRuns[len(s.freeRuns)-1]
	s.freeRuns = s.freeRuns[:len(s.freeRuns)-1]
	return r
}

// key returns counter c's key, in the sketch's storage.
func (s *Sketch) key(c *counter) []byte {
	return s.keys[c.keyOff : int(c.keyOff)+int(c.keyLen)]
}

// find returns the position of key's counter.
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

// insert puts position pos in the index under h and returns its slot.
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

// swap exchanges positions i and j, keeping the index pointing at them.
func (s *Sketch) swap(i, j int) {
	s.counters[i], s.counters[j] = s.counters[j], s.counters[i]
	s.index[s.counters[i].slot] = int32(i + 1)
	s.index[s.counters[j].slot] = int32(j + 1)
}

// Reset forgets every key, keeping the memory.
func (s *Sketch) Reset() {
	clear(s.index)
	s.size, s.n = 0, 0
	s.freeAllRuns()
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
	return s.counters[s.size-1].count
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

// copyTo makes dst, a sketch of as many counters, a copy of s: a few
// memory copies, however many keys s holds.
func (s *Sketch) copyTo(dst *Sketch) {
	dst.seed, dst.size, dst.mask, dst.n, dst.distinct = s.seed, s.size, s.mask, s.n, s.distinct
	copy(dst.counters, s.counters)
	copy(dst.runs, s.runs)
	dst.freeRuns = append(dst.freeRuns[:0], s.freeRuns...)
	copy(dst.index, s.index)
	copy(dst.keys, s.keys)
}

// Bytes is the memory the sketch holds, fixed at construction.
func (s *Sketch) Bytes() int {
	return len(s.counters)*int(unsafe.Sizeof(counter{})) + len(s.runs)*int(unsafe.Sizeof(run{})) +
		cap(s.freeRuns)*4 + len(s.index)*4 + len(s.keys) + len(s.distinct.reg)
}
