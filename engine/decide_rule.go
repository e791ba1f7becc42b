package engine

// This file holds the part of a decision that the keyspace (judge,
// ThrottleAll) and Decide share: reading a rule's verdict off a key's state
// with the algorithms, and ThrottleAll's all-or-nothing rule. Where the
// state comes from and where the new one goes is the caller's.

// keyState is a key's state as the algorithms read it, wherever it is kept.
type keyState struct {
	family  Family // FamilyNone: the key does not exist
	tat     uint64 // CL
	tail    int64  // LB
	counter counterState
	log     *swLog  // SW; read, never changed, by judgeState
	logs    *swLogs // SW: the logs log is one of
	hinted  uint64  // SW: the word at the log's hint, read only for its cache line
}

// loadState reads a live entry's state into st, which must be zero. An SW
// key's log is the shard's own, and the word its hint names is read before
// the log's header, so that the two misses overlap. (It fills st in place
// rather than return it: copying a struct just built field by field costs
// the hot path a stalled load.)
func (s *shard) loadState(ent *entry, st *keyState) {
	st.family = ent.family()
	switch st.family {
	case FamilyCL:
		st.tat = ent.tat()
	case FamilyLB:
		st.tail = ent.tail()
	case FamilyFW, FamilySWC:
		c := s.counter(ent)
		st.counter = counterState{start: c.start, cur: int64(c.cur), prev: int64(c.prev), ok: true}
	case FamilySW:
		st.hinted = s.logs.touch(ent.state >> 32)
		st.log, st.logs = s.log(ent), &s.logs
	}
}

// judgeState decides rule r for qty at now on a key's state, without
// changing it, into v's decision and the state to write should the request
// be recorded.
func judgeState(r *Rule, st *keyState, now, qty int64, v *verdict) error {
	if st.family != FamilyNone && st.family != r.Family {
		return ErrWrongType
	}
	if qty < 0 && r.Family != FamilyCL {
		return ErrNegativeQuantity
	}
	switch r.Family {
	case FamilyCL:
		gst := gcraState{tat: st.tat, ok: st.family != FamilyNone}
		step, err := gcra(now, gst, r.GCRA, qty)
		if err != nil {
			return err
		}
		v.step, v.d = step, clDecision(step)
	case FamilyFW:
		v.d, v.counter = fixedWindow(now, st.counter, r.Window, qty)
	case FamilySWC:
		v.d, v.counter = slidingCounter(now, st.counter, r.Window, qty)
	case FamilySW:
		var ring []uint64
		if st.log != nil {
			ring = st.logs.ring(st.log)
		}
		v.d, v.view = slidingLog(now, st.log, ring, r.Window, qty)
	case FamilyLB:
		if !r.Leaky.valid() {
			return ErrLeakyQuota
		}
		v.d, v.tail = leakyBucket(now, st.tail, r.Leaky, qty)
	default:
		return ErrWrongType
	}
	return nil
}

// clDecision is a GCRA step's decision, in ns, with redis-cell's reply.
func clDecision(step gcraStep) Decision {
	return Decision{Limited: step.result.Limited, Limit: step.result.Limit, Remaining: step.result.Remaining,
		RetryAfter: step.retry, ResetAfter: step.reset, cl: step.result, hasCL: true}
}

// allOrNothing is ThrottleAll's rule over the rules whose verdicts are vs:
// judge(i, qty) decides rule i into vs[i]; when every rule admits the
// quantity, commit records them all; otherwise nothing is recorded, and a
// rule that would have admitted it is judged again with a quantity of 0,
// to report what a peek at it reports. It returns the combined decision.
// (judge and commit do not escape: closures passed in stay on the stack.)
func allOrNothing(vs []verdict, qty int64, judge func(i int, qty int64) error, commit func() error) (Decision, error) {
	limited := false
	for i := range vs {
		if err := judge(i, qty); err != nil {
			return Decision{}, ruleError(i, err)
		}
		limited = limited || vs[i].d.Limited
	}
	if !limited {
		if err := commit(); err != nil {
			return Decision{}, err
		}
		return combine(vs), nil
	}
	if qty > 0 {
		for i := range vs {
			if !vs[i].d.Limited {
				if err := judge(i, 0); err != nil {
					return Decision{}, err
				}
			}
		}
	}
	return combine(vs), nil
}

// ruleError is rule i's error as ThrottleAll returns it: a key of another
// family names the rule (*RuleWrongTypeError); other errors are returned
// as they are.
func ruleError(i int, err error) error {
	if err == ErrWrongType {
		return &RuleWrongTypeError{Rule: i}
	}
	return err
}

// counterEnd is when an FW or SWC key holding c limits nothing any more:
// the end of its bucket, or for SWC with a count in it, of the next one.
func counterEnd(r Rule, c counterState) int64 {
	end := addSat(c.start, r.Window.Window)
	if r.Family == FamilySWC && c.cur > 0 {
		end = addSat(end, r.Window.Window)
	}
	return end
}
