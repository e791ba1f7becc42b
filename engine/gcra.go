package engine

import "errors"

// GCRA errors, reported to clients in redis-cell's words by the commands layer.
var (
	// ErrZeroRate is returned when count or period is zero, or the emission
	// interval they give rounds to zero nanoseconds.
	ErrZeroRate = errors.New("zero rates are not supported")
	// ErrExpire is returned when an admitted request would move the TAT so
	// far into the past that redis-cell fails to set the key's expiry.
	ErrExpire = errors.New("error while setting key expire")
)

// GCRAQuota is a CL.THROTTLE limit as redis-cell reads it: max_burst+1
// requests at once, count requests per period seconds on average.
type GCRAQuota struct {
	MaxBurst int64
	Count    int64
	Period   int64 // seconds
}

// ZeroRate reports whether the quota's count or period is zero: a rate
// redis-cell refuses ("Zero rates are not supported"). A rate whose
// emission interval rounds down to zero nanoseconds is refused too
// (ErrZeroRate), but only a decision finds that.
func (q GCRAQuota) ZeroRate() bool { return q.Count == 0 || q.Period == 0 }

// Result is a throttle decision in CL.THROTTLE's reply shape. Times are in
// seconds, rounded up; RetryAfter is -1 when admitted and when the request
// can never be admitted.
type Result struct {
	Limited    bool
	Limit      int64
	Remaining  int64
	RetryAfter int64
	ResetAfter int64
}

// gcraState is what GCRA keeps per key: the theoretical arrival time (TAT)
// in nanoseconds since the Unix epoch, as redis-cell stores it.
type gcraState struct {
	tat uint64
	ok  bool // false: no state (a fresh key)
}

// gcraStep is the outcome of one GCRA call.
type gcraStep struct {
	result Result
	// store is true when the new TAT is to be written, with an expiry of
	// ttlMillis from now (0: the key expires within this millisecond; -1:
	// redis-cell would clear the expiry, cellserver drops the key).
	store     bool
	tat       uint64
	ttlMillis int64
	// retry and reset are retry_after and reset_after before rounding, in
	// ns (saturated); retry is -1 when the result's is.
	retry, reset int64
}

// emissionInterval is redis-cell's Rate::per_period: period seconds divided
// by count in float64, truncated to whole nanoseconds; zero for a zero rate.
func emissionInterval(count, period int64) int64 {
	if (GCRAQuota{Count: count, Period: period}).ZeroRate() {
		return 0
	}
	return saturatingInt64(secondsAsNanosF64(period) / float64(count))
}

// gcra is redis-cell 0.5's rate_limit as a pure function: now in nanoseconds
// since the epoch, the key's state, the quota and the quantity give the
// decision and the state to store. Integer products wrap as in redis-cell's
// release build, so extreme arguments answer exactly as the module does.
func gcra(now int64, st gcraState, q GCRAQuota, quantity int64) (gcraStep, error) {
	ei := emissionInterval(q.Count, q.Period)
	if ei == 0 {
		return gcraStep{}, ErrZeroRate
	}
	limit := q.MaxBurst + 1
	dvtNanos := ei * limit
	incNanos := ei * quantity
	dvt, inc, emission := spanOfNanos(dvtNanos), spanOfNanos(incNanos), spanOfNanos(ei)

	nowS := spanOfNanos(now)
	tat := nowS
	if st.ok {
		tat = spanOfUnixNanos(st.tat)
	}
	base := tat
	if tat.less(nowS) {
		base = nowS
	}
	newTat := base.add(inc)
	diff := nowS.sub(newTat.sub(dvt))

	step := gcraStep{result: Result{Limit: limit, RetryAfter: -1}, retry: -1}
	var ttl span
	if diff.less(span{}) {
		step.result.Limited = true
		if incNanos <= dvtNanos {
			step.result.RetryAfter = diff.neg().roundUpSeconds()
			step.retry = diff.neg().nanosSaturated()
		}
		ttl = tat.sub(nowS)
	} else {
		ttl = newTat.sub(nowS)
		ms := ttl.wholeMillis()
		if ms < -1 {
			return gcraStep{}, ErrExpire
		}
		step.store, step.tat, step.ttlMillis = true, newTat.unixNanosU64(), ms
	}
	if next := dvt.sub(ttl); emission.neg().less(next) {
		step.result.Remaining = saturatingInt64(float64(next.wholeMicros()) / float64(emission.wholeMicros()))
	}
	step.result.ResetAfter = ttl.roundUpSeconds()
	step.reset = ttl.nanosSaturated()
	return step, nil
}
