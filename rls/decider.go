package rls

import (
	"context"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// Decider decides a request's rules all or nothing: every rule's quantity
// is recorded only if every rule admits its own (quantities[i] for
// rules[i]; 0 checks without recording). each[i] receives rule i's own
// decision. Rules name distinct keys. Both the in-memory engine
// (EngineDecider) and shared mode's store (StoreDecider) are Deciders. Now
// is the clock it decides at, which the service reads for a fixed window's
// end when nothing is counted in it.
type Decider interface {
	DecideAll(ctx context.Context, rules []engine.Rule, quantities []int64, each []engine.Decision) (engine.Decision, error)
	Now() time.Time
}

// EngineDecider decides in the in-memory engine, atomically, in one locked
// pass (engine.ThrottleAllEach).
func EngineDecider(e *engine.Engine) Decider { return engineDecider{e} }

type engineDecider struct{ e *engine.Engine }

// Now is the engine's clock.
func (d engineDecider) Now() time.Time { return d.e.Now() }

func (d engineDecider) DecideAll(_ context.Context, rules []engine.Rule, quantities []int64, each []engine.Decision) (engine.Decision, error) {
	return d.e.ThrottleAllEach(nil, rules, quantities, each)
}

// AllThrottler is the part of shared mode's store (persist.Shared) that
// StoreDecider uses: engine.ThrottleAllEach's asynchronous form, decided
// in one atomic step in the store, which calls done exactly once, and the
// clock it decides at (the store's, as estimated).
type AllThrottler interface {
	ThrottleAllEach(rules []engine.Rule, quantities []int64, done func(d engine.Decision, each []engine.Decision, err error))
	Now() time.Time
}

// StoreDecider decides in shared mode's store: a request's rules in one
// atomic step, each with its own quantity, with the engine's single pass
// (engine.DecideEach), so that its decision and each rule's are the ones
// the in-memory engine gives on the same states. The caller's goroutine
// waits for the store, up to ctx's deadline.
func StoreDecider(s AllThrottler) Decider { return storeDecider{s} }

type storeDecider struct{ s AllThrottler }

// Now is the store's clock, as shared mode estimates it.
func (sd storeDecider) Now() time.Time { return sd.s.Now() }

// decided is one ThrottleAllEach's answer.
type decided struct {
	d    engine.Decision
	each []engine.Decision
	err  error
}

func (sd storeDecider) DecideAll(ctx context.Context, rules []engine.Rule, quantities []int64, each []engine.Decision) (engine.Decision, error) {
	ch := make(chan decided, 1) // no rules: the store answers ErrNoRules
	sd.s.ThrottleAllEach(rules, quantities, func(d engine.Decision, e []engine.Decision, err error) { ch <- decided{d, e, err} })
	select {
	case r := <-ch:
		if r.err != nil {
			return engine.Decision{}, r.err
		}
		copy(each, r.each)
		return r.d, nil
	case <-ctx.Done():
		return engine.Decision{}, ctx.Err()
	}
}
