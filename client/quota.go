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
	// SW, SWC and FW come here with the window commands.
)

// ErrInvalidQuota is wrapped by the error of every Quota that cannot be sent
// to the server (see Quota.Err).
var ErrInvalidQuota = errors.New("client: invalid quota")

// Quota is one rate limit: an algorithm and its parameters. Make one with a
// constructor (GCRA); the zero Quota is invalid. A Quota is a small value,
// safe to copy and to share between goroutines.
//
// A key must always be throttled with the same Quota: the server keeps one
// state per key, read according to the parameters of each call.
type Quota struct {
	family family
	burst  int64 // GCRA: max_burst
	count  int64 // GCRA: count per period
	period int64 // GCRA: whole seconds
	err    error // why the constructor refused its arguments
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

// Err returns nil for a quota the server can run, and otherwise why not (an
// error wrapping ErrInvalidQuota). Check it where quotas come from
// configuration, to refuse a bad one at start-up.
func (q Quota) Err() error {
	if q.family == familyNone {
		return fmt.Errorf("%w: the zero Quota; make one with GCRA", ErrInvalidQuota)
	}
	return q.err
}

// String gives the quota as the arguments of its command, without the key:
// "CL 15 30 60" for GCRA(15, 30, time.Minute); "invalid quota" when Err is
// not nil.
func (q Quota) String() string {
	switch {
	case q.err != nil:
	case q.family == familyGCRA:
		return "CL " + strconv.FormatInt(q.burst, 10) + " " + strconv.FormatInt(q.count, 10) + " " + strconv.FormatInt(q.period, 10)
	}
	return "invalid quota"
}
