package engine

import "errors"

// ErrWrongType is returned when a command meets a key of another family.
var ErrWrongType = errors.New("key holds another family")

// Throttle runs CL.THROTTLE's GCRA on key: it decides, stores the new state
// as redis-cell would and returns the decision. tx is nil outside a
// transaction. It allocates nothing when the key exists. A new key may evict
// others to stay within Options.MaxMemory, or fail with ErrOutOfMemory.
func (e *Engine) Throttle(tx *Txn, key []byte, q GCRAQuota, quantity int64) (Result, error) {
	if emissionInterval(q.Count, q.Period) == 0 {
		return Result{}, ErrZeroRate // before the key is read, as redis-cell does
	}
	s, unlock := e.acquire(tx, key)
	if unlock {
		defer s.mu.Unlock()
	}
	now := e.now().UnixNano()
	nowMs := now / 1_000_000

	var st gcraState
	ent := s.lookup(key, nowMs)
	if ent != nil {
		if ent.family() != FamilyCL {
			return Result{}, ErrWrongType
		}
		st = gcraState{tat: ent.tat(), ok: true}
	}
	step, err := gcra(now, st, q, quantity)
	if err == ErrExpire && ent != nil {
		// redis-cell writes the new TAT, far in the past, before failing to
		// set its expiry; such a TAT limits nothing, so dropping the key
		// gives every later call redis-cell's answer.
		s.removeKey(key, nowMs)
	}
	if err != nil {
		return step.result, err
	}
	if err := s.storeGCRA(key, ent, step, nowMs); err != nil {
		return Result{}, err
	}
	return step.result, nil
}

// storeGCRA writes a GCRA step's state to key, whose live entry is ent (nil
// for a fresh key).
func (s *shard) storeGCRA(key []byte, ent *entry, step gcraStep, nowMs int64) error {
	if !step.store {
		return nil
	}
	if step.ttlMillis < 0 {
		// redis-cell clears the expiry here and leaves a TAT in the past
		// forever; the key limits nothing, so cellserver forgets it.
		if ent != nil {
			s.removeKey(key, nowMs)
		}
		return nil
	}
	expireAt := nowMs + step.ttlMillis
	if ent == nil {
		if ent = s.create(key, FamilyCL, expireAt, nowMs); ent == nil {
			return ErrOutOfMemory
		}
	} else {
		s.setExpiry(ent, expireAt)
	}
	ent.state = step.tat
	s.markChanged(s.name(ent))
	return nil
}

// ThrottleDone receives a CL.THROTTLE decision made on another goroutine
// (shared mode's store): a type that carries the command to its reply
// implements it, so that the call costs no allocation of its own.
type ThrottleDone interface {
	Done(res Result, err error)
}

// ThrottleFunc is a ThrottleDone made of a function.
type ThrottleFunc func(Result, error)

// Done calls f.
func (f ThrottleFunc) Done(res Result, err error) { f(res, err) }
