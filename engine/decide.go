package engine

// Op says which command's semantics Decide follows.
type Op uint8

// The commands whose semantics Decide follows.
const (
	OpThrottle Op = iota + 1 // CL.THROTTLE: one FamilyCL rule (Engine.Throttle)
	OpWindow                 // SW/SWC/FW.THROTTLE: one window rule (Engine.ThrottleWindow)
	OpAll                    // THROTTLE.ALL: one or more rules (Engine.ThrottleAll)
)

// Decide runs rules for quantity at now (ns since the epoch) on states, the
// rules' keys' current states as a store holds them (states[i] for rules[i];
// a Record with Family FamilyNone and Deleted false is a key that does not
// exist), with the keyspace's algorithms and answers. It overwrites states
// in place with the keys' new states: a live key's Family, state fields and
// ExpireAtMs; Deleted for a key to remove; FamilyNone for a key that stays
// absent. It never mutates a Record's Log/Quantities slices in place
// (it makes new ones when an SW log changes), so a caller's copy of the
// old Record stays valid. On an error the states are as given, except
// OpThrottle's ErrExpire on an existing key, which marks it Deleted as
// Engine.Throttle removes the key. For OpThrottle, Decision.Seconds() is
// redis-cell's exact reply.
//
// A state counts as absent, as the keyspace's lookup and Restore take it,
// when it is Deleted, of FamilyNone, expired (now's millisecond is past
// its ExpireAtMs) or malformed (an SW state without requests, or with Log
// and Quantities of different lengths). A live key the call leaves as it
// is keeps its Record unchanged. Record.Key is kept as given; the rules
// name the keys.
//
// OpThrottle and OpWindow take exactly one rule; OpThrottle reads only its
// GCRA quota, as Engine.Throttle does. Decide panics when states and rules
// differ in length, or when OpThrottle or OpWindow gets another number of
// rules than one: those are the caller's mistakes, not the request's.
func Decide(now int64, op Op, rules []Rule, states []Record, quantity int64) (Decision, error) {
	if len(states) != len(rules) {
		panic("engine: Decide needs one state per rule")
	}
	switch op {
	case OpThrottle:
		mustOne(rules)
		return decideThrottle(now, rules[0], &states[0], quantity)
	case OpWindow:
		mustOne(rules)
		return decideAll(now, rules, states, quantity, false, nil, nil)
	case OpAll:
		if err := checkRules(rules); err != nil {
			return Decision{}, err
		}
		return decideAll(now, rules, states, quantity, true, nil, nil)
	}
	panic("engine: Decide with an unknown Op")
}

// DecideEach is Engine.ThrottleAllEach on stored states, as Decide is
// Engine.ThrottleAll: OpAll with a quantity per rule (quantities[i] for
// rules[i], 0 checking without recording), all or nothing, each[i]
// receiving rule i's own decision. It panics when states, quantities or
// each differ in length from rules.
func DecideEach(now int64, rules []Rule, states []Record, quantities []int64, each []Decision) (Decision, error) {
	if len(states) != len(rules) || len(quantities) != len(rules) || len(each) != len(rules) {
		panic("engine: DecideEach needs a state, a quantity and a decision per rule")
	}
	if err := checkRules(rules); err != nil {
		return Decision{}, err
	}
	return decideAll(now, rules, states, mostOf(quantities), true, quantities, each)
}

// mostOf is the largest of quantities, 0 for none: the quantity that
// ThrottleAllEach's all-or-nothing pass runs with.
func mostOf(quantities []int64) int64 {
	most := int64(0)
	for _, q := range quantities {
		most = max(most, q)
	}
	return most
}

// mustOne panics unless there is exactly one rule.
func mustOne(rules []Rule) {
	if len(rules) != 1 {
		panic("engine: OpThrottle and OpWindow take one rule")
	}
}

// decideThrottle is Engine.Throttle on a stored state.
func decideThrottle(now int64, r Rule, rec *Record, quantity int64) (Decision, error) {
	if emissionInterval(r.GCRA.Count, r.GCRA.Period) == 0 {
		return Decision{}, ErrZeroRate // before the key is read, as redis-cell does
	}
	nowMs := now / 1_000_000
	st := stateOf(rec, nowMs)
	if st.family != FamilyNone && st.family != FamilyCL {
		return Decision{}, ErrWrongType
	}
	step, err := gcra(now, gcraState{tat: st.tat, ok: st.family == FamilyCL}, r.GCRA, quantity)
	if err == ErrExpire && st.family == FamilyCL {
		*rec = Record{Key: rec.Key, Deleted: true}
	}
	if err != nil {
		return Decision{}, err
	}
	forgetAbsent(rec, &st)
	writeGCRA(rec, st.family != FamilyNone, step, nowMs)
	return clDecision(step), nil
}

// decideAll is Engine.ThrottleWindow (one rule, all false) or
// Engine.ThrottleAll on stored states, or with quantities (a quantity per
// rule, quantity their largest) and each (the rules' own decisions)
// Engine.ThrottleAllEach. The new states are written only once every rule
// has been decided without an error.
func decideAll(now int64, rules []Rule, states []Record, quantity int64, all bool, quantities []int64, each []Decision) (Decision, error) {
	nowMs := now / 1_000_000
	var vbuf [4]verdict // a few rules are decided without allocating
	var sbuf [4]keyState
	vs, sts := vbuf[:0], sbuf[:0]
	if len(rules) > len(vbuf) {
		vs, sts = make([]verdict, 0, len(rules)), make([]keyState, 0, len(rules))
	}
	vs, sts = vs[:len(rules)], sts[:len(rules)]
	for i := range rules {
		sts[i] = stateOf(&states[i], nowMs)
	}
	judge := func(i int, qty int64) error {
		return judgeState(&rules[i], &sts[i], now, eachQuantity(quantities, i, qty), &vs[i])
	}
	forget := func() {
		for i := range states {
			forgetAbsent(&states[i], &sts[i])
		}
	}
	committed := false
	commit := func() error {
		forget()
		committed = true
		for i := range rules {
			writeVerdict(&states[i], &sts[i], rules[i], &vs[i], now, eachQuantity(quantities, i, quantity))
		}
		return nil
	}
	var d Decision
	var err error
	if all {
		d, err = allOrNothing(vs, quantity, judge, commit)
	} else if err = judge(0, quantity); err == nil {
		d = vs[0].d
		if !d.Limited {
			err = commit()
		}
	}
	if err != nil {
		return Decision{}, err
	}
	if !committed {
		forget()
	}
	for i := range each {
		each[i] = vs[i].d
	}
	return d, nil
}

// eachQuantity is the quantity rule i is judged or recorded with when the
// all-or-nothing pass asks for qty: its own from quantities, if the call
// has a quantity per rule, unless qty is 0 (the pass's second look at the
// rules that would have admitted).
func eachQuantity(quantities []int64, i int, qty int64) int64 {
	if quantities != nil && qty != 0 {
		return quantities[i]
	}
	return qty
}

// stateOf reads a stored state as the keyspace would hold it after
// Restore: an absent, expired or malformed record is no key.
func stateOf(rec *Record, nowMs int64) keyState {
	if rec.Deleted || rec.Family == FamilyNone || nowMs > rec.ExpireAtMs || !rec.wellFormed() {
		return keyState{}
	}
	st := keyState{family: rec.Family}
	switch rec.Family {
	case FamilyCL:
		st.tat = rec.TAT
	case FamilyLB:
		st.tail = rec.Tail
	case FamilySWC, FamilyFW:
		st.counter = counterState{start: rec.Start, cur: int64(rec.Cur), prev: int64(rec.Prev), ok: true}
	case FamilySW:
		// A copy of the requests: the record's slices stay as they are.
		st.logs, st.log = newSWLogs(rec.Log, rec.Quantities)
	}
	return st
}

// forgetAbsent makes the record of a key read as absent FamilyNone; a write
// that follows replaces it.
func forgetAbsent(rec *Record, st *keyState) {
	if st.family == FamilyNone {
		*rec = Record{Key: rec.Key}
	}
}
