package engine

// Validate returns the error Decide would return for op on keys that do not
// exist, when it is one that no key's state can change: ErrNoRules, a
// *DuplicateKeyError (OpAll), or ErrZeroRate; nil otherwise. A store that
// decides with Decide can answer such a request at once, before reading
// any key, without allocating; now matters only to OpWindow and OpAll (a
// CL rule judged before a zero rate may fail on its own). It panics as
// Decide does on the caller's mistakes.
func Validate(now int64, op Op, rules []Rule, quantity int64) error {
	switch op {
	case OpThrottle:
		mustOne(rules)
		if emissionInterval(rules[0].GCRA.Count, rules[0].GCRA.Period) == 0 {
			return ErrZeroRate
		}
		return nil
	case OpWindow:
		mustOne(rules)
	case OpAll:
		if err := checkRules(rules); err != nil {
			return err
		}
	default:
		panic("engine: Validate with an unknown Op")
	}
	return validateAbsent(now, rules, quantity, nil)
}

// ValidateEach is Validate for DecideEach (a quantity per rule).
func ValidateEach(now int64, rules []Rule, quantities []int64) error {
	if len(quantities) != len(rules) {
		panic("engine: ValidateEach needs a quantity per rule")
	}
	if err := checkRules(rules); err != nil {
		return err
	}
	return validateAbsent(now, rules, mostOf(quantities), quantities)
}

// validateAbsent judges the rules in order on absent states, as Decide
// does, and stops at the first error: only a zero rate reached first is
// the request's own.
func validateAbsent(now int64, rules []Rule, quantity int64, quantities []int64) error {
	for i := range rules {
		var st keyState
		var v verdict
		if err := judgeState(&rules[i], &st, now, eachQuantity(quantities, i, quantity), &v); err != nil {
			if err == ErrZeroRate {
				return err
			}
			return nil
		}
	}
	return nil
}
