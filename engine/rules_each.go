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
	if err := checkRules(rules); err != nil {
		return Decision{}, err
	}
	if len(quantities) != len(rules) || len(each) != len(rules) {
		panic("engine: ThrottleAllEach needs a quantity and a decision per rule")
	}
	if tx == nil {
		keys := make([][]byte, len(rules))
		for i, r := range rules {
			keys[i] = r.Key
		}
		tx = e.Begin(keys, false)
		defer tx.End()
	}
	// allOrNothing passes judge either its quantity or 0 (the second look
	// at the rules that would have admitted): any positive stand-in makes
	// judge use the rule's own quantity.
	most := int64(0)
	for _, q := range quantities {
		most = max(most, q)
	}
	now := e.now().UnixNano()
	vs := make([]verdict, len(rules))
	judge := func(i int, qty int64) error {
		if qty != 0 {
			qty = quantities[i]
		}
		s, _ := e.acquire(tx, rules[i].Key)
		return e.judge(s, rules[i], now, qty, &vs[i])
	}
	commit := func() error {
		budgeted, err := e.reserve(vs, rules, now)
		if err != nil {
			return err
		}
		if budgeted {
			defer unpin(vs, rules)
		}
		for i, r := range rules {
			if err := e.commit(&vs[i], r, now, quantities[i]); err != nil {
				return err
			}
			if budgeted {
				pin(vs, rules, i, true)
			}
		}
		return nil
	}
	d, err := allOrNothing(vs, most, judge, commit)
	if err != nil {
		return Decision{}, err
	}
	for i := range vs {
		each[i] = vs[i].d
	}
	return d, nil
}
