package engine

// swLogs is a shard's sliding logs: their headers in a table, by the SW
// keys' entry.state, and their rings cut from a few large arrays of words
// (chunks). Neither holds a pointer, so that the garbage collector never
// looks inside them, and a ring that grows takes words from a chunk
// instead of an allocation of its own.
//
// A ring given up (its log grown, shrunk or removed) becomes garbage: one
// of up to maxFreeRing words goes on a list of free rings of its length,
// which the next ring of that length takes (rings grow through the same
// lengths, so most are taken again); the rest waits. Once the garbage
// reaches an eighth of the live words, the live rings are copied, in the
// table's order, into one new chunk, with an eighth to spare. So the words
// beyond the live rings stay within about a quarter of them, and a copy of
// every ring comes at most once per eighth of them given up; new chunks
// are an eighth of the live words, so that the chunks' unused ends stay
// small too. A copy moves every ring: a ring's words (ring, at) are valid
// until the next take. Not safe for concurrent use; guarded by the shard's
// lock.
type swLogs struct {
	table []swLog  // by index; a free index's log is zero
	free  []uint32 // free indexes of table
	// chunks hold the rings; new rings are cut from the last, whose first
	// cut words are used.
	chunks  [][]uint64
	cut     int
	live    int // words the rings hold
	garbage int // words cut from the chunks that no ring holds
	// freeRings[n] is the offset, plus 1, of the first free ring of n
	// words, 0 for none; a free ring's first word holds the next's.
	// (nil until a ring is first given up, so that a standalone log,
	// Decide's, does not carry the array).
	freeRings []int
	phase     float64 // the shard's (grownLen)
	// exact: a standalone log's (Decide's): chunks are cut to the words
	// asked for, and rings given up are not kept for reuse.
	exact bool
}

const (
	// maxFreeRing is the longest free ring kept for reuse, in words.
	maxFreeRing = 128
	// minChunk is the fewest words a chunk holds.
	minChunk = 64
	// offBits is how many low bits of a ring's offset place it in its
	// chunk; the high bits are the chunk's index.
	offBits = 32
)

// add returns the index of a new, empty log.
func (ls *swLogs) add() uint32 { return takeSlot(&ls.table, &ls.free, ls.phase) }

// remove frees log i and its ring, and returns the bytes its ring took.
func (ls *swLogs) remove(i uint32) int64 {
	l := &ls.table[i]
	b := l.bytes()
	ls.release(l)
	*l = swLog{}
	ls.free = append(ls.free, i)
	if ls.garbage > 4096 && ls.garbage > ls.live {
		ls.compact(0) // most rings removed: give their words back
	}
	return b
}

// ring returns l's ring, l being one of the table's logs.
func (ls *swLogs) ring(l *swLog) []uint64 { return ls.at(l.off, l.n) }

// at returns the n words at off (none when n is 0).
func (ls *swLogs) at(off, n int) []uint64 {
	if n == 0 {
		return nil
	}
	w := off & (1<<offBits - 1)
	return ls.chunks[off>>offBits][w : w+n : w+n]
}

// take returns the offset of n words for a ring, which hold anything: a
// ring's words beyond its requests are never read. It compacts the rings
// first when the garbage has grown to an eighth of the live words, which
// moves every ring.
func (ls *swLogs) take(n int) int {
	if n <= maxFreeRing && ls.freeRings != nil {
		if h := ls.freeRings[n]; h != 0 {
			w := ls.at(h-1, n)
			ls.freeRings[n] = int(w[0])
			ls.garbage -= n
			ls.live += n
			return h - 1
		}
	}
	if ls.garbage >= minChunk && ls.garbage >= ls.live/8 {
		ls.compact(n)
	}
	last := len(ls.chunks) - 1
	if last < 0 || n > len(ls.chunks[last])-ls.cut {
		if last >= 0 {
			ls.garbage += len(ls.chunks[last]) - ls.cut // its end, left unused
		}
		size := max(n, ls.live/8, minChunk)
		if ls.exact {
			size = n
		}
		ls.chunks = append(ls.chunks, make([]uint64, size))
		last, ls.cut = last+1, 0
	}
	off := last<<offBits | ls.cut
	ls.cut += n
	ls.live += n
	return off
}

// release makes l's ring garbage; l no longer has one.
func (ls *swLogs) release(l *swLog) {
	ls.discard(l.off, l.n)
	l.off, l.n = 0, 0
}

// discard makes the ring of n words at off garbage.
func (ls *swLogs) discard(off, n int) {
	if n == 0 {
		return
	}
	ls.live -= n
	ls.garbage += n
	if n <= maxFreeRing && !ls.exact {
		if ls.freeRings == nil {
			ls.freeRings = make([]int, maxFreeRing+1)
		}
		ls.at(off, n)[0] = uint64(ls.freeRings[n])
		ls.freeRings[n] = off + 1
	}
}

// compact copies the live rings into one new chunk with room for need
// more words and an eighth of the live ones to spare, and points each log
// at its ring's new place.
func (ls *swLogs) compact(need int) {
	chunk := make([]uint64, max(ls.live+need+(ls.live+need)/8, minChunk))
	cut := 0
	for i := range ls.table {
		l := &ls.table[i]
		if l.n == 0 {
			continue
		}
		copy(chunk[cut:], ls.ring(l))
		l.off = cut
		cut += l.n
	}
	clear(ls.chunks)
	ls.chunks = append(ls.chunks[:0], chunk)
	ls.cut, ls.garbage = cut, 0
	clear(ls.freeRings)
}

// A log's hint is where its next request will be written, kept in the
// high 32 bits of its key's entry.state (the low 32 are the log's index):
// 1 plus the word's chunk<<hintWordBits | its word in the chunk, or 0 when
// the log cannot say (no room in its ring, the wide form, or a place out
// of the hint's range). A decision reads that word (touch) as it reads the
// log's header, so that the two cache misses overlap instead of the write
// waiting for the header. A hint is only ever read, never trusted: one
// made stale by a compaction, a growth or a restore reads a word that does
// not matter, or none.
const hintWordBits = 29

// hint returns l's hint.
func (ls *swLogs) hint(l *swLog) uint64 {
	if l.n == 0 || l.wide || l.size >= l.n {
		return 0
	}
	j := int(l.head) + l.size
	if j >= l.n {
		j -= l.n
	}
	c, w := l.off>>offBits, l.off&(1<<offBits-1)+j
	if w >= 1<<hintWordBits || c<<hintWordBits|w >= 1<<32-1 {
		return 0
	}
	return 1 + uint64(c<<hintWordBits|w)
}

// touch returns the word hint names, or 0 for none; the read brings its
// cache line in for the write that follows.
func (ls *swLogs) touch(hint uint64) uint64 {
	if hint == 0 {
		return 0
	}
	h := hint - 1
	c, w := int(h>>hintWordBits), int(h&(1<<hintWordBits-1))
	if c >= len(ls.chunks) || w >= len(ls.chunks[c]) {
		return 0
	}
	return ls.chunks[c][w]
}
