package engine

import "math/bits"

// swLog is a sliding-log key's recorded requests in arrival order: a ring
// of arrival times (ns since the epoch), each with its quantity. Not safe
// for concurrent use; guarded by the shard's lock.
//
// The ring has two forms. The compact form, which almost every log takes,
// packs a request into one word, 8 bytes: its time as an offset from base
// in the high bits and its quantity less 1 in the low qbits bits. How the
// 64 bits are split follows the requests held: qbits is as small as their
// largest quantity allows (0 when each request counts 1), and the offsets
// take the rest (2^64 ns when qbits is 0; 2^47 ns, 39 hours, for
// quantities up to 131,072; 2^32 ns, 4.3s, for the largest). A request
// that does not fit re-encodes the ring in place with a new base (the
// earliest time held) and split. Where the held requests would not leave
// half the offset range free after that, the log takes the wide form
// instead: the ring's first c words are the times, the words after them
// its c quantities two to a word, 12 bytes a request. The form is chosen
// again, from the requests held, whenever the ring shrinks, or grows for a
// request that does not fit it as it is encoded.
//
// latest is the latest time held, which a decision's reset_after counts
// from. It is the newest request's unless an older one is later (restored
// from a clock ahead of ours, or recorded before the clock stepped back);
// and it stays held as long as any request is, since a request leaves the
// window only after every request before it, and once the latest one has,
// so has every other.
//
// oldest repeats the time of the oldest request, so that a decision in
// which no request leaves the window (most of them, when requests come
// faster than the window slides) reads the log's header alone, not its
// ring: the ring is another cache miss. The headers sit by value in the
// table of the shard's logs (swLogs), so that the key's entry alone says
// where its header is (no pointer read between the two), and each must be
// 64 bytes exactly: the table's size classes are multiples of 64, so each
// header sits in one cache line (at 72 or 56 bytes most would straddle
// two, and a decision would pay two misses instead of one). The ring is
// n words of the table's chunks, at off (swLogs.ring); the methods that
// read or write it take those words as ring.
type swLog struct {
	off    int    // where the ring is in the table's chunks (swLogs.at)
	n      int    // the ring's length in words; 0 when it has none
	base   int64  // compact form: the time offsets count from
	oldest int64  // time of the request at head, when size > 0
	latest int64  // the latest time held, when size > 0
	size   int    // requests held
	total  int64  // sum of the quantities held
	head   uint32 // index of the oldest request
	qbits  uint8  // compact form: low bits holding a quantity less 1
	wide   bool
}

// bytes is the memory the log's ring takes, for the keyspace's estimate.
func (l *swLog) bytes() int64 {
	if l == nil {
		return 0
	}
	return int64(l.n) * 8
}

// capacity is the number of requests the ring holds.
func (l *swLog) capacity() int {
	if l.wide {
		return l.n * 2 / 3 // n is c + (c+1)/2
	}
	return l.n
}

// wideLen is the length of a wide ring of capacity c.
func wideLen(c int) int {
	return c + (c+1)/2
}

// get returns the i-th oldest request: its time and quantity.
func (l *swLog) get(ring []uint64, i int) (int64, uint32) {
	if l.wide {
		return l.getWide(ring, i)
	}
	j := int(l.head) + i
	if j >= len(ring) {
		j -= len(ring)
	}
	return unpack(ring[j], l.base, l.qbits)
}

// getWide is get in the wide form.
func (l *swLog) getWide(ring []uint64, i int) (int64, uint32) {
	c := l.capacity()
	j := int(l.head) + i
	if j >= c {
		j -= c
	}
	return int64(ring[j]), uint32(ring[c+j/2] >> (32 * (j & 1)))
}

// newest returns the arrival time of the newest request; the log must not
// be empty. A wide ring's base and qbits are 0, so that its times read as
// a compact ring's do.
func (l *swLog) newest(ring []uint64) int64 {
	j := int(l.head) + l.size - 1
	if c := l.capacity(); j >= c {
		j -= c
	}
	return int64(uint64(l.base) + ring[j]>>(l.qbits&63))
}

// leavingWide returns how many of the oldest requests of a wide ring left
// a window ending at now, and their total quantity.
func (l *swLog) leavingWide(ring []uint64, now, window int64) (drop int, n int64) {
	for ; drop < l.size; drop++ {
		at, q := l.getWide(ring, drop)
		if at+window > now {
			break
		}
		n += int64(q)
	}
	return drop, n
}

// set writes request j of the ring, which must fit its form.
func (l *swLog) set(ring []uint64, j int, at int64, n uint32) {
	if !l.wide {
		ring[j] = pack(at, n, l.base, l.qbits)
		return
	}
	l.setWide(ring, j, at, n)
}

// setWide is set in the wide form.
func (l *swLog) setWide(ring []uint64, j int, at int64, n uint32) {
	c := l.capacity()
	ring[j] = uint64(at)
	shift := 32 * uint(j&1)
	w := &ring[c+j/2]
	*w = *w&^(0xffff_ffff<<shift) | uint64(n)<<shift
}

// pack is the compact form of a request at at of quantity n; n less 1
// wraps, so that a quantity of 0 (which a restored log may hold) takes
// all 32 bits and comes back as 0. qbits is at most 32: the shifts say
// &63 only to spare the check of a shift by 64 or more.
func pack(at int64, n uint32, base int64, qbits uint8) uint64 {
	return (uint64(at)-uint64(base))<<(qbits&63) | uint64(n-1)
}

// unpack is the request packed in e.
func unpack(e uint64, base int64, qbits uint8) (int64, uint32) {
	return int64(uint64(base) + e>>(qbits&63)), uint32(e&(1<<(qbits&63)-1)) + 1
}

// fits reports whether the compact ring holds a request at at of quantity
// n as it is encoded now.
func (l *swLog) fits(at int64, n uint32) bool {
	off := uint64(at) - uint64(l.base)
	return at >= l.base && off>>((63-l.qbits)&63)>>1 == 0 && uint64(n-1)>>(l.qbits&63) == 0
}

// swSpan gathers what choosing a form needs to know of some requests.
type swSpan struct {
	lo, hi int64  // earliest and latest time
	maxQ1  uint32 // largest quantity less 1 (wrapping, as pack does)
	any    bool
}

// add counts one request.
func (s *swSpan) add(at int64, n uint32) {
	if !s.any {
		s.lo, s.hi, s.any = at, at, true
	}
	s.lo, s.hi, s.maxQ1 = min(s.lo, at), max(s.hi, at), max(s.maxQ1, n-1)
}

// compact returns the base and split of a compact ring holding the
// requests, and false when they need the wide form: when their times
// would leave less than half of the offsets free. So, while the clock
// moves forward, at least half the offset range (2^31 ns, 2.1s, at the
// least) passes between two re-encodings, however long the window.
func (s *swSpan) compact() (base int64, qbits uint8, ok bool) {
	q := uint8(bits.Len32(s.maxQ1))
	return s.lo, q, uint64(s.hi)-uint64(s.lo) <= 1<<(63-q)
}

// span returns what choosing a form needs to know of the requests held,
// from the from-th oldest on, and of one more, at at, of quantity n, unless
// n is 0.
func (l *swLog) span(ring []uint64, from int, at int64, n uint32) swSpan {
	var s swSpan
	for i := from; i < l.size; i++ {
		s.add(l.get(ring, i))
	}
	if n > 0 {
		s.add(at, n)
	}
	return s
}

// swView is what a sliding-log decision needs to apply it: how many of the
// oldest requests left the window, and their total quantity.
type swView struct {
	drop int
	gone int64
}

// slidingLog decides a sliding-log request without changing the log
// (nil for none), whose ring is ring: the requests recorded in the last
// Window, plus qty, must be at most Limit. A request recorded at t counts
// until t+Window.
func slidingLog(now int64, l *swLog, ring []uint64, q WindowQuota, qty int64) (Decision, swView) {
	d := Decision{Limit: q.Limit, RetryAfter: -1}
	var v swView
	size, total := 0, int64(0)
	if l != nil {
		switch {
		case l.size == 0 || l.oldest+q.Window > now:
			// No request has left the window: the ring is not read.
		case l.wide:
			v.drop, v.gone = l.leavingWide(ring, now, q.Window)
		default:
			// The compact ring's loop, written out: every decision in
			// which requests leave the window runs it.
			base, qbits := l.base, l.qbits
			for j := int(l.head); v.drop < l.size; v.drop++ {
				if j == len(ring) {
					j = 0
				}
				at, n := unpack(ring[j], base, qbits)
				if at+q.Window > now {
					break
				}
				j++
				v.gone += int64(n)
			}
		}
		size, total = l.size-v.drop, l.total-v.gone
	}
	if qty <= q.Limit-total {
		d.Remaining = q.Limit - total - qty
		switch {
		case size > 0 && qty > 0:
			d.ResetAfter = max(l.latest, now) + q.Window - now
		case size > 0:
			d.ResetAfter = l.latest + q.Window - now
		case qty > 0:
			d.ResetAfter = q.Window
		}
		return d, v
	}
	d.Limited = true
	d.Remaining = max(q.Limit-total, 0)
	if size > 0 {
		d.ResetAfter = l.latest + q.Window - now
	}
	if qty > q.Limit {
		return d, v
	}
	// The request fits once enough of the oldest requests have left.
	need := total + qty - q.Limit
	for i := v.drop; i < l.size; i++ {
		at, n := l.get(ring, i)
		need -= int64(n)
		if need <= 0 {
			d.RetryAfter = at + q.Window - now
			break
		}
	}
	return d, v
}

// apply drops the requests that left the window from l, one of ls's logs,
// and records qty at now; it is called for an admitted decision. It returns
// the change in the log's bytes.
func (ls *swLogs) apply(l *swLog, v swView, now int64, qty, limit int64) int64 {
	before, c := l.bytes(), l.capacity()
	if v.drop > 0 {
		l.total -= v.gone
		head := int(l.head) + v.drop
		if head >= c {
			head -= c
		}
		l.head = uint32(head)
		l.size -= v.drop
		if l.size > 0 {
			l.oldest, _ = l.get(ls.ring(l), 0) // in the cache line the decision's scan just read
		}
	}
	if qty > 0 {
		n := uint32(qty)
		if l.size == c {
			ls.grow(l, growTo(c, l.size, limit), now, n)
			c = l.capacity()
		} else if l.needsRebase(now, n) {
			ls.rebase(l, now, n)
		}
		j := int(l.head) + l.size
		if j >= c {
			j -= c
		}
		l.set(ls.ring(l), j, now, n)
		if l.size == 0 {
			l.oldest, l.latest = now, now
		}
		l.latest = max(l.latest, now)
		l.size++
		l.total += qty
	}
	if shrinks(c, l.size) {
		ls.resize(l, c/2, 0, 0)
	}
	return l.bytes() - before
}

// needsRebase reports whether l's ring, with room for one more request at
// at of quantity n, must be re-encoded for it first: a compact ring whose
// encoding it does not fit.
func (l *swLog) needsRebase(at int64, n uint32) bool { return !l.wide && !l.fits(at, n) }

// growCopies reports whether l's full ring, growing for one more request at
// at of quantity n, keeps its encoding, its words copied as they are: a
// compact ring that the request fits.
func (l *swLog) growCopies(at int64, n uint32) bool { return !l.wide && l.n != 0 && l.fits(at, n) }

// shrinks reports whether a ring of capacity c holding size requests
// shrinks to half: past 16 slots, once a quarter or less is used.
func shrinks(c, size int) bool { return c > 16 && size <= c/4 }

// rebase re-encodes l's compact ring in place for the requests held and
// one more, at at, of quantity n; or, where they need it, moves them to
// the wide form.
func (ls *swLogs) rebase(l *swLog, at int64, n uint32) {
	ring := ls.ring(l)
	s := l.span(ring, 0, at, n)
	base, qbits, ok := s.compact()
	if !ok {
		ls.resize(l, l.capacity(), at, n)
		return
	}
	c := len(ring)
	for i := range l.size {
		j := int(l.head) + i
		if j >= c {
			j -= c
		}
		a, q := unpack(ring[j], l.base, l.qbits)
		ring[j] = pack(a, q, base, qbits)
	}
	l.base, l.qbits = base, qbits
}

// growTo is the capacity a full ring of c slots grows to: double, but never
// past the limit, since a log never holds more requests than its limit (each
// costs at least 1); so a key at its limit uses 8 bytes a request, not the
// up to 16 that doubling would leave. It is at least size+1, should the
// limit have been lowered since the requests were recorded.
func growTo(c, size int, limit int64) int {
	n := max(2*c, 4)
	if int64(n) > limit {
		n = int(max(limit, int64(size+1)))
	}
	return n
}

// grow moves the requests of l's full ring into a ring of capacity c,
// oldest first, to make room for one more, at at, of quantity n. A compact
// ring that the request fits as it is encoded keeps its encoding, and its
// words are copied as they are: most rings grow that way, and a copy costs
// a fraction of decoding and encoding every request held.
func (ls *swLogs) grow(l *swLog, c int, at int64, n uint32) {
	if !l.growCopies(at, n) {
		ls.resize(l, c, at, n)
		return
	}
	off := ls.take(c) // before the old ring is read: taking may move it
	old, ring := ls.ring(l), ls.at(off, c)
	k := copy(ring, old[l.head:])
	copy(ring[k:], old[:l.head])
	ls.release(l)
	l.off, l.n, l.head = off, c, 0
}

// resize moves l's requests into a ring of capacity c, oldest first, in
// the form that they and one more, at at, of quantity n (unless n is 0)
// fit.
func (ls *swLogs) resize(l *swLog, c int, at int64, n uint32) {
	s := l.span(ls.ring(l), 0, at, n)
	words, base, qbits, wide := ringForm(c, &s)
	off := ls.take(words) // before the old ring is read: taking may move it
	old, oldRing, ring := *l, ls.ring(l), ls.at(off, words)
	l.off, l.n, l.head, l.base, l.qbits, l.wide = off, words, 0, base, qbits, wide
	for i := range old.size {
		at, n := old.get(oldRing, i)
		l.set(ring, i, at, n)
	}
	ls.discard(old.off, old.n) // once read: a free ring's first word links the free list
}

// ringForm returns the length in words, the base and split, and the form
// of a ring of capacity c that the requests in s fit.
func ringForm(c int, s *swSpan) (words int, base int64, qbits uint8, wide bool) {
	base, qbits, ok := s.compact()
	if !ok {
		return wideLen(c), 0, 0, true
	}
	return c, base, qbits, false
}

// restore makes l, one of ls's logs, hold the requests at times with
// quantities qs, oldest first, in a ring of the smallest power of two (at
// least 4) that holds them; apply then grows it as usual.
func (ls *swLogs) restore(l *swLog, times []int64, qs []uint32) {
	c, s := restoredSpan(times, qs)
	ls.release(l)
	words, base, qbits, wide := ringForm(c, &s)
	*l = swLog{off: ls.take(words), n: words, base: base, qbits: qbits, wide: wide, size: len(times)}
	ring := ls.ring(l)
	for i, at := range times {
		l.set(ring, i, at, qs[i])
		l.total += int64(qs[i])
	}
	if len(times) > 0 {
		l.oldest, l.latest = times[0], s.hi
	}
}

// restoredSpan returns the capacity of the ring restore makes for the
// requests at times with quantities qs, and what choosing its form needs to
// know of them.
func restoredSpan(times []int64, qs []uint32) (int, swSpan) {
	c := 4
	for c < len(times) {
		c *= 2
	}
	var s swSpan
	for i, at := range times {
		s.add(at, qs[i])
	}
	return c, s
}

// restoredBytes is the memory the ring restore makes for the requests at
// times with quantities qs takes, as swLog.bytes counts it.
func restoredBytes(times []int64, qs []uint32) int64 {
	c, s := restoredSpan(times, qs)
	words, _, _, _ := ringForm(c, &s)
	return int64(words) * 8
}

// newSWLogs returns logs holding one log, with the requests at times with
// quantities qs (none when times is empty): a log of its own, for a
// decision on a stored state.
func newSWLogs(times []int64, qs []uint32) (*swLogs, *swLog) {
	ls := &swLogs{table: make([]swLog, 1), exact: true}
	l := &ls.table[0]
	if len(times) > 0 {
		ls.restore(l, times, qs)
	}
	return ls, l
}
