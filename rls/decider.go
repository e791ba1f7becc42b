package rls

import (
	"context"
	"errors"
	"sync"

	"github.com/cellserver/cellserver/engine"
)

// Decider decides a request's rules all or nothing: every rule's quantity
// is recorded only if every rule admits its own (quantities[i] for
// rules[i]; 0 checks without recording). each[i] receives rule i's own
// decision. Rules name distinct keys. Both the in-memory engine
// (EngineDecider) and shared mode's store (StoreDecider) are Deciders.
type Decider interface {
	DecideAll(ctx context.Context, rules []engine.Rule, quantities []int64, each []engine.Decision) (engine.Decision, error)
}

// EngineDecider decides in the in-memory engine, atomically, in one locked
// pass (engine.ThrottleAllEach).
func EngineDecider(e *engine.Engine) Decider { return engineDecider{e} }

type engineDecider struct{ e *engine.Engine }

func (d engineDecider) DecideAll(_ context.Context, rules []engine.Rule, quantities []int64, each []engine.Decision) (engine.Decision, error) {
	return d.e.ThrottleAllEach(nil, rules, quantities, each)
}

// AllThrottler is the part of shared mode's store (commands.Store,
// persist.Shared) that StoreDecider uses: ThrottleAll's asynchronous form,
// which calls done exactly once.
type AllThrottler interface {
	ThrottleAll(rules []engine.Rule, quantity int64, done func(engine.Decision, error))
}

// StoreDecider decides in shared mode's store. The store decides one
// quantity for all rules atomically and returns the combined decision
// only, so:
//
//   - the rules that count (quantity > 0) are decided with one ThrottleAll
//     when they share a quantity, the usual case (the request's
//     hits_addend). Descriptors with different non-zero hits_addend values
//     are decided one group per quantity, smallest first, each group all or
//     nothing, stopping at the first limited group; the groups before it
//     stay counted (an approximation of the engine's single pass).
//   - each rule's own decision is then read with a quantity of 0 (all the
//     reads travel together), after the combined decision: another
//     instance may count in between, so a rule's remaining is approximate;
//     the combined decision, which Envoy acts on, is exact.
//   - a request of one rule, the common case, is one ThrottleAll (a peek
//     with a quantity of 0 when it does not count): its decision is the
//     rule's own, with nothing to read back.
//
// The caller's goroutine waits for the store, up to ctx's deadline.
func StoreDecider(s AllThrottler) Decider { return storeDecider{s} }

type storeDecider struct{ s AllThrottler }

type decided struct {
	d   engine.Decision
	err error
}

// throttleAll waits for one ThrottleAll.
func (sd storeDecider) throttleAll(ctx context.Context, rules []engine.Rule, qty int64) (engine.Decision, error) {
	ch := make(chan decided, 1)
	sd.s.ThrottleAll(rules, qty, func(d engine.Decision, err error) { ch <- decided{d, err} })
	select {
	case r := <-ch:
		return r.d, r.err
	case <-ctx.Done():
		return engine.Decision{}, ctx.Err()
	}
}

func (sd storeDecider) DecideAll(ctx context.Context, rules []engine.Rule, quantities []int64, each []engine.Decision) (engine.Decision, error) {
	if len(rules) == 0 {
		return engine.Decision{}, engine.ErrNoRules
	}
	if len(rules) == 1 {
		// One rule, the common request: its decision is its own state, in
		// one round trip, with nothing to read back.
		d, err := sd.throttleAll(ctx, rules, quantities[0])
		if err != nil {
			return engine.Decision{}, err
		}
		d.Limited = d.Limited && quantities[0] > 0
		each[0] = d
		return engine.Decision{Limited: d.Limited, RetryAfter: -1, Limit: d.Limit, Remaining: d.Remaining, ResetAfter: d.ResetAfter}, nil
	}
	// Distinct non-zero quantities, ascending (a request has few).
	var qtys []int64
	for _, q := range quantities {
		if q == 0 {
			continue
		}
		at := 0
		for at < len(qtys) && qtys[at] < q {
			at++
		}
		if at == len(qtys) || qtys[at] != q {
			qtys = append(qtys[:at], append([]int64{q}, qtys[at:]...)...)
		}
	}
	limited := false
	for _, q := range qtys {
		var group []engine.Rule
		for i, r := range rules {
			if quantities[i] == q {
				group = append(group, r)
			}
		}
		d, err := sd.throttleAll(ctx, group, q)
		if err != nil {
			return engine.Decision{}, err
		}
		if d.Limited {
			limited = true
			break
		}
	}
	// Each rule's state now, read together.
	errs := make([]error, len(rules))
	var wg sync.WaitGroup
	for i := range rules {
		wg.Add(1)
		go func() {
			defer wg.Done()
			each[i], errs[i] = sd.throttleAll(ctx, rules[i:i+1], 0)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return engine.Decision{}, err
	}
	// A rule is over when it cannot take its quantity now; if the combined
	// decision was limited and a concurrent change hides why, the rule
	// with the least room is the one that limited.
	out, least := engine.Decision{Limited: limited, RetryAfter: -1}, -1
	anyOver := false
	for i := range each {
		each[i].Limited = limited && quantities[i] > 0 && each[i].Remaining < quantities[i]
		anyOver = anyOver || each[i].Limited
		if least < 0 || each[i].Remaining < each[least].Remaining {
			least = i
		}
		out.ResetAfter = max(out.ResetAfter, each[i].ResetAfter)
	}
	if limited && !anyOver {
		each[least].Limited = true
	}
	out.Limit, out.Remaining = each[least].Limit, each[least].Remaining
	return out, nil
}
