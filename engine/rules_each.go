package engine

// ThrottleAllEach is ThrottleAll with a quantity per rule and each rule's
// own decision, for callers that answer per rule (Envoy's rate limit
// service answers per descriptor). quantities[i] is rule i's quantity and
// each[i] receives rule i's decision; both must have len(rules) entries.
// It is all or nothing as ThrottleAll is: every rule's quantity is recorded
// only if every rule admits its own; otherwise no key changes, and a rule
// that would have admitted its quantity reports its remaining and
// reset_after without it. A rule of quantity 0 checks without recording.
// It returns the combined decision as ThrottleAll does.
func (e *Engine) ThrottleAllEach(tx *Txn, rules []Rule, quantities []int64, each []Decision) (Decision, error) {
	if len(quantities) != len(rules) || len(each) != len(rules) {
		panic("engine: ThrottleAllEach needs a quantity and a decision per rule")
	}
	d, vs, err := e.throttleAll(tx, rules, mostOf(quantities), quantities)
	if err != nil {
		return Decision{}, err
	}
	for i := range vs {
		each[i] = vs[i].d
	}
	return d, nil
}
