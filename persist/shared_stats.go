package persist

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// BatchBuckets is the number of buckets of SharedStats.DecisionsPerRoundTrip.
const BatchBuckets = 12

// SharedStats are a Shared's counters, for INFO and /metrics.
type SharedStats struct {
	// RoundTrips is the number of round trips to the store that answered.
	RoundTrips int64
	// Decisions is the number of operations decided through the store.
	Decisions int64
	// DecisionsPerRoundTrip is a histogram: bucket i counts the round trips
	// that answered at most 2^i operations (the last bucket, any more);
	// conflicted round trips count in bucket 0 when they answered none.
	DecisionsPerRoundTrip [BatchBuckets]int64
	// StoreLatency is the total time of the RoundTrips round trips, and
	// StoreLatencyMax the longest.
	StoreLatency, StoreLatencyMax time.Duration
	// DenyCacheHits is the number of operations refused from the deny
	// cache, without a round trip.
	DenyCacheHits int64
	// Conflicts is the number of groups whose compare-and-set found other
	// values than expected (their operations were decided again).
	Conflicts int64
	// NativeSets is the number of single-key compare-and-sets sent as the
	// store's own SET IFEQ or NX instead of through the script.
	NativeSets int64
	// Timeouts is the number of operations that waited Timeout and were
	// answered without the store.
	Timeouts int64
	// StoreDown says the store is down; Downs counts how often it went
	// down; LocalDecisions counts operations decided by the local engine.
	StoreDown      bool
	Downs          int64
	LocalDecisions int64
	// ClockOffset is the store's clock minus the local one, as estimated,
	// and ClockBound the estimate's error bound (-1 before the first
	// sample).
	ClockOffset, ClockBound time.Duration
}

// sharedCounters are the counters behind SharedStats.
type sharedCounters struct {
	roundTrips, decisions         atomic.Int64
	perRoundTrip                  [BatchBuckets]atomic.Int64
	latencySum, latencyMax        atomic.Int64
	denyHits, conflicts, timeouts atomic.Int64
	nativeSets                    atomic.Int64
	downs, localDecisions         atomic.Int64
}

// latency adds one round trip's length.
func (c *sharedCounters) latency(d time.Duration) {
	c.latencySum.Add(int64(d))
	for {
		m := c.latencyMax.Load()
		if int64(d) <= m || c.latencyMax.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// decided adds the operations one round trip answered.
func (c *sharedCounters) decided(n int) {
	c.decisions.Add(int64(n))
	b := 0
	if n > 1 {
		b = min(bits.Len(uint(n-1)), BatchBuckets-1)
	}
	c.perRoundTrip[b].Add(1)
}

// Stats returns the counters.
func (s *Shared) Stats() SharedStats {
	c := &s.stats
	st := SharedStats{
		RoundTrips:      c.roundTrips.Load(),
		Decisions:       c.decisions.Load(),
		StoreLatency:    time.Duration(c.latencySum.Load()),
		StoreLatencyMax: time.Duration(c.latencyMax.Load()),
		DenyCacheHits:   c.denyHits.Load(),
		Conflicts:       c.conflicts.Load(),
		NativeSets:      c.nativeSets.Load(),
		Timeouts:        c.timeouts.Load(),
		StoreDown:       s.down.Load(),
		Downs:           c.downs.Load(),
		LocalDecisions:  c.localDecisions.Load(),
	}
	for i := range st.DecisionsPerRoundTrip {
		st.DecisionsPerRoundTrip[i] = c.perRoundTrip[i].Load()
	}
	off, bound := s.clock.offsetAndBound()
	st.ClockOffset, st.ClockBound = time.Duration(off), time.Duration(bound)
	return st
}
