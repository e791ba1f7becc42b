package engine

import "errors"

// LB (leaky bucket as a queue) errors.
var (
	// ErrLeakyQuota is returned for an LB quota out of range: a count
	// under 1, a period outside 1 to MaxWindow, or a MaxWait outside 0 to
	// MaxWindow. The commands layer never sends one.
	ErrLeakyQuota = errors.New("LB quota out of range")
	// ErrLeakyInAll is returned by ThrottleAll (and Decide's OpAll) for an
	// LB rule: an LB call reserves a departure in the future and answers
	// with a wait, while THROTTLE.ALL records its request now under every
	// rule or under none; the two cannot be one decision.
	ErrLeakyInAll = errors.New("LB rules reserve a future departure and cannot be checked with other rules; call LB.THROTTLE on its own")
)

// LeakyQuota is an LB limit: requests depart at a steady Count per Period,
// and a call waits at most MaxWait for its requests' departures.
type LeakyQuota struct {
	Count   int64 // 1 or more
	Period  int64 // nanoseconds, 1 to MaxWindow
	MaxWait int64 // nanoseconds, 0 to MaxWindow
}

// Interval is the time between two departures: Period/Count rounded up to
// whole nanoseconds, so that the rate never exceeds Count per Period.
func (q LeakyQuota) Interval() int64 { return ceilDiv(q.Period, q.Count) }

// valid reports whether the quota is in range (ErrLeakyQuota).
func (q LeakyQuota) valid() bool {
	return q.Count >= 1 && q.Period >= 1 && q.Period <= MaxWindow && q.MaxWait >= 0 && q.MaxWait <= MaxWindow
}

// leakyBucket decides an LB call: the key's state is its tail, the next
// free departure in ns since the epoch (0, or any time at or before now,
// for an empty queue). A call for qty requests reserves the qty departures
// that follow the tail (or now, if later), one interval apart, when the
// last of them is at most MaxWait away; otherwise it reserves nothing. It
// returns the decision and the new tail (the same when nothing is
// reserved). With iv the interval, base = max(tail, now) and w = base-now:
//
//   - limit = floor(MaxWait/iv) + 1: the departures within MaxWait, plus now's;
//   - reserved when w + (qty-1)*iv <= MaxWait; the new tail is base + qty*iv
//     and RetryAfter is w, the wait for the first reserved departure;
//   - refused: RetryAfter is w + (qty-1)*iv - MaxWait, when the queue has
//     drained enough, or -1 when qty > limit;
//   - remaining = floor((MaxWait - w')/iv) + 1 with w' = max(tail', now) - now
//     after the call (0 when w' > MaxWait): the largest quantity a call could
//     reserve now;
//   - ResetAfter = w': the queue is empty, and the key gone, at its tail.
//
// qty 0 peeks: never limited, nothing reserved, RetryAfter is w (when a
// call would depart). qty must not be negative.
func leakyBucket(now, tail int64, q LeakyQuota, qty int64) (Decision, int64) {
	iv := q.Interval()
	base := max(tail, now)
	wait := base - now
	perWait := q.MaxWait / iv // departures within MaxWait after now's
	d := Decision{Limit: perWait + 1, RetryAfter: -1}
	switch {
	case qty == 0:
		d.RetryAfter = wait
	case qty-1 > perWait:
		d.Limited = true // more than the queue holds: never
	case wait <= q.MaxWait-(qty-1)*iv:
		tail = addSat(base, qty*iv) // qty*iv <= MaxWait + iv
		d.RetryAfter = wait
	default:
		d.Limited = true
		d.RetryAfter = wait - (q.MaxWait - (qty-1)*iv)
	}
	after := max(tail-now, 0)
	if after <= q.MaxWait {
		d.Remaining = (q.MaxWait-after)/iv + 1
	}
	d.ResetAfter = after
	return d, tail
}

// addSat is a+b for b >= 0, saturated at the largest int64.
func addSat(a, b int64) int64 {
	if a > 1<<63-1-b {
		return 1<<63 - 1
	}
	return a + b
}
