package engine

import (
	"errors"
	"fmt"
)

// ThrottleAll's errors.
var (
	// ErrDuplicateKey is what a ThrottleAll whose rules name the same key
	// twice returns, as a *DuplicateKeyError that matches it (errors.Is).
	ErrDuplicateKey = errors.New("rules name the same key twice")
	// ErrNoRules is returned by a ThrottleAll without rules.
	ErrNoRules = errors.New("no rules")
)

// DuplicateKeyError says which two rules of a ThrottleAll name the same key:
// First and Second are their indexes, First < Second, Second the first rule
// to repeat an earlier rule's key. It matches ErrDuplicateKey.
type DuplicateKeyError struct{ First, Second int }

// Error names the two rules by their indexes.
func (err *DuplicateKeyError) Error() string {
	return fmt.Sprintf("rules %d and %d name the same key", err.First, err.Second)
}

// Is reports whether target is ErrDuplicateKey.
func (err *DuplicateKeyError) Is(target error) bool { return target == ErrDuplicateKey }

// RuleWrongTypeError says which rule of a ThrottleAll met a key of another
// family: Rule is its index. It matches ErrWrongType, so that a caller that
// does not name the rule need not know it. It is made only on the error
// path.
type RuleWrongTypeError struct{ Rule int }

// Error names the rule by its index.
func (err *RuleWrongTypeError) Error() string {
	return fmt.Sprintf("rule %d: %v", err.Rule, ErrWrongType)
}

// Is reports whether target is ErrWrongType.
func (err *RuleWrongTypeError) Is(target error) bool { return target == ErrWrongType }

// Rule is one limit on one key.
type Rule struct {
	Key    []byte
	Family Family
	// GCRA is a CL rule's quota.
	GCRA GCRAQuota
	// Window is an SW, SWC or FW rule's quota.
	Window WindowQuota
	// Leaky is an LB rule's quota.
	Leaky LeakyQuota
}

// verdict is one rule's decision and what to write if the request is
// admitted under every rule.
type verdict struct {
	s       *shard
	ent     *entry // the key's live entry, nil for a fresh key
	slot    uint32 // ent's slot
	d       Decision
	step    gcraStep     // CL
	counter counterState // SWC, FW
	view    swView       // SW
	tail    int64        // LB
}

// ThrottleWindow runs one SW, SWC, FW or LB rule: it decides and, when the
// request is admitted, records it (for LB: reserves its departures, whose
// wait is the decision's RetryAfter). tx is nil outside a transaction.
func (e *Engine) ThrottleWindow(tx *Txn, r Rule, quantity int64) (Decision, error) {
	s, unlock := e.acquire(tx, r.Key)
	if unlock {
		defer s.mu.Unlock()
	}
	now := e.now().UnixNano()
	var v verdict
	if err := e.judge(s, r, now, quantity, &v); err != nil {
		return Decision{}, err
	}
	if !v.d.Limited {
		if err := e.commit(&v, r, now, quantity); err != nil {
			return Decision{}, err
		}
	}
	return v.d, nil
}

// ThrottleAll runs every rule on one quantity, all or nothing: the quantity
// is recorded under every rule only if every rule admits it; otherwise no
// key changes. The rules' shards are locked together (in ascending order),
// so the check is atomic across shards. The decision is limited if any rule
// is; its limit and remaining are those of the rule with the least
// remaining after the call (the first on a tie); its retry_after is the
// largest among the limiting rules (-1 if one of them can never admit the
// quantity), its reset_after the largest among all. When the call is
// limited, a rule that would have admitted the quantity reports its
// remaining and reset_after without it, as nothing was recorded. Rules must
// name distinct keys (else a *DuplicateKeyError), and there must be at least
// one (else ErrNoRules), and none of them an LB rule (else ErrLeakyInAll).
// A rule whose key is of another family gets a *RuleWrongTypeError.
func (e *Engine) ThrottleAll(tx *Txn, rules []Rule, quantity int64) (Decision, error) {
	d, _, err := e.throttleAll(tx, rules, quantity, nil)
	return d, err
}

// throttleAll is ThrottleAll, each rule's quantity quantities[i] when
// quantities is not nil (quantity is then the largest of them); it also
// returns the rules' verdicts.
func (e *Engine) throttleAll(tx *Txn, rules []Rule, quantity int64, quantities []int64) (Decision, []verdict, error) {
	if err := checkRules(rules); err != nil {
		return Decision{}, nil, err
	}
	if tx == nil {
		keys := make([][]byte, len(rules))
		for i, r := range rules {
			keys[i] = r.Key
		}
		tx = e.Begin(keys, false)
		defer tx.End()
	}
	qtyOf := func(i int, qty int64) int64 { return eachQuantity(quantities, i, qty) }
	now := e.now().UnixNano()
	vs := make([]verdict, len(rules))
	judge := func(i int, qty int64) error {
		s, _ := e.acquire(tx, rules[i].Key)
		return e.judge(s, rules[i], now, qtyOf(i, qty), &vs[i])
	}
	commit := func() error {
		budgeted, err := reserve(vs, rules, now, func(i int) int64 { return qtyOf(i, quantity) })
		if err != nil {
			return err
		}
		if budgeted {
			defer unpin(vs, rules)
		}
		for i, r := range rules {
			if err := e.commit(&vs[i], r, now, qtyOf(i, quantity)); err != nil {
				return err
			}
			if budgeted {
				pin(vs, rules, i, true) // a key this call created stays too
			}
		}
		return nil
	}
	d, err := allOrNothing(vs, quantity, judge, commit)
	return d, vs, err
}

// combine folds the rules' decisions into ThrottleAll's: the least
// remaining (the first on a tie), the largest retry_after among the limiting
// rules, and the largest reset_after among all. A limiting rule that can
// never admit the quantity (retry_after -1) makes the whole request one that
// can never be admitted.
func combine(vs []verdict) Decision {
	out := Decision{Limit: vs[0].d.Limit, Remaining: vs[0].d.Remaining, RetryAfter: -1}
	var retry, reset *Decision
	never := false
	for i := range vs {
		d := &vs[i].d
		if d.Remaining < out.Remaining {
			out.Limit, out.Remaining = d.Limit, d.Remaining
		}
		if d.Limited {
			out.Limited = true
			switch {
			case d.RetryAfter < 0:
				never = true
			case retry == nil || d.RetryAfter > retry.RetryAfter:
				retry = d
			}
		}
		if reset == nil || d.ResetAfter > reset.ResetAfter {
			reset = d
		}
	}
	if never {
		retry = nil
	}
	if retry != nil {
		out.RetryAfter = retry.RetryAfter
	}
	out.ResetAfter = reset.ResetAfter
	// Times keep their own rule's rounding: a CL rule's seconds are
	// redis-cell's.
	if retry != nil && retry.hasCL || reset.hasCL {
		r := out.rounded(1_000_000_000)
		if retry != nil && retry.hasCL {
			r.RetryAfter = retry.cl.RetryAfter
		}
		if reset.hasCL {
			r.ResetAfter = reset.cl.ResetAfter
		}
		out.cl, out.hasCL = r, true
	}
	return out
}

// judge decides rule r for key's current state without changing it.
func (e *Engine) judge(s *shard, r Rule, now, qty int64, v *verdict) error {
	nowMs := now / 1_000_000
	v.s, v.ent = s, nil
	var st keyState
	if slot, ok := s.lookupSlot(r.Key, nowMs); ok {
		v.ent, v.slot = &s.entries[slot], slot
		s.loadState(v.ent, &st)
	}
	return judgeState(&r, &st, now, qty, v)
}

// commit writes an admitted verdict. A quantity of 0 never creates a key
// and never extends one.
func (e *Engine) commit(v *verdict, r Rule, now, qty int64) error {
	s, ent, nowMs := v.s, v.current(r.Key), now/1_000_000
	switch r.Family {
	case FamilyCL:
		return s.storeGCRA(r.Key, ent, v.step, nowMs)
	case FamilyLB:
		if qty == 0 {
			return nil // a peek reserves nothing
		}
		expireAt := expireMs(v.tail)
		if ent = s.ensure(r.Key, ent, FamilyLB, expireAt, nowMs); ent == nil {
			return ErrOutOfMemory
		}
		ent.state = uint64(v.tail)
		s.setExpiry(ent, expireAt)
	case FamilyFW, FamilySWC:
		if qty == 0 {
			return nil
		}
		c := v.counter
		end := counterEnd(r, c)
		if ent = s.ensure(r.Key, ent, r.Family, expireMs(end), nowMs); ent == nil {
			return ErrOutOfMemory
		}
		*s.counter(ent) = counter{start: c.start, cur: uint32(c.cur), prev: uint32(c.prev)}
		s.setExpiry(ent, expireMs(end))
	case FamilySW:
		view := v.view
		if ent == nil {
			if qty == 0 {
				return nil
			}
			if ent = s.create(r.Key, FamilySW, expireMs(now+r.Window.Window), nowMs); ent == nil {
				return ErrOutOfMemory
			}
			// create gives the key an empty log; the key judged, if any,
			// was evicted meanwhile, and its log is gone.
			view = swView{}
		} else if qty == 0 && view.drop == 0 {
			return nil // a peek that changes nothing
		}
		log := s.log(ent)
		if grew := s.logs.apply(log, view, now, qty, r.Window.Limit); grew != 0 {
			s.used.Add(grew) // an atomic add, spared when the ring kept its size
			if grew > 0 {
				s.makeRoomFor(ent, nowMs)
			}
		}
		if log.size == 0 {
			s.removeKey(r.Key, nowMs)
			return nil
		}
		if qty > 0 {
			// The request just recorded, at now, is the newest, unless the
			// log holds a later one (a key restored from a clock ahead of
			// ours), which the key's expiry already covers: neither needs a
			// read of the ring.
			s.setExpiry(ent, max(ent.expireAt, expireMs(now+r.Window.Window)))
		}
		ent.state = uint64(uint32(ent.state)) | s.logs.hint(log)<<32
	}
	s.markChanged(s.name(ent))
	return nil
}

// current returns the verdict's entry as it is now. judge's pointer may be
// stale by the time a ThrottleAll records: another rule's new key in the
// same shard can grow the slab (moving every entry) or evict this key
// (then current is nil, and the key is written afresh), and the slot may
// then hold another key.
func (v *verdict) current(key []byte) *entry {
	if v.ent == nil {
		return nil
	}
	ent := &v.s.entries[v.slot]
	if ent.family() == FamilyNone || v.s.name(ent) != string(key) {
		return nil
	}
	return ent
}

// ensure returns ent, or a new entry for key when ent is nil.
func (s *shard) ensure(key []byte, ent *entry, f Family, expireAt, nowMs int64) *entry {
	if ent != nil {
		return ent
	}
	return s.create(key, f, expireAt, nowMs)
}

// duplicateKey finds the first rule that names an earlier rule's key, and
// that earlier rule: pairwise for a few rules, which allocates nothing,
// through a map for many, so that a request with thousands of rules costs
// linear time.
func duplicateKey(rules []Rule) (first, second int, dup bool) {
	if len(rules) <= 16 {
		for i := range rules {
			for j := 0; j < i; j++ {
				if string(rules[i].Key) == string(rules[j].Key) {
					return j, i, true
				}
			}
		}
		return 0, 0, false
	}
	seen := make(map[string]int, len(rules))
	for i, r := range rules {
		if j, ok := seen[string(r.Key)]; ok {
			return j, i, true
		}
		seen[string(r.Key)] = i
	}
	return 0, 0, false
}

// checkRules is ThrottleAll's rule on its rules: at least one
// (ErrNoRules), naming distinct keys (a *DuplicateKeyError), none of them
// LB (ErrLeakyInAll).
func checkRules(rules []Rule) error {
	if len(rules) == 0 {
		return ErrNoRules
	}
	if first, second, dup := duplicateKey(rules); dup {
		return &DuplicateKeyError{First: first, Second: second}
	}
	for i := range rules {
		if rules[i].Family == FamilyLB {
			return ErrLeakyInAll
		}
	}
	return nil
}
