package persist

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	mu  sync.Mutex // guards m, counts, dropped and droppedAll, and the writes to present and epoch
	m   map[string]denyEntry
	max int
	// epoch counts the invalidations (invalidate); dropped is, for each
	// bucket, the epoch of the last that named one of its keys, and
	// droppedAll that of the last of every key. A refusal decided in a
	// round is remembered only if no invalidation of its key came since
	// the round was sent (add): a DEL or a refund may have reached the
	// store after the round's compare-and-set and before its reply.
	epoch      atomic.Uint64
	dropped    []uint64
	droppedAll uint64

	// Keys hash to one of len(counts) buckets; counts is how many of m's
	// keys each holds, and present has a bucket's bit set while its
	// count is not 0. A lookup whose bit is clear misses without the
	// lock or the map, the common case when few keys are refused; a bit
	// read while it changes only costs the round trip a miss costs.
	seed    maphash.Seed
	present []atomic.Uint64
	counts  []uint32
}

// denyBuckets is how many buckets a deny cache's filter has: its bits
// take 32 KiB.
const denyBuckets = 1 << 18

// newDenyCache returns an empty deny cache of at most max keys (none when
// max is 0 or less), its filter of buckets buckets (a multiple of 64).
func newDenyCache(max, buckets int) *denyCache {
	return &denyCache{
		m:       make(map[string]denyEntry),
		max:     max,
		seed:    maphash.MakeSeed(),
		present: make([]atomic.Uint64, buckets/64),
		counts:  make([]uint32, buckets),
		dropped: make([]uint64, buckets),
	}
}

// bucket is key's bucket.
func (c *denyCache) bucket(key string) uint64 {
	return maphash.String(c.seed, key) % uint64(len(c.counts))
}

// mayHold reports whether key may be in the cache: false is certain.
func (c *denyCache) mayHold(key string) bool {
	b := c.bucket(key)
	return c.present[b/64].Load()&(1<<(b%64)) != 0
}

// insert adds a key that is not in m. c.mu is held.
func (c *denyCache) insert(key string, e denyEntry) {
	c.m[key] = e
	b := c.bucket(key)
	if c.counts[b]++; c.counts[b] == 1 {
		c.present[b/64].Or(1 << (b % 64))
	}
}

// remove deletes key from m, if it is there. c.mu is held.
func (c *denyCache) remove(key string) {
	if _, ok := c.m[key]; !ok {
		return
	}
	delete(c.m, key)
	b := c.bucket(key)
	if c.counts[b]--; c.counts[b] == 0 {
		c.present[b/64].And(^uint64(1 << (b % 64)))
	}
}

// removeAll empties m. c.mu is held.
func (c *denyCache) removeAll() {
	clear(c.m)
	clear(c.counts)
	for i := range c.present {
		c.present[i].Store(0)
	}
}

// denyEntry is one remembered refusal.
type denyEntry struct {
	op       engine.Op
	rule     engine.Rule // Key unset
	quantity int64
	until    int64 // ns since the epoch, store time
	state    engine.Record
}

// add remembers op's refusal, if it is worth remembering and its key was
// not invalidated since epoch (epoch.Load() when the refusal's round was
// sent).
func (c *denyCache) add(op *sharedOp, epoch uint64) {
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
	if c.droppedAll > epoch || c.dropped[c.bucket(key)] > epoch {
		return
	}
	if old, ok := c.m[key]; ok {
		// Assigning under key would make the map keep key itself in
		// place of its copy: the copy is assigned under.
		e.state.Key = old.state.Key
		c.m[old.state.Key] = e
		return
	}
	if c.max > 0 && len(c.m) >= c.max {
		for k := range c.m {
			c.remove(k)
			break
		}
	}
	key = strings.Clone(key)
	e.state.Key = key
	c.insert(key, e)
}

// lookup decides op from a remembered refusal at now, if one applies and
// the decision is still a refusal.
func (c *denyCache) lookup(op *sharedOp, now int64) (engine.Decision, bool) {
	if !c.mayHold(op.keys[0]) {
		return engine.Decision{}, false
	}
	c.mu.Lock()
	e, ok := c.m[op.keys[0]]
	if ok && now >= e.until {
		c.remove(op.keys[0])
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
	c.dropLocked(keys, all)
}

// invalidate is drop for keys whose state may have changed in the store
// behind a round under way (a DEL, a refund): that round does not remember
// a refusal of them.
func (c *denyCache) invalidate(keys []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.epoch.Add(1)
	if all {
		c.droppedAll = e
	}
	for _, k := range keys {
		c.dropped[c.bucket(k)] = e
	}
	c.dropLocked(keys, all)
}

// dropLocked is drop, c.mu held.
func (c *denyCache) dropLocked(keys []string, all bool) {
	if len(c.m) == 0 {
		return
	}
	if all {
		c.removeAll()
		return
	}
	for _, k := range keys {
		if c.mayHold(k) {
			c.remove(k)
		}
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
	s.keepPublishes(string(payload))
	s.pokePublisher()
}

// maxKeptPublishes is the most invalidation messages kept for publishing
// (the store down, or publishing failing): past it they become one that
// drops every key, which says no less.
const maxKeptPublishes = 1024

// keepPublishes adds msgs to the invalidation messages to publish (a
// failed publish puts its messages back; their order does not matter).
func (s *Shared) keepPublishes(msgs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishes = append(s.publishes, msgs...)
	if len(s.publishes) > maxKeptPublishes {
		s.publishes = []string{""} // every key
	}
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

// pokePublisher wakes the publisher.
func (s *Shared) pokePublisher() {
	select {
	case s.pubCh <- struct{}{}:
	default:
	}
}

// publisher publishes the invalidations on a goroutine of its own, so that
// a slow store holds up no round (whose operations have their timeout to
// keep). While the store is down, or after a publish failed, the messages
// are kept: they go once the store answers again (the batcher, back up,
// wakes it) or, after a failure, at the next try, probeInterval later.
// At Close it publishes what is left, within the timeout.
func (s *Shared) publisher() {
	defer s.wg.Done()
	defer close(s.published)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-s.pubCh:
		case <-retry.C:
		case <-s.stop:
			if pubs := s.takePublishes(); len(pubs) > 0 && !s.down.Load() {
				_ = s.publishWithin(context.Background(), pubs) // Close cancels s.ctx
			}
			return
		}
		if s.down.Load() {
			continue
		}
		pubs := s.takePublishes()
		if len(pubs) == 0 {
			continue
		}
		if err := s.publish(pubs); err != nil {
			s.log.Warn("shared store: publishing an invalidation failed; trying again", "err", err)
			s.keepPublishes(pubs...)
			retry.Reset(probeInterval)
		}
	}
}

// dropLocal drops keys (prefixed), or all keys, from this instance's deny
// cache at once and from its value cache at the batcher's next round.
func (s *Shared) dropLocal(keys []string, all bool) {
	s.deny.invalidate(keys, all)
	s.b.drop(keys, all)
}

// publish sends invalidation messages, in one pipeline.
func (s *Shared) publish(msgs []string) error { return s.publishWithin(s.ctx, msgs) }

// publishWithin is publish under ctx, within the timeout.
func (s *Shared) publishWithin(ctx context.Context, msgs []string) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	pipe := s.Client().Pipeline()
	for _, m := range msgs {
		pipe.Publish(ctx, s.channel, m)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// listen drops the keys other instances (and this one) say were deleted,
// once subscribe has subscribed (confirmed: it has seen the subscription
// take effect). What was published before a subscription took effect is
// lost: the first one drops the refusals remembered (subscribed), every
// later one every key (go-redis makes the subscription's connection again
// when it fails or is cut).
func (s *Shared) listen(ch <-chan any, confirmed bool) {
	defer s.wg.Done()
	for {
		select {
		case msg, ok := <-ch:
			if !ok {
				return
			}
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind != "subscribe" {
					continue
				}
				if confirmed {
					s.dropLocal(nil, true)
				} else {
					s.subscribed()
				}
				confirmed = true
			case *redis.Message:
				if keys, ok := decodeInvalidation(m.Payload); ok {
					s.dropLocal(keys, len(keys) == 0)
				}
			}
		case <-s.stop:
			return
		}
	}
}

// subscribed records that the invalidations' subscription has taken
// effect for the first time: refusals are remembered from then on (before
// it, decisions reach the store while Start's subscription is made in the
// background, or made again after its first connection failed, and what
// is published meanwhile is lost). Any remembered before it are dropped.
// A cached value that is stale costs a conflict, not a wrong answer: it is
// kept.
func (s *Shared) subscribed() {
	s.deny.invalidate(nil, true)
	s.isSubscribed.Store(true)
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
