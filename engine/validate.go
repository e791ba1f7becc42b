package engine

// Validate returns the error Decide would return for op whatever the keys
// hold, when there is one: ErrZeroRate for OpThrottle (judged before its
// key is read, as redis-cell does), and for OpAll the errors of its rules
// as a whole (ErrNoRules, a *DuplicateKeyError, ErrLeakyInAll), the same
// for DecideEach; nil
// otherwise. A store that decides with Decide can answer such a request at
// once, before reading any key, without allocating. An OpAll rule's zero
// rate is not among them: a key of another family judged before it
// answers WRONGTYPE instead. It panics as Decide does on the caller's
// mistakes.
func Validate(op Op, rules []Rule) error {
	switch op {
	case OpThrottle:
		mustOne(rules)
		if emissionInterval(rules[0].GCRA.Count, rules[0].GCRA.Period) == 0 {
			return ErrZeroRate
		}
		return nil
	case OpWindow:
		mustOne(rules)
		return nil
	case OpAll:
		return checkRules(rules)
	}
	panic("engine: Validate with an unknown Op")
}
