package engine

import "errors"

// ErrDuplicateKey is returned when two rules of one ThrottleAll name the
// same key.
var ErrDuplicateKey = errors.New("rules name the same key twice")

// Rule is one limit on one key.
type Rule struct {
	Key    []byte
	Family Family
	// GCRA is a CL rule's quota.
	GCRA GCRAQuota
	// Window is an SW, SWC or FW rule's quota.
	Window WindowQuota
}

// verdict is one rule's decision and what to write if the request is
// admitted under every rule.
type verdict struct {
	s       *shard
	ent     *entry // the key's live entry, nil for a fresh key
	d       Decision
	step    gcraStep     // CL
	counter counterState // SWC, FW
	view    swView       // SW
	cl      Result       // CL's reply, which d.cl points to
}

// ThrottleWindow runs one SW, SWC or FW rule: it decides and, when the
// request is admitted, records it. tx is nil outside a transaction.
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
		if err := e.record(&v, r, now, quantity); err != nil {
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
// largest among the limiting rules, its reset_after the largest among all.
// Rules must name distinct keys.
func (e *Engine) ThrottleAll(tx *Txn, rules []Rule, quantity int64) (Decision, error) {
	for i := range rules {
		for j := 0; j < i; j++ {
			if string(rules[i].Key) == string(rules[j].Key) {
				return Decision{}, ErrDuplicateKey
			}
		}
	}
	if tx == nil {
		keys := make([][]byte, len(rules))
		for i, r := range rules {
			keys[i] = r.Key
		}
		tx = e.Begin(keys, false)
		defer tx.End()
	}
	now := e.now().UnixNano()
	vs := make([]verdict, len(rules))
	limited := false
	for i, r := range rules {
		s, _ := e.acquire(tx, r.Key)
		if err := e.judge(s, r, now, quantity, &vs[i]); err != nil {
			return Decision{}, err
		}
		limited = limited || vs[i].d.Limited
	}
	if !limited {
		for i, r := range rules {
			if err := e.record(&vs[i], r, now, quantity); err != nil {
				return Decision{}, err
			}
		}
	}
	return combine(vs), nil
}

// combine folds the rules' decisions into ThrottleAll's.
func combine(vs []verdict) Decision {
	out := vs[0].d
	out.RetryAfter, out.ResetAfter = -1, 0
	var retry, reset *Decision
	for i := range vs {
		d := &vs[i].d
		if d.Remaining < out.Remaining {
			out.Limit, out.Remaining, out.cl = d.Limit, d.Remaining, nil
		}
		if d.Limited {
			out.Limited = true
			if d.RetryAfter >= 0 && (retry == nil || d.RetryAfter > retry.RetryAfter) {
				retry = d
			}
		}
		if reset == nil || d.ResetAfter > reset.ResetAfter {
			reset = d
		}
	}
	// Times keep their own rule's rounding: a CL rule's seconds are
	// redis-cell's.
	out.cl = nil
	if retry != nil {
		out.RetryAfter = retry.RetryAfter
	}
	out.ResetAfter = reset.ResetAfter
	if retry != nil && retry.cl != nil || reset.cl != nil {
		r := out.rounded(1_000_000_000)
		if retry != nil && retry.cl != nil {
			r.RetryAfter = retry.cl.RetryAfter
		}
		if reset.cl != nil {
			r.ResetAfter = reset.cl.ResetAfter
		}
		out.cl = &r
	}
	return out
}

// judge decides rule r for key's current state without changing it.
func (e *Engine) judge(s *shard, r Rule, now, qty int64, v *verdict) error {
	nowMs := now / 1_000_000
	v.s = s
	v.ent = s.lookup(r.Key, nowMs)
	if v.ent != nil && v.ent.family != r.Family {
		return ErrWrongType
	}
	switch r.Family {
	case FamilyCL:
		var st gcraState
		if v.ent != nil {
			st = gcraState{tat: v.ent.tat, ok: true}
		}
		step, err := gcra(now, st, r.GCRA, qty)
		if err != nil {
			return err
		}
		v.step, v.cl = step, step.result
		v.d = Decision{Limited: step.result.Limited, Limit: step.result.Limit, Remaining: step.result.Remaining,
			RetryAfter: step.retry, ResetAfter: step.reset, cl: &v.cl}
	case FamilyFW, FamilySWC:
		var st counterState
		if v.ent != nil {
			st = counterState{start: v.ent.start, cur: int64(v.ent.cur), prev: int64(v.ent.prev), ok: true}
		}
		if r.Family == FamilyFW {
			v.d, v.counter = fixedWindow(now, st, r.Window, qty)
		} else {
			v.d, v.counter = slidingCounter(now, st, r.Window, qty)
		}
	case FamilySW:
		var l *swLog
		if v.ent != nil {
			l = v.ent.log
		}
		v.d, v.view = slidingLog(now, l, r.Window, qty)
	default:
		return ErrWrongType
	}
	return nil
}

// record writes an admitted verdict. A quantity of 0 never creates a key
// and never extends one.
func (e *Engine) record(v *verdict, r Rule, now, qty int64) error {
	s, ent, nowMs := v.s, v.ent, now/1_000_000
	switch r.Family {
	case FamilyCL:
		return s.storeGCRA(r.Key, ent, v.step, nowMs)
	case FamilyFW, FamilySWC:
		if qty == 0 {
			return nil
		}
		c := v.counter
		end := c.start + r.Window.Window
		if r.Family == FamilySWC && c.cur > 0 {
			end += r.Window.Window
		}
		if ent = s.ensure(r.Key, ent, r.Family, expireMs(end), nowMs); ent == nil {
			return ErrOutOfMemory
		}
		ent.start, ent.cur, ent.prev = c.start, uint32(c.cur), uint32(c.prev)
		s.setExpiry(ent, expireMs(end))
	case FamilySW:
		if ent == nil && qty == 0 {
			return nil
		}
		if ent == nil {
			if ent = s.create(r.Key, FamilySW, expireMs(now+r.Window.Window), nowMs); ent == nil {
				return ErrOutOfMemory
			}
			ent.log = &swLog{}
		}
		s.used.Add(ent.log.apply(v.view, now, qty, true))
		if ent.log.size == 0 {
			s.removeKey(r.Key, nowMs)
			return nil
		}
		if qty > 0 {
			s.setExpiry(ent, expireMs(ent.log.newest()+r.Window.Window))
		}
	}
	s.markChanged(ent.key)
	return nil
}

// ensure returns ent, or a new entry for key when ent is nil.
func (s *shard) ensure(key []byte, ent *entry, f Family, expireAt, nowMs int64) *entry {
	if ent != nil {
		return ent
	}
	return s.create(key, f, expireAt, nowMs)
}
