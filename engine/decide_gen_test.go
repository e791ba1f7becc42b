package engine

import (
	"math"
	"math/rand/v2"
)

// decideGen draws the random and extreme cases of the Decide model test:
// instants, quotas, quantities and stored states, each family's own and
// those a store may hold that the keyspace never writes (inconsistent
// expiries, unaligned buckets, counts past the limit, future requests).
type decideGen struct {
	rng *rand.Rand
}

// pick returns one of vs.
func pick[T any](g decideGen, vs ...T) T { return vs[g.rng.IntN(len(vs))] }

// now is the instant of a call: around today, rarely near the epoch; a
// third of them on a whole millisecond, where expiries round differently.
func (g decideGen) now() int64 {
	var now int64
	switch g.rng.IntN(10) {
	case 0:
		now = g.rng.Int64N(10_000_000_000) // the first seconds after the epoch
	case 1:
		now = start + g.rng.Int64N(1<<60) // up to 36 years ahead
	default:
		now = start + g.rng.Int64N(1<<40) - 1<<39
	}
	if g.rng.IntN(3) == 0 {
		now -= now % 1_000_000
	}
	return now
}

// extremes are the GCRA model test's extreme arguments.
var extremes = []int64{0, 1, -1, 2, 15, 30, 60, 1000, 86400, 1 << 31, 1 << 53,
	math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1, -86400}

// gcraArg is a CL argument as TestGCRAMatchesModel draws one: an extreme,
// a small value (zero and negatives included) or anything.
func (g decideGen) gcraArg() int64 {
	switch g.rng.IntN(4) {
	case 0:
		return pick(g, extremes...)
	case 1:
		return g.rng.Int64N(2000) - 100
	case 2:
		return g.rng.Int64N(100) + 1
	}
	return int64(g.rng.Uint64())
}

// gcraQuota is a CL quota; mostly a valid one, so that most calls decide.
// Some emit every 0.5 to 2ms, where a quantity of -1 leaves a TAT a
// millisecond in the past, which removes the key.
func (g decideGen) gcraQuota() GCRAQuota {
	switch g.rng.IntN(6) {
	case 0, 1:
		return GCRAQuota{MaxBurst: g.gcraArg(), Count: g.gcraArg(), Period: g.gcraArg()}
	case 2:
		return GCRAQuota{MaxBurst: g.rng.Int64N(3), Count: 500 + g.rng.Int64N(1500), Period: 1}
	}
	return GCRAQuota{MaxBurst: g.rng.Int64N(50), Count: 1 + g.rng.Int64N(100), Period: 1 + g.rng.Int64N(3600)}
}

// windowQuota is an SW, SWC or FW quota, from the smallest to the largest.
func (g decideGen) windowQuota() WindowQuota {
	q := WindowQuota{Limit: 1 + g.rng.Int64N(10), Window: int64(pick(g, 1, 7, 999_983, 1_000_000, 250_000_000, 1e9, 60e9, 3600e9))}
	switch g.rng.IntN(6) {
	case 0:
		q.Limit = pick[int64](g, 1, MaxWindowLimit, MaxWindowLimit-1, 1+g.rng.Int64N(MaxWindowLimit))
	case 1:
		q.Window = pick[int64](g, 1, MaxWindow, MaxWindow-1, 1+g.rng.Int64N(MaxWindow))
	}
	return q
}

// quantity is a call's quantity: 0, 1, small, around the limit, huge or
// negative.
func (g decideGen) quantity(limit int64) int64 {
	switch g.rng.IntN(12) {
	case 0, 1:
		return 0
	case 2, 3, 4:
		return 1
	case 5, 6:
		return 1 + g.rng.Int64N(max(limit, 1))
	case 7:
		return limit + g.rng.Int64N(3) - 1
	case 8:
		return pick[int64](g, -1, math.MinInt64, -g.rng.Int64N(100), math.MaxInt64, 1<<32, MaxWindowLimit)
	case 9:
		return pick(g, extremes...)
	}
	return g.rng.Int64N(5)
}

// expiry is a live state's ExpireAtMs: now's millisecond (the last one it
// lives), soon, far, or the largest.
func (g decideGen) expiry(nowMs int64) int64 {
	switch g.rng.IntN(6) {
	case 0:
		return nowMs
	case 1:
		return pick[int64](g, math.MaxInt64, nowMs+1<<40)
	}
	return nowMs + g.rng.Int64N(200_000)
}

// state is a stored state for a key of family f (FamilyNone: any family,
// or none): absent, deleted, expired, malformed, or live with fresh or
// extreme fields.
func (g decideGen) state(f Family, now int64, q WindowQuota) Record {
	nowMs := now / 1_000_000
	if q.Window == 0 {
		q = g.windowQuota() // a CL rule's key holding another family's state
	}
	rec := Record{}
	switch g.rng.IntN(16) {
	case 0:
		return rec
	case 1:
		return Record{Deleted: true}
	case 2:
		f = pick(g, FamilyCL, FamilySW, FamilySWC, FamilyFW, FamilyLB) // perhaps another family
	}
	if f == FamilyNone {
		f = pick(g, FamilyCL, FamilySW, FamilySWC, FamilyFW, FamilyLB)
	}
	rec.Family, rec.ExpireAtMs = f, g.expiry(nowMs)
	if g.rng.IntN(10) == 0 {
		rec.ExpireAtMs = nowMs - 1 - g.rng.Int64N(100_000) // expired
	}
	switch f {
	case FamilyCL:
		rec.TAT = g.tat(now)
	case FamilySWC, FamilyFW:
		rec.Start, rec.Cur, rec.Prev = g.bucket(now, q.Window), g.count(q.Limit), g.count(q.Limit)
		if f == FamilyFW && g.rng.IntN(2) == 0 {
			rec.Prev = 0
		}
	case FamilySW:
		rec.Log, rec.Quantities = g.log(now, q)
	case FamilyLB:
		rec.Tail = g.tail(now)
	}
	return rec
}

// tail is an LB state's next free departure: around now (the queue
// drained, or a few intervals long), far ahead, or an extreme.
func (g decideGen) tail(now int64) int64 {
	switch g.rng.IntN(8) {
	case 0:
		return pick[int64](g, 0, -1, math.MinInt64, math.MaxInt64, now, now+1, now-1)
	case 1:
		return now + g.rng.Int64N(MaxWindow)
	}
	return now + g.rng.Int64N(20_000_000_000) - 5_000_000_000
}

// leakyQuota is an LB quota: mostly valid, some at the extremes, a few out
// of range (ErrLeakyQuota).
func (g decideGen) leakyQuota() LeakyQuota {
	q := LeakyQuota{Count: 1 + g.rng.Int64N(20), Period: int64(pick(g, 1, 7, 999_983, 1_000_000, 250_000_000, 1e9, 60e9))}
	q.MaxWait = pick[int64](g, 0, q.Period, q.Period/2, 3*q.Period, g.rng.Int64N(10e9))
	switch g.rng.IntN(12) {
	case 0:
		q.Count = pick[int64](g, 1, MaxWindowLimit, 1<<62)
	case 1:
		q.Period = pick[int64](g, 1, MaxWindow, 1+g.rng.Int64N(MaxWindow))
	case 2:
		q.MaxWait = pick[int64](g, MaxWindow, 1+g.rng.Int64N(MaxWindow))
	case 3:
		q.Count, q.Period, q.MaxWait = pick[int64](g, 0, -1, 1), pick[int64](g, 0, 1, MaxWindow+1), pick[int64](g, -1, 0, MaxWindow+1)
	}
	return q
}

// tat is a CL state's TAT: near now, near 0, near 2^64-1, far ahead, or
// anything.
func (g decideGen) tat(now int64) uint64 {
	switch g.rng.IntN(6) {
	case 0:
		return g.rng.Uint64N(1 << 20)
	case 1:
		return math.MaxUint64 - g.rng.Uint64N(1<<20)
	case 2:
		return uint64(now) + g.rng.Uint64N(1<<62)
	case 3:
		return g.rng.Uint64()
	}
	return uint64(now + g.rng.Int64N(1<<37) - 1<<36)
}

// bucket is an SWC or FW state's bucket start: now's, the one before, an
// older or a later one, or (rarely) not on a multiple of the window.
func (g decideGen) bucket(now, w int64) int64 {
	b := now - floorMod(now, w)
	switch g.rng.IntN(8) {
	case 0, 1, 2:
		return b
	case 3, 4:
		return b - w
	case 5:
		return b - w*(2+g.rng.Int64N(3))
	case 6:
		return b + w
	}
	return now - g.rng.Int64N(1<<40)
}

// count is a bucket's count: 0, 1, under or at the limit, or up to 2^32-1.
func (g decideGen) count(limit int64) uint32 {
	switch g.rng.IntN(6) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return uint32(min(limit, MaxWindowLimit))
	case 3:
		return pick[uint32](g, math.MaxUint32, g.rng.Uint32())
	}
	return uint32(g.rng.Int64N(min(limit, MaxWindowLimit) + 1))
}

// log is an SW state's requests: 1 to 50, oldest first, with gaps from 0
// to huge, quantities from 1 to 2^32-1 (rarely 0, which a store may hold),
// ending before now, around it, or (rarely) after it.
func (g decideGen) log(now int64, q WindowQuota) ([]int64, []uint32) {
	n := 1 + g.rng.IntN(pick(g, 3, 10, 50))
	times, qs := make([]int64, n), make([]uint32, n)
	gap := func() int64 {
		switch g.rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return q.Window
		case 2:
			return g.rng.Int64N(1 << 50)
		case 3:
			return g.rng.Int64N(q.Window + 1)
		}
		return g.rng.Int64N(q.Window/int64(n) + 1)
	}
	at := int64(0)
	for i := range n {
		at += gap()
		times[i] = at
		switch g.rng.IntN(10) {
		case 0:
			qs[i] = pick[uint32](g, math.MaxUint32, g.rng.Uint32(), 0)
		case 1, 2:
			qs[i] = uint32(1 + g.rng.Int64N(min(q.Limit, MaxWindowLimit)))
		default:
			qs[i] = 1
		}
	}
	// The newest request is up to two windows before now, or after it.
	end := now - g.rng.Int64N(2*min(q.Window, 1<<40)+1)
	if g.rng.IntN(20) == 0 {
		end = now + g.rng.Int64N(1<<30)
	}
	for i := range times {
		times[i] += end - at
	}
	return times, qs
}

// rule is a rule of family f on key.
func (g decideGen) rule(key string, f Family) Rule {
	r := Rule{Key: []byte(key), Family: f}
	switch f {
	case FamilyCL:
		r.GCRA = g.gcraQuota()
	case FamilyLB:
		r.Leaky = g.leakyQuota()
	default:
		r.Window = g.windowQuota()
	}
	return r
}
