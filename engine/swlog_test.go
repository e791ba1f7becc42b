package engine

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// swReq is one request a test expects a log to hold.
type swReq struct {
	at int64
	n  uint32
}

// swTest drives a log directly and checks it, after every step, against
// the plain slice of requests it must hold.
type swTest struct {
	t     *testing.T
	ls    *swLogs // l's table
	l     *swLog
	want  []swReq
	limit int64
}

func newSWTest(t *testing.T, limit int64) *swTest {
	ls, l := newSWLogs(nil, nil)
	return &swTest{t: t, ls: ls, l: l, limit: limit}
}

// step drops the drop oldest requests and records n at at (none if n is 0).
func (s *swTest) step(drop int, at int64, n uint32) {
	s.t.Helper()
	before := s.l.bytes()
	v := swView{drop: drop}
	for _, r := range s.want[:drop] {
		v.gone += int64(r.n)
	}
	delta := s.ls.apply(s.l, v, at, int64(n), s.limit)
	s.want = s.want[drop:]
	if n > 0 {
		s.want = append(s.want, swReq{at, n})
	}
	if got := s.l.bytes() - before; delta != got {
		s.t.Fatalf("apply says the log grew %d bytes, it grew %d", delta, got)
	}
	s.check()
}

// check compares the log with want, and its bytes with its form.
func (s *swTest) check() {
	s.t.Helper()
	checkSWLog(s.t, s.ls, s.l, s.want)
}

// ringAt is where l's ring starts: the same place after a step means the
// log kept its ring (the array of words and the offset in it).
func ringAt(ls *swLogs, l *swLog) *uint64 { return &ls.ring(l)[0] }

func checkSWLog(t *testing.T, ls *swLogs, l *swLog, want []swReq) {
	t.Helper()
	ring := ls.ring(l)
	if l.size != len(want) {
		t.Fatalf("log holds %d requests, want %d", l.size, len(want))
	}
	var total int64
	for i, w := range want {
		at, n := l.get(ring, i)
		if at != w.at || n != w.n {
			t.Fatalf("request %d is (%d, %d), want (%d, %d); log %+v", i, at, n, w.at, w.n, *l)
		}
		total += int64(w.n)
	}
	if l.total != total {
		t.Fatalf("total %d, want %d", l.total, total)
	}
	if len(want) > 0 && l.oldest != want[0].at {
		t.Fatalf("oldest %d, want %d", l.oldest, want[0].at)
	}
	if len(want) > 0 && l.newest(ring) != want[len(want)-1].at {
		t.Fatalf("newest %d, want %d", l.newest(ring), want[len(want)-1].at)
	}
	c := l.capacity()
	if l.size > c || (c > 0 && int(l.head) >= c) {
		t.Fatalf("size %d, head %d in a ring of %d", l.size, l.head, c)
	}
	wantBytes := 8 * c
	if l.wide {
		wantBytes = 8 * wideLen(c)
	}
	if l.bytes() != int64(wantBytes) || l.n > 0 && (l.off>>offBits >= len(ls.chunks) || l.off&(1<<offBits-1)+l.n > len(ls.chunks[l.off>>offBits])) {
		t.Fatalf("%d bytes (%d words) for %d requests, wide %v", l.bytes(), l.n, c, l.wide)
	}
}

const hour = int64(time.Hour)

// TestSWLogSplitFollowsQuantities: requests of 1 take no quantity bits, so
// their offsets span any window, 100 years included; a larger quantity
// re-encodes the ring in place (no new ring) with as many bits as it needs.
func TestSWLogSplitFollowsQuantities(t *testing.T) {
	s := newSWTest(t, 1_000)
	for i := range 40 {
		s.step(0, epochDay+int64(i)*(MaxWindow/39), 1)
	}
	if s.l.wide || s.l.qbits != 0 {
		t.Fatalf("100 years of requests of 1: wide %v, %d quantity bits", s.l.wide, s.l.qbits)
	}
	s = newSWTest(t, 1_000)
	for i := range 3 {
		s.step(0, epochDay+int64(i), 1)
	}
	ring := ringAt(s.ls, s.l)
	for i, c := range []struct {
		n     uint32
		qbits uint8
	}{{2, 1}, {3, 2}, {1_000, 10}, {1 << 17, 17}, {1<<17 + 1, 18}, {MaxWindowLimit, 32}} {
		s.step(1, epochDay+hour+int64(i), c.n)
		if s.l.wide || s.l.qbits != c.qbits || ringAt(s.ls, s.l) != ring {
			t.Fatalf("after a request of %d: wide %v, %d quantity bits (want %d), same ring %v",
				c.n, s.l.wide, s.l.qbits, c.qbits, ringAt(s.ls, s.l) == ring)
		}
	}
}

// TestSWLogRebase: with 17 quantity bits a log's offsets reach 2^47 ns (39
// hours); a 1-hour window of requests every 10 minutes over 200 hours
// rebases in place, never widening, each request exact.
func TestSWLogRebase(t *testing.T) {
	s := newSWTest(t, 1_000)
	now := epochDay
	var ring *uint64
	bases := map[int64]bool{}
	for i := range 200 * 6 {
		now += 10 * int64(time.Minute)
		drop := 0
		for drop < len(s.want) && s.want[drop].at+hour <= now {
			drop++
		}
		s.step(drop, now, 1<<17-uint32(i%3))
		if i < 12 {
			ring = ringAt(s.ls, s.l) // once grown to hold the hour
			continue
		}
		bases[s.l.base] = true
		if s.l.wide || s.l.qbits != 17 || ringAt(s.ls, s.l) != ring {
			t.Fatalf("wide %v, %d quantity bits, same ring %v", s.l.wide, s.l.qbits, ringAt(s.ls, s.l) == ring)
		}
	}
	if len(bases) < 4 {
		t.Errorf("%d bases over 200 hours, want a rebase every 38 hours or so", len(bases))
	}
}

// TestSWLogWide: requests that do not fit a word with room to spare take
// the wide form, 12 bytes a request, exact to the nanosecond and the unit;
// once the ring is resized and they fit again, it is compact again.
func TestSWLogWide(t *testing.T) {
	cases := []struct {
		name string
		n    uint32 // a quantity in each request
		step int64  // between requests
	}{
		// 17 bits of quantity leave 2^47 ns, 39 hours.
		{"offsets too long for the quantities", 1 << 17, 2 * hour},
		// 32 bits leave 2^32 ns, 4.3s.
		{"the largest quantity, a second apart", MaxWindowLimit, int64(time.Second)},
		// 10 bits leave 2^54 ns, 208 days.
		{"quantities of 1024 over 50 years", 1 << 10, MaxWindow / 60},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSWTest(t, 1<<40)
			now := epochDay
			for range 31 {
				s.step(0, now, c.n)
				now += c.step
			}
			if !s.l.wide || s.l.capacity() != 32 || s.l.bytes() != 32*12 {
				t.Fatalf("wide %v, capacity %d, %d bytes; want wide, 32, 384", s.l.wide, s.l.capacity(), s.l.bytes())
			}
			// Wide rings grow and wrap as compact ones do.
			for range 40 {
				s.step(1, now, c.n-1+uint32(now&1))
				now += c.step
			}
			if !s.l.wide || s.l.capacity() != 32 {
				t.Fatalf("wide %v, capacity %d", s.l.wide, s.l.capacity())
			}
			s.step(0, now, 1)
			s.step(0, now+1, 1)
			if !s.l.wide || s.l.capacity() != 64 {
				t.Fatalf("grown: wide %v, capacity %d", s.l.wide, s.l.capacity())
			}
			// Shrinking to the newest request and one more 1 ns later.
			s.step(s.l.size-1, now+2, 1)
			if s.l.wide || s.l.capacity() != 32 || s.l.head != 0 {
				t.Fatalf("shrunk: wide %v, capacity %d, head %d", s.l.wide, s.l.capacity(), s.l.head)
			}
		})
	}
}

// TestSWLogClockBack: a request earlier than the base (a clock stepped
// back) rebases to it.
func TestSWLogClockBack(t *testing.T) {
	s := newSWTest(t, 100)
	s.step(0, epochDay, 1)
	s.step(0, epochDay-5, 3)
	s.step(0, epochDay-hour, 1)
	s.step(0, -1<<62, 1) // in 1823: too far for a request of 3
	if !s.l.wide {
		t.Fatal("2^62 ns with a request of 3 held: not wide")
	}
	s.step(4, 1<<62, 1) // in 2116
	for i := range 4 {
		s.step(0, 1<<62-int64(i), 1)
	}
	if s.l.wide || s.l.base != 1<<62-3 || s.l.qbits != 0 || s.l.capacity() != 8 {
		t.Fatalf("grown: wide %v, base %d, %d quantity bits, capacity %d", s.l.wide, s.l.base, s.l.qbits, s.l.capacity())
	}
}

// TestSWLogRingWraps: requests wrap around the end of a full ring, and
// re-encoding or widening a wrapped ring keeps their order.
func TestSWLogRingWraps(t *testing.T) {
	s := newSWTest(t, 8)
	now := epochDay
	for range 8 {
		now += 1_000
		s.step(0, now, 1)
	}
	if s.l.capacity() != 8 {
		t.Fatalf("capacity %d at the limit of 8", s.l.capacity())
	}
	for i := range 5 {
		now += 1_000
		s.step(1, now, uint32(1+i))
	}
	if s.l.head != 5 || s.l.qbits != 3 || s.l.wide {
		t.Fatalf("head %d, %d quantity bits, wide %v", s.l.head, s.l.qbits, s.l.wide)
	}
	s.step(1, now+3*int64(time.Second), MaxWindowLimit)
	if !s.l.wide || s.l.head != 0 || s.l.capacity() != 8 {
		t.Fatalf("wide %v, head %d, capacity %d", s.l.wide, s.l.head, s.l.capacity())
	}
	for i := range 11 {
		s.step(1, now+int64(4+i)*int64(time.Second), uint32(1+i))
	}
	if s.l.capacity() != 8 {
		t.Fatalf("capacity %d at the limit of 8", s.l.capacity())
	}
}

// TestSWLogGrowShrink: the ring doubles from 4 up to the limit and halves
// (down to 16) once a quarter full, in either form.
func TestSWLogGrowShrink(t *testing.T) {
	for _, n := range []uint32{1, MaxWindowLimit} {
		s := newSWTest(t, 100)
		now := epochDay
		var caps []int
		for range 100 {
			now += int64(time.Second)
			s.step(0, now, 1)
			if c := s.l.capacity(); len(caps) == 0 || caps[len(caps)-1] != c {
				caps = append(caps, c)
			}
		}
		if want := []int{4, 8, 16, 32, 64, 100}; !reflect.DeepEqual(caps, want) {
			t.Fatalf("capacities %v, want %v", caps, want)
		}
		s.step(0, now, n) // a request too many: a ring of 101
		caps = caps[:0]
		for s.l.size > 1 {
			s.step(1, now, 0)
			if c := s.l.capacity(); len(caps) == 0 || caps[len(caps)-1] != c {
				caps = append(caps, c)
			}
		}
		if want := []int{101, 50, 25, 12}; !reflect.DeepEqual(caps, want) {
			t.Fatalf("shrinking: capacities %v, want %v", caps, want)
		}
	}
}

// TestNewSWLog: a restored log takes the compact form when its requests
// fit, the wide one when not, and keeps a quantity of 0 as 0.
func TestNewSWLog(t *testing.T) {
	cases := []struct {
		name string
		reqs []swReq
		wide bool
	}{
		{"one", []swReq{{epochDay, 1}}, false},
		{"quantities of 0", []swReq{{epochDay, 0}, {epochDay + 1, 5}, {epochDay + 2, 0}}, false},
		{"largest quantity, long apart", []swReq{{epochDay, MaxWindowLimit}, {epochDay + hour, 1}}, true},
		{"five", []swReq{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {1 << 40, 5}}, false},
	}
	for _, c := range cases {
		times, qs := make([]int64, len(c.reqs)), make([]uint32, len(c.reqs))
		for i, r := range c.reqs {
			times[i], qs[i] = r.at, r.n
		}
		ls, l := newSWLogs(times, qs)
		checkSWLog(t, ls, l, c.reqs)
		if l.wide != c.wide || l.capacity() < 4 {
			t.Errorf("%s: wide %v, capacity %d", c.name, l.wide, l.capacity())
		}
	}
}

// TestSWLogRandom: random requests (quantities up to the largest, steps
// from a nanosecond to weeks, now and then back in time) and drops keep the
// log exact whichever form it takes; each form and each move between them
// is met.
func TestSWLogRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	seen := map[string]int{}
	for range 400 {
		s := newSWTest(t, 1+rng.Int64N(200))
		qmax := []uint32{1, 2, 1 << 10, 1 << 17, MaxWindowLimit}[rng.IntN(5)]
		stepMax := []int64{1, 1_000, int64(time.Second), hour, 40 * hour, MaxWindow / 1_000}[rng.IntN(6)]
		now := epochDay
		for range 200 {
			now += rng.Int64N(stepMax + 1)
			if rng.IntN(40) == 0 {
				now -= 3 * rng.Int64N(stepMax+1)
			}
			drop := 0
			switch rng.IntN(4) {
			case 0:
				drop = rng.IntN(len(s.want) + 1)
			case 1:
				drop = min(1, len(s.want))
			}
			n := uint32(0)
			if rng.IntN(8) > 0 {
				n = 1 + rng.Uint32N(qmax)
			}
			wide, base, qbits, c := s.l.wide, s.l.base, s.l.qbits, s.l.capacity()
			s.step(drop, now, n)
			switch {
			case wide != s.l.wide && s.l.wide:
				seen["to wide"]++
			case wide != s.l.wide:
				seen["to compact"]++
			case !wide && c == s.l.capacity() && (base != s.l.base || qbits != s.l.qbits):
				seen["rebased"]++
			}
		}
	}
	for k, least := range map[string]int{"to wide": 50, "to compact": 10, "rebased": 50} {
		if seen[k] < least {
			t.Errorf("%s %d times, want at least %d", k, seen[k], least)
		}
	}
	t.Logf("%v", seen)
}

// TestSWLogChangesRestore: SW logs in either form go through Changes and
// Restore exact, and the restored engine answers and counts its memory as
// the first.
func TestSWLogChangesRestore(t *testing.T) {
	e, c := newTrackingEngine(t)
	rules := []Rule{
		{Key: []byte("small"), Family: FamilySW, Window: WindowQuota{Limit: 1_000, Window: MaxWindow}},
		{Key: []byte("big"), Family: FamilySW, Window: WindowQuota{Limit: MaxWindowLimit, Window: 24 * hour}},
	}
	qty := []int64{1, 1 << 20}
	for i := range 50 {
		c.Set(time.Unix(0, start+int64(i)*hour+int64(i)))
		for j, r := range rules {
			if d, err := e.ThrottleWindow(nil, r, qty[j]+int64(i%2)); err != nil || d.Limited {
				t.Fatalf("%s: %+v, %v", r.Key, d, err)
			}
		}
	}
	recs := drain(e)
	for k, wide := range map[string]bool{"small": false, "big": true} {
		if _, l := newSWLogs(recs[k].Log, recs[k].Quantities); l.wide != wide {
			t.Fatalf("%s: wide %v", k, l.wide)
		}
	}
	e2, c2 := newTrackingEngine(t)
	c2.Set(c.Now())
	for _, r := range recs {
		if !e2.Restore(r) {
			t.Fatalf("Restore(%s) not taken", r.Key)
		}
	}
	e2.MarkChanged([]string{"small", "big"})
	if got := drain(e2); !reflect.DeepEqual(got, recs) {
		t.Fatalf("restored:\n got %+v\nwant %+v", got, recs)
	}
	if e2.Used() != e.Used() {
		t.Errorf("Used %d after Restore, %d in the first engine", e2.Used(), e.Used())
	}
	for _, r := range rules {
		for _, q := range []int64{0, 1, 1 << 21, MaxWindowLimit} {
			d1, err1 := e.ThrottleWindow(nil, r, q)
			d2, err2 := e2.ThrottleWindow(nil, r, q)
			if d1 != d2 || err1 != err2 || e.PTTL(nil, r.Key) != e2.PTTL(nil, r.Key) {
				t.Fatalf("%s, %d: %+v, %v; restored %+v, %v", r.Key, q, d1, err1, d2, err2)
			}
		}
	}
}

// TestSWLogStepAllocs: a log in its steady state, compact (rebasing in
// place now and then) or wide, decides and records without allocating.
func TestSWLogStepAllocs(t *testing.T) {
	cases := []struct {
		name string
		q    WindowQuota
		step int64
		qty  int64
		wide bool
	}{
		{"compact", WindowQuota{Limit: 1_000, Window: int64(time.Second)}, int64(10 * time.Millisecond), 1, false},
		{"compact, rebasing", WindowQuota{Limit: MaxWindowLimit, Window: hour}, int64(10 * time.Minute), 1 << 17, false},
		{"wide", WindowQuota{Limit: MaxWindowLimit, Window: 48 * hour}, int64(30 * time.Minute), 1 << 17, true},
	}
	for _, c := range cases {
		ls, l := newSWLogs(nil, nil)
		now := epochDay
		step := func() {
			now += c.step
			d, v := slidingLog(now, l, ls.ring(l), c.q, c.qty)
			if !d.Limited {
				ls.apply(l, v, now, c.qty, c.q.Limit)
			}
		}
		for range 2 * c.q.Window / c.step {
			step()
		}
		rebases, base := 0, l.base
		allocs := testing.AllocsPerRun(1_000, func() {
			step()
			if l.base != base {
				rebases, base = rebases+1, l.base
			}
		})
		if allocs != 0 || l.wide != c.wide {
			t.Errorf("%s: %v allocs a step, wide %v", c.name, allocs, l.wide)
		}
		if c.name == "compact, rebasing" && rebases < 3 {
			t.Errorf("%s: %d rebases over 1,000 steps of 10 minutes", c.name, rebases)
		}
	}
}

// TestSWLogHeaderFitsACacheLine: a decision reads the log's header, held
// in the shard's table of logs; at 64 bytes each header sits in one cache
// line, while at 72 or 56 most would straddle two, which measured as slow
// as reading the ring.
func TestSWLogHeaderFitsACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(swLog{}); n != 64 {
		t.Errorf("swLog is %d bytes, not 64", n)
	}
}
