package engine

import (
	"errors"
	"math/bits"
)

// ErrNegativeQuantity is returned when an SW, SWC or FW rule is given a
// negative quantity, which a window's counts cannot hold (CL rules take one,
// as redis-cell does).
var ErrNegativeQuantity = errors.New("negative quantity")

// WindowQuota is a sliding-log (SW), sliding-counter (SWC) or fixed-window
// (FW) limit: at most Limit requests per Window nanoseconds.
type WindowQuota struct {
	Limit  int64 // 1 to MaxWindowLimit
	Window int64 // nanoseconds, 1 to MaxWindow
}

const (
	// MaxWindowLimit is the largest limit a window family takes: counts are
	// kept in 32 bits.
	MaxWindowLimit = 1<<32 - 1
	// MaxWindow is the longest window, 100 years in nanoseconds, so that
	// now plus a window never overflows.
	MaxWindow = 100 * 365 * 24 * 3600 * 1_000_000_000
)

// Decision is a throttle outcome with its times in nanoseconds, before they
// are rounded for a reply.
type Decision struct {
	Limited   bool
	Limit     int64
	Remaining int64
	// RetryAfter is how long until this same request would be admitted if
	// nothing else arrived; -1 when admitted, and when it never can be.
	RetryAfter int64
	// ResetAfter is how long until the key limits nothing and is forgotten.
	ResetAfter int64

	// cl holds CL.THROTTLE's own reply for a CL rule, whose seconds are
	// rounded as redis-cell rounds them, when hasCL is set. A value, not a
	// pointer, so that a decision never makes its verdict escape to the heap.
	cl    Result
	hasCL bool
}

// Seconds returns the decision with times in seconds, rounded up (a CL
// rule's as redis-cell rounds them).
func (d Decision) Seconds() Result {
	if d.hasCL {
		return d.cl
	}
	return d.rounded(1_000_000_000)
}

// Millis returns the decision with times in milliseconds, rounded up.
func (d Decision) Millis() Result { return d.rounded(1_000_000) }

func (d Decision) rounded(unit int64) Result {
	r := Result{Limited: d.Limited, Limit: d.Limit, Remaining: d.Remaining, RetryAfter: -1}
	if d.RetryAfter >= 0 {
		r.RetryAfter = ceilDiv(d.RetryAfter, unit)
	}
	r.ResetAfter = ceilDiv(max(d.ResetAfter, 0), unit)
	return r
}

// ceilDiv is a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 { return a/b + min(a%b, 1) }

// floorMod is a mod b in [0, b), for b > 0.
func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// expireMs converts an instant in ns to the last millisecond the key lives,
// in the engine's rule (gone once the clock in ms is past it): a key that
// limits nothing from instant t on is gone from t's millisecond on.
func expireMs(t int64) int64 { return ceilDiv(t, 1_000_000) - 1 }

// counterState is a fixed-window or sliding-counter key's buckets.
type counterState struct {
	start     int64 // the current bucket's start, ns since the epoch
	cur, prev int64
	ok        bool // false: a fresh key
}

// rolled returns the state as of now's bucket: the counts move back a
// bucket, or are forgotten, when now has left the state's bucket. A bucket
// that has not begun (a key restored from a clock ahead of ours) is kept:
// its counts stand, and a request now counts in it, as if made at its start.
func (st counterState) rolled(now, window int64) counterState {
	start := now - floorMod(now, window)
	switch {
	case !st.ok:
		return counterState{start: start}
	case st.start == start, st.start > now:
		return st
	case st.start+window == start:
		return counterState{start: start, prev: st.cur, ok: true}
	}
	return counterState{start: start}
}

// fixedWindow decides a fixed-window request: windows are aligned to
// multiples of Window since the Unix epoch. It returns the decision and the
// state to store (the same state when nothing is recorded).
func fixedWindow(now int64, st counterState, q WindowQuota, qty int64) (Decision, counterState) {
	st = st.rolled(now, q.Window)
	end := addSat(st.start, q.Window) // a bucket not begun may start late
	d := Decision{Limit: q.Limit, RetryAfter: -1}
	if qty <= q.Limit-st.cur {
		st.cur += qty
	} else {
		d.Limited = true
		if qty <= q.Limit {
			d.RetryAfter = end - now
		}
	}
	d.Remaining = max(q.Limit-st.cur, 0)
	if st.cur > 0 {
		d.ResetAfter = end - now
	}
	return d, st
}

// slidingCounter decides a sliding-window-counter request: the previous
// bucket counts in proportion to how much of it the sliding window still
// covers (Cloudflare's counting). All arithmetic is exact integers.
func slidingCounter(now int64, st counterState, q WindowQuota, qty int64) (Decision, counterState) {
	w := q.Window
	st = st.rolled(now, w)
	at := max(now, st.start) // a bucket not begun is decided as at its start
	elapsed := at - st.start
	d := Decision{Limit: q.Limit, RetryAfter: -1}
	if swcFits(st.prev, w-elapsed, st.cur, qty, q.Limit, w) {
		st.cur += qty
	} else {
		d.Limited = true
		if qty <= q.Limit {
			d.RetryAfter = addSat(swcRetry(st, elapsed, q, qty), at-now)
		}
	}
	// remaining: the largest quantity that fits now.
	d.Remaining = max(q.Limit-st.cur-ceilMulDiv(st.prev, w-elapsed, w), 0)
	switch {
	case st.cur > 0:
		d.ResetAfter = addSat(st.start, 2*w) - now
	case st.prev > 0:
		d.ResetAfter = addSat(st.start, w) - now
	}
	return d, st
}

// swcFits reports whether prev*weight/w + cur + qty <= limit, exactly.
func swcFits(prev, weight, cur, qty, limit, w int64) bool {
	if qty > limit-cur {
		return false
	}
	room := limit - cur - qty
	// prev*weight <= room*w, in 128 bits
	ph, pl := bits.Mul64(uint64(prev), uint64(weight))
	rh, rl := bits.Mul64(uint64(room), uint64(w))
	return ph < rh || (ph == rh && pl <= rl)
}

// swcRetry is how long until a request of qty would fit, if nothing else
// arrived: later in this bucket as the previous one weighs less, or in the
// next bucket, where this bucket's count becomes the previous one, or at the
// latest in the bucket after, with both counts gone.
func swcRetry(st counterState, elapsed int64, q WindowQuota, qty int64) int64 {
	w := q.Window
	if room := q.Limit - st.cur - qty; room >= 0 && st.prev > 0 {
		// prev*(w-e) <= room*w  ⇔  e >= w - floor(room*w/prev)
		e := w - mulDiv(room, w, st.prev)
		if e < w {
			return max(e, elapsed) - elapsed
		}
	}
	next := w - elapsed // time to the next bucket
	room := q.Limit - qty
	if st.cur == 0 {
		return next
	}
	if e := w - mulDiv(room, w, st.cur); e < w {
		return next + max(e, 0)
	}
	return next + w
}

// mulDiv is floor(a*b/c) for a, b >= 0 and c > 0, saturated to int64.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return 1<<63 - 1
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(q)
}

// ceilMulDiv is ceil(a*b/c) for a, b >= 0 and c > 0 with a*b/c < 2^63.
func ceilMulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, r := bits.Div64(hi, lo, uint64(c))
	if r > 0 {
		q++
	}
	return int64(q)
}
