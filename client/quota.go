package client

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// family is the algorithm a Quota runs on the server, one per command
// family. The zero value is no family: the zero Quota is invalid.
type family uint8

const (
	familyNone family = iota
	familyGCRA        // CL.THROTTLE
	familySW          // SW.THROTTLE
	familySWC         // SWC.THROTTLE
	familyFW          // FW.THROTTLE
	familyLB          // LB.THROTTLE
)

// command is the family's command, and its rule name in THROTTLE.ALL.
func (f family) command() (cmd, rule string) {
	switch f {
	case familyGCRA:
		return "CL.THROTTLE", "CL"
	case familySW:
		return "SW.THROTTLE", "SW"
	case familySWC:
		return "SWC.THROTTLE", "SWC"
	case familyFW:
		return "FW.THROTTLE", "FW"
	case familyLB:
		return "LB.THROTTLE", "LB"
	}
	return "", ""
}

// Bounds of the window families' parameters, as the server takes them.
const (
	maxWindowLimit = 1<<32 - 1
	maxWindow      = 100 * 365 * 24 * time.Hour
)

// ErrInvalidQuota is wrapped by the error of every Quota that cannot be sent
// to the server (see Quota.Err).
var ErrInvalidQuota = errors.New("client: invalid quota")

// Quota is one rate limit: an algorithm and its parameters. Make one with a
// constructor (GCRA, SlidingLog, SlidingCounter, FixedWindow, LeakyBucket);
// the zero Quota is invalid. A Quota is a small value, safe to copy and to
// share between goroutines.
//
// A key must always be throttled with the same Quota: the server keeps one
// state per key, read according to the parameters of each call.
type Quota struct {
	family  family
	burst   int64 // GCRA: max_burst
	count   int64 // GCRA: count per period
	period  int64 // GCRA: whole seconds
	limit   int64 // windows: requests per window; LB: count per period
	window  int64 // windows: whole milliseconds; LB: the period, in ms
	maxWait int64 // LB: whole milliseconds, 0 or more
	err     error // why the constructor refused its arguments
}

// GCRA is redis-cell's limit, the generic cell rate algorithm, answered by
// CL.THROTTLE: count requests per period on average, in bursts of up to
// maxBurst+1 at once (the Result's Limit). maxBurst must be 0 or more, count
// 1 or more, and period a whole number of seconds, 1 s or more: CL.THROTTLE
// takes its period in integer seconds, so a sub-second or fractional period
// is refused rather than rounded. An invalid quota is reported by Err, and
// by every call that uses it.
//
// GCRA(15, 30, time.Minute) is `CL.THROTTLE key 15 30 60`: 16 requests at
// once, then one every 2 s.
func GCRA(maxBurst, count int64, period time.Duration) Quota {
	q := Quota{family: familyGCRA, burst: maxBurst, count: count, period: int64(period / time.Second)}
	switch {
	case maxBurst < 0 || maxBurst == math.MaxInt64:
		q.err = fmt.Errorf("%w: GCRA max burst %d: want 0 to %d", ErrInvalidQuota, maxBurst, int64(math.MaxInt64-1))
	case count < 1:
		q.err = fmt.Errorf("%w: GCRA count %d: want 1 or more", ErrInvalidQuota, count)
	case period < time.Second || period%time.Second != 0:
		q.err = fmt.Errorf("%w: GCRA period %v: CL.THROTTLE takes whole seconds, 1s or more", ErrInvalidQuota, period)
	case count > int64(period):
		q.err = fmt.Errorf("%w: GCRA count %d per %v: more than one request per nanosecond", ErrInvalidQuota, count, period)
	}
	return q
}

// SlidingLog is the exact sliding window, answered by SW.THROTTLE: at most
// limit requests in any window. The server keeps every admitted request's
// time (8 bytes each), so memory per key grows with the limit. window is a
// whole number of milliseconds, 1 ms to 100 years; limit 1 to 4294967295.
func SlidingLog(limit int64, window time.Duration) Quota { return windowQuota(familySW, limit, window) }

// SlidingCounter is the sliding-window counter, answered by SWC.THROTTLE:
// this bucket's count plus the previous bucket's, weighted by how much of it
// the window still covers. Constant memory per key; close to SlidingLog
// below the limit, and up to twice the limit in one window in the worst
// case (see the README). Parameters as SlidingLog's.
func SlidingCounter(limit int64, window time.Duration) Quota {
	return windowQuota(familySWC, limit, window)
}

// FixedWindow is the fixed window, answered by FW.THROTTLE: at most limit
// requests per window, windows aligned to multiples of window since the Unix
// epoch. Parameters as SlidingLog's.
func FixedWindow(limit int64, window time.Duration) Quota {
	return windowQuota(familyFW, limit, window)
}

func windowQuota(f family, limit int64, window time.Duration) Quota {
	q := Quota{family: f, limit: limit, window: int64(window / time.Millisecond)}
	cmd, _ := f.command()
	switch {
	case limit < 1 || limit > maxWindowLimit:
		q.err = fmt.Errorf("%w: %s limit %d: want 1 to %d", ErrInvalidQuota, cmd, limit, maxWindowLimit)
	case window < time.Millisecond || window%time.Millisecond != 0 || window > maxWindow:
		q.err = fmt.Errorf("%w: %s window %v: want whole milliseconds, 1ms to 100 years", ErrInvalidQuota, cmd, window)
	}
	return q
}

// LeakyBucket is a pace rather than a limit, answered by LB.THROTTLE (a
// leaky bucket as a queue): requests depart count per period, one every
// period/count, and a call reserves the next free departure and is told how
// long to wait for it, unless that is more than maxWait away (then it is
// refused and nothing is reserved). Use it with Limiter.Wait to pace calls
// to someone else's API across a fleet; Throttle and ThrottleN send
// LB.THROTTLE and return its reply (a reserved call's RetryAfter is its
// wait, 0 to go now). count is 1 to 4294967295, period whole milliseconds
// from 1ms to 100 years, maxWait whole milliseconds from 0 (only a
// departure now) to 100 years; times come back in milliseconds.
//
// LeakyBucket(25, time.Second, time.Second) is
// `LB.THROTTLE key 25 1000ms 1 MAXWAIT 1000ms MS`: one call every 40 ms, at
// most 26 queued.
func LeakyBucket(count int64, period, maxWait time.Duration) Quota {
	q := Quota{family: familyLB, limit: count, window: int64(period / time.Millisecond), maxWait: int64(maxWait / time.Millisecond)}
	switch {
	case count < 1 || count > maxWindowLimit:
		q.err = fmt.Errorf("%w: LB.THROTTLE count %d: want 1 to %d", ErrInvalidQuota, count, maxWindowLimit)
	case period < time.Millisecond || period%time.Millisecond != 0 || period > maxWindow:
		q.err = fmt.Errorf("%w: LB.THROTTLE period %v: want whole milliseconds, 1ms to 100 years", ErrInvalidQuota, period)
	case maxWait < 0 || maxWait%time.Millisecond != 0 || maxWait > maxWindow:
		q.err = fmt.Errorf("%w: LB.THROTTLE max wait %v: want whole milliseconds, 0 to 100 years", ErrInvalidQuota, maxWait)
	}
	return q
}

// args are the quota's arguments after the key.
func (q Quota) args() []any {
	if q.family == familyGCRA {
		return []any{q.burst, q.count, q.period}
	}
	return []any{q.limit, strconv.FormatInt(q.window, 10) + "ms"}
}

// options are the quota's arguments after the quantity.
func (q Quota) options() []any {
	if q.family == familyLB {
		return []any{"MAXWAIT", strconv.FormatInt(q.maxWait, 10) + "ms"}
	}
	return nil
}

// Err returns nil for a quota the server can run, and otherwise why not (an
// error wrapping ErrInvalidQuota). Check it where quotas come from
// configuration, to refuse a bad one at start-up.
func (q Quota) Err() error {
	if q.family == familyNone {
		return fmt.Errorf("%w: the zero Quota; make one with GCRA, SlidingLog, SlidingCounter, FixedWindow or LeakyBucket", ErrInvalidQuota)
	}
	return q.err
}

// String gives the quota as the arguments of its command, without the key:
// "CL 15 30 60" for GCRA(15, 30, time.Minute), "LB 25 1000ms MAXWAIT
// 1000ms" for LeakyBucket(25, time.Second, time.Second); "invalid quota"
// when Err is not nil.
func (q Quota) String() string {
	switch {
	case q.err != nil:
	case q.family == familyGCRA:
		return "CL " + strconv.FormatInt(q.burst, 10) + " " + strconv.FormatInt(q.count, 10) + " " + strconv.FormatInt(q.period, 10)
	case q.family == familyLB:
		return "LB " + strconv.FormatInt(q.limit, 10) + " " + strconv.FormatInt(q.window, 10) + "ms MAXWAIT " + strconv.FormatInt(q.maxWait, 10) + "ms"
	case q.family != familyNone:
		_, rule := q.family.command()
		return rule + " " + strconv.FormatInt(q.limit, 10) + " " + strconv.FormatInt(q.window, 10) + "ms"
	}
	return "invalid quota"
}
