package persist

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"

	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// denyCache remembers single-key refusals that a successful compare-and-set
// verified: until the refusal's retry_after has passed (its reset, when it
// can never be admitted), the same rule with a quantity at least as large
// is refused from the remembered state without a round trip. Requests
// admitted under the same rule only make a key's state stricter; what
// makes it laxer is a reset (DEL, UNLINK, FLUSH) or a refund (CL.THROTTLE
// with a negative quantity), either of which through any cellserver
// invalidates the entry on every instance, or an admission under another
// window of the same family, which drops this instance's entry (another
// instance's is not seen: the README says so). It is safe for concurrent
// use.
type denyCache struct {
	mu  sync.Mutex // guards m
	m   map[string]denyEntry
	max int
}

// denyEntry is one remembered refusal.
type denyEntry struct {
	op       engine.Op
	rule     engine.Rule // Key unset
	quantity int64
	until    int64 // ns since the epoch, store time
	state    engine.Record
}

// add remembers op's refusal, if it is worth remembering.
func (c *denyCache) add(op *sharedOp) {
	until := op.at
	switch {
	case op.d.RetryAfter > 0:
		until += op.d.RetryAfter
	case op.d.RetryAfter < 0 && op.d.ResetAfter > 0:
		until += op.d.ResetAfter
	default:
		return
	}
	r := op.rules[0]
	r.Key = nil
	e := denyEntry{op: op.op, rule: r, quantity: op.quantity, until: until, state: op.state}
	// The op's key is a view of bytes it reuses once released: the entry
	// keeps a copy, made once per key remembered.
	key := op.keys[0]
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		// Assigning under key would make the map keep key itself in
		// place of its copy: the copy is assigned under.
		e.state.Key = old.state.Key
		c.m[old.state.Key] = e
		return
	}
	if c.max > 0 && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	key = strings.Clone(key)
	e.state.Key = key
	c.m[key] = e
}

// lookup decides op from a remembered refusal at now, if one applies and
// the decision is still a refusal.
func (c *denyCache) lookup(op *sharedOp, now int64) (engine.Decision, bool) {
	c.mu.Lock()
	e, ok := c.m[op.keys[0]]
	if ok && now >= e.until {
		delete(c.m, op.keys[0])
		ok = false
	}
	c.mu.Unlock()
	r := op.rules[0]
	if !ok || e.op != op.op || e.rule.Family != r.Family || e.rule.GCRA != r.GCRA ||
		e.rule.Window != r.Window || e.rule.Leaky != r.Leaky || op.quantity < e.quantity {
		return engine.Decision{}, false
	}
	recs := [1]engine.Record{e.state}
	d, err := engine.Decide(max(now, newestTime(&recs[0])), op.op, op.rules, recs[:], op.quantity)
	if err != nil || !d.Limited {
		return engine.Decision{}, false
	}
	return d, true
}

// drop forgets keys, or every key when all.
func (c *denyCache) drop(keys []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) == 0 {
		return
	}
	if all {
		clear(c.m)
		return
	}
	for _, k := range keys {
		delete(c.m, k)
	}
}

// clear forgets every refusal.
func (c *denyCache) clear() { c.drop(nil, true) }

// Invalidate publishes that keys were deleted through this instance (DEL,
// UNLINK), or with no keys that every key was (FLUSHALL, FLUSHDB), after
// the command acted on the store; every instance, this one at once, drops
// them from its caches. The keys are cellserver's, without the prefix.
func (s *Shared) Invalidate(keys ...string) {
	prefixed := make([]string, len(keys))
	for i, k := range keys {
		prefixed[i] = s.opts.Prefix + k
	}
	s.invalidate(prefixed)
}

// invalidate is Invalidate with the keys prefixed already.
func (s *Shared) invalidate(prefixed []string) {
	var payload []byte
	for _, k := range prefixed {
		payload = binary.AppendUvarint(payload, uint64(len(k)))
		payload = append(payload, k...)
	}
	s.dropLocal(prefixed, len(prefixed) == 0)
	s.mu.Lock()
	s.publishes = append(s.publishes, string(payload))
	s.mu.Unlock()
	s.b.poke() // the batcher publishes them
}

// takePublishes returns the invalidation messages to publish, and forgets
// them.
func (s *Shared) takePublishes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	pubs := s.publishes
	s.publishes = nil
	return pubs
}

// dropLocal drops keys (prefixed), or all keys, from this instance's deny
// cache at once and from its value cache at the batcher's next round.
func (s *Shared) dropLocal(keys []string, all bool) {
	s.deny.drop(keys, all)
	s.b.drop(keys, all)
}

// publish sends invalidation messages, in one pipeline.
func (s *Shared) publish(msgs []string) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
	defer cancel()
	pipe := s.client.Pipeline()
	for _, m := range msgs {
		pipe.Publish(ctx, s.channel, m)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		s.log.Warn("shared store: publishing an invalidation failed", "err", err)
	}
}

// listen drops the keys other instances (and this one) say were deleted.
func (s *Shared) listen(ch <-chan *redis.Message) {
	defer s.wg.Done()
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				return
			}
			keys, ok := decodeInvalidation(m.Payload)
			if ok {
				s.dropLocal(keys, len(keys) == 0)
			}
		case <-s.stop:
			return
		}
	}
}

// decodeInvalidation reads a message of keys, each its length as a uvarint
// and its bytes; none means every key.
func decodeInvalidation(p string) ([]string, bool) {
	var keys []string
	for len(p) > 0 {
		var b [binary.MaxVarintLen64]byte
		n, k := binary.Uvarint(b[:copy(b[:], p)])
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, false
		}
		keys = append(keys, p[k:k+int(n)])
		p = p[k+int(n):]
	}
	return keys, true
}
