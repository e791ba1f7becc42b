package commands

import "sync/atomic"

// counterStripes is how many copies of each hot counter there are. A client
// counts into the copy its ID picks, so that connections running on
// different cores seldom write to the same cache line; readers add the
// copies up. Two connections share a copy one time in counterStripes.
const counterStripes = 16

// stripeOf is the copy of the counters client id counts into.
func stripeOf(id int64) int { return int(uint64(id) % counterStripes) }

// totalsStripe is one copy of INFO's totals, padded so that no two copies
// share a cache line.
type totalsStripe struct {
	processed, errors atomic.Int64
	_                 [112]byte
}

// totals are INFO stats' total_commands_processed and total_error_replies.
type totals [counterStripes]totalsStripe

func (t *totals) processed() int64 {
	n := int64(0)
	for i := range t {
		n += t[i].processed.Load()
	}
	return n
}

func (t *totals) errors() int64 {
	n := int64(0)
	for i := range t {
		n += t[i].errors.Load()
	}
	return n
}

func (t *totals) reset() {
	for i := range t {
		t[i].processed.Store(0)
		t[i].errors.Store(0)
	}
}

// statsStripe is one copy of a command's INFO commandstats counters, padded
// so that no two copies share a cache line.
type statsStripe struct {
	calls, usec, rejected, failed atomic.Int64
	_                             [96]byte
}
