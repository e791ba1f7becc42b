package persist

import (
	"context"
	"runtime"
	"slices"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// timedOut answers an operation the store has not decided within the
// timeout. A store that slow counts as down: the fallback answers, as it
// does when a round trip fails, and the prober brings the store back.
func (s *Shared) timedOut(op *sharedOp) {
	s.stats.timeouts.Add(1)
	s.markDown()
	s.fallback(op)
}

// group is a set of keys linked by operations (a THROTTLE.ALL links its
// keys), checked and written all or nothing, with its operations in
// arrival order.
type group struct {
	keys []string
	ops  []*sharedOp
	cas  []casKey
	// finals are the keys' values once every op has been applied.
	finals []storeValue
	one    [1]*sharedOp // ops' room when it has one op, the common case
	// slot is the key's entry in the value cache when the group is one
	// key's (groupOps held it for the round), -1 otherwise.
	slot int32
}

// roundBufs is the room a round works in: its groups, the compare-and-sets
// and final values of their keys, and its script calls. The batcher keeps
// it from one round to the next, unless a round ended without its reply:
// its calls, which point into cas, may still be being sent.
type roundBufs struct {
	hashes     []uint64 // the ops' keys' hashes
	slab       []group
	groups     []*group
	cas        []casKey
	finals     []storeValue
	calls      []*casCall
	callGroups [][]*group
	ncalls     int
	natives    []*nativeCmd
	nnative    int
}

// call returns the round's next call, empty.
func (b *roundBufs) call() *casCall {
	if b.ncalls == len(b.calls) {
		b.calls = append(b.calls, &casCall{})
		b.callGroups = append(b.callGroups, nil)
	}
	c := b.calls[b.ncalls]
	c.reset()
	b.callGroups[b.ncalls] = b.callGroups[b.ncalls][:0]
	b.ncalls++
	return c
}

// round decides ops and sends one round trip; it returns the ops to decide
// again (their group conflicted).
func (b *batcher) round(ops []*sharedOp) (retry []*sharedOp) {
	s := b.s
	rb := &b.bufs
	mode := s.mode.Load()
	b.denyEpoch = s.deny.epoch.Load() // before the round reaches the store
	groups := b.groupOps(ops)
	now := s.now()
	// The round's keys share one slab each for their compare-and-sets and
	// final values.
	nkeys := 0
	for _, g := range groups {
		nkeys += len(g.keys)
	}
	rb.cas, rb.finals = grow(rb.cas, nkeys), grow(rb.finals, nkeys)
	cas, finals := rb.cas, rb.finals
	for _, g := range groups {
		n := len(g.keys)
		g.cas, g.finals = cas[:n:n], finals[:n:n]
		cas, finals = cas[n:], finals[n:]
		b.decideGroup(g, now)
	}
	// One call per hash slot (one in all on a single Redis), split at
	// maxCallKeys.
	rb.ncalls = 0
	rb.nnative = 0
	var bySlot map[int]int
	if mode.cluster {
		bySlot = map[int]int{}
	}
	ifeq, native := s.ifeq.Load(), !s.opts.ScriptOnly
	for _, g := range groups {
		if native && nativeEligible(g, ifeq) {
			rb.nativeCmd(g)
			continue
		}
		i, ok := rb.ncalls-1, rb.ncalls > 0
		if mode.cluster {
			i, ok = bySlot[keySlot(g.keys[0])]
		}
		if ok && len(rb.calls[i].keys)+len(g.keys) > maxCallKeys {
			ok = false
		}
		if !ok {
			i = rb.ncalls
			if mode.cluster {
				bySlot[keySlot(g.keys[0])] = i
			}
			rb.call()
		}
		rb.calls[i].add(g.cas)
		rb.callGroups[i] = append(rb.callGroups[i], g)
	}
	calls, callGroups := rb.calls[:rb.ncalls], rb.callGroups[:rb.ncalls]
	natives := rb.natives[:rb.nnative]

	type outcome struct {
		replies []casReply
		errs    []error
		timeNs  int64
		timeErr error
		sent    time.Duration
		recv    time.Duration
	}
	result := make(chan outcome, 1)
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
	defer cancel()
	sent := s.clock.local()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		replies, errs, timeNs, timeErr := runCAS(ctx, mode.client, calls, natives, mode.cluster)
		if s.opts.answered != nil {
			s.opts.answered()
		}
		result <- outcome{replies, errs, timeNs, timeErr, sent, s.clock.local()}
	}()
	// The call's goroutine runs first (go puts it next on this P), so
	// that the call is usually written before the last round's ops are
	// released (which it does not read: nothing orders the two).
	runtime.Gosched()
	b.releaseDone()
	start := sent
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		// Wait until the reply, the earliest deadline of an op not answered
		// yet, or the round trip's own timeout.
		next := start + s.opts.Timeout
		for _, op := range ops {
			if !op.answered && op.deadline < next {
				next = op.deadline
			}
		}
		timer.Reset(next - s.clock.local())
		select {
		case out := <-result:
			s.stats.roundTrips.Add(1)
			s.stats.latency(out.recv - out.sent)
			// Counted before any is answered: whoever gets an answer
			// finds it counted.
			s.stats.decided(b.tally(callGroups, out.replies, out.errs) + tallyNative(natives))
			retry := b.apply(callGroups, out.replies, out.errs, out.sent, out.recv)
			return b.applyNative(natives, out.timeNs, out.timeErr, out.sent, out.recv, retry)
		case <-s.stop:
			// Close: the reply may never come (a client without
			// ContextTimeoutEnabled waits out its ReadTimeout).
			b.abandon(ops, groups)
			return nil
		case <-timer.C:
		}
		if s.clock.local()-start >= s.opts.Timeout {
			// The round trip outlived the timeout: its ops not answered
			// yet waited as long, and count as timed out.
			for _, op := range ops {
				if !op.answered {
					s.stats.timeouts.Add(1)
				}
			}
			s.markDown()
			b.abandon(ops, groups)
			return nil
		}
		now := s.clock.local()
		for _, op := range ops {
			if !op.answered && now > op.deadline {
				s.timedOut(op)
			}
		}
	}
}

// abandon answers the ops of a round that ended without its reply, whose
// calls may still be being sent: the calls' room and the ops' keys are
// not reused.
func (b *batcher) abandon(ops []*sharedOp, groups []*group) {
	for _, g := range groups {
		b.publishLaxer(g) // the store may have carried the round out
	}
	b.bufs = roundBufs{}
	for _, op := range ops {
		op.abandoned = true
		b.s.fallback(op)
	}
}

// groupOps links the ops that share keys into groups, in order of arrival.
func (b *batcher) groupOps(ops []*sharedOp) []*group {
	for _, op := range ops {
		if len(op.keys) != 1 {
			return groupLinked(ops)
		}
	}
	// Every op has one key: a group per key, found by the key's entry in
	// the value cache, which the round holds (one lookup per op in all).
	// The entries are read once first, all of them, their misses
	// overlapping.
	c := b.cache
	c.round++
	c.reserve(len(ops))
	rb := &b.bufs
	hashes := grow(rb.hashes, len(ops))
	var touched uint64
	for i, op := range ops {
		hashes[i] = op.hash // queued computed it
		touched += c.touch(hashes[i])
	}
	rb.hashes, b.touched = hashes, touched
	slab := grow(rb.slab, len(ops))[:0]
	for i, op := range ops {
		slot := c.slotOf(hashes[i])
		e := &c.slots[slot]
		if e.round == c.round && slab[e.group].keys[0] != op.keys[0] {
			// Two keys whose hashes collide: the round groups them by
			// name instead.
			return groupLinked(ops)
		}
		if e.round == c.round {
			g := &slab[e.group]
			g.ops = append(g.ops, op)
			continue
		}
		e.round, e.group = c.round, int32(len(slab))
		slab = append(slab, group{keys: op.keys[:1:1], slot: slot})
		g := &slab[len(slab)-1]
		g.one[0] = op
		g.ops = g.one[:1]
	}
	rb.slab = slab
	groups := grow(rb.groups, len(slab))
	for i := range slab {
		groups[i] = &slab[i]
	}
	rb.groups = groups
	return groups
}

// grow returns buf resliced to n elements, zeroed, reallocated if it is
// too small.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n, n+n/4)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// groupLinked is groupOps for ops some of which have several keys.
func groupLinked(ops []*sharedOp) []*group {
	keyIndex := map[string]int{}
	parent := []int{}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	var keys []string
	for _, op := range ops {
		first := -1
		for _, k := range op.keys {
			i, ok := keyIndex[k]
			if !ok {
				i = len(parent)
				keyIndex[k] = i
				parent = append(parent, i)
				keys = append(keys, k)
			}
			if first < 0 {
				first = find(i)
				continue
			}
			if r := find(i); r != first {
				parent[r] = first
			}
		}
	}
	byRoot := map[int]*group{}
	var groups []*group
	for i, k := range keys {
		r := find(i)
		g, ok := byRoot[r]
		if !ok {
			g = &group{slot: -1}
			byRoot[r] = g
			groups = append(groups, g)
		}
		g.keys = append(g.keys, k)
	}
	for _, op := range ops {
		g := byRoot[find(keyIndex[op.keys[0]])]
		g.ops = append(g.ops, op)
	}
	return groups
}

// keyAt returns where k is in keys; index, when not nil, maps them.
func keyAt(keys []string, index map[string]int, k string) int {
	if index != nil {
		return index[k]
	}
	for i, x := range keys {
		if x == k {
			return i
		}
	}
	panic("persist: an op's key is not in its group")
}

// decideGroup decides the group's ops in order, each on the state the one
// before left, from the cached values, and fills in its compare-and-set
// (g.cas and g.finals, whose room the caller gives): the values first
// expected and the last ones.
func (b *batcher) decideGroup(g *group, now int64) {
	s := b.s
	nowMs := now / 1e6
	boundMs := s.clock.boundNs()/1e6 + 1
	n := len(g.keys)
	// The keys' states, whether each is another application's, and what
	// each was decoded to (to write only what changed). One key, the
	// common case, needs no allocation but its records'.
	var oneState [1]engine.Record
	var oneInitial [1]initialValue
	var oneForeign [1]bool
	states, initial, foreign := oneState[:], oneInitial[:], oneForeign[:]
	var index map[string]int
	if n > 1 {
		states, initial, foreign = make([]engine.Record, n), make([]initialValue, n), make([]bool, n)
		if n > 8 {
			index = make(map[string]int, n)
			for i, k := range g.keys {
				index[k] = i
			}
		}
	}
	for i, k := range g.keys {
		var sv storeValue
		if g.slot >= 0 {
			sv = b.cache.slots[g.slot].val
		} else {
			sv = b.cache.get(k)
		}
		if sv.kind == kindValue && nowMs-boundMs > sv.expireAtMs {
			// Gone in the store too, whatever the error of our clock.
			sv = storeValue{kind: kindAbsent}
		}
		rec, ok := decodeValue(sv, k, nowMs)
		foreign[i] = !ok
		states[i] = rec
		g.cas[i] = casKey{key: k, expected: sv, write: writeKeep}
		initial[i] = initialOf(&rec)
	}
	for _, op := range g.ops {
		op.err, op.d = nil, engine.Decision{}
		if len(op.keys) == 1 {
			// No slice to build: the op decides on its key's record, in
			// place.
			i := keyAt(g.keys, index, op.keys[0])
			op.at = max(now, newestTime(&states[i]))
			if foreign[i] {
				op.err = engine.ErrWrongType
				if op.op == engine.OpAll { // names the rule, as for several
					op.err = foreignRuleError(op, op.at, states[i:i+1], []bool{true})
				}
				continue
			}
			op.d, op.err = op.decide(op.at, states[i:i+1])
			if op.err == nil && op.d.Limited {
				op.state = states[i] // what the deny cache remembers
			}
			continue
		}
		recs := make([]engine.Record, len(op.keys))
		wrong := make([]bool, len(op.keys))
		at := now
		anyWrong := false
		for j, k := range op.keys {
			i := keyAt(g.keys, index, k)
			recs[j] = states[i]
			at = max(at, newestTime(&recs[j]))
			wrong[j] = foreign[i]
			anyWrong = anyWrong || foreign[i]
		}
		op.at = at
		if anyWrong {
			op.err = foreignRuleError(op, at, recs, wrong)
			continue
		}
		op.d, op.err = op.decide(at, recs)
		for j, k := range op.keys {
			states[keyAt(g.keys, index, k)] = recs[j]
		}
	}
	for i := range g.keys {
		g.finals[i] = g.cas[i].expected
		if foreign[i] {
			continue
		}
		v, changed := initial[i].changed(&states[i])
		if !changed {
			continue
		}
		g.cas[i].newVal = v
		g.cas[i].write = writeSet
		if v.kind == kindAbsent {
			g.cas[i].write = writeDel
		}
		g.finals[i] = v
	}
}

// apply takes a round trip's replies: a group written answers its ops; a
// group that conflicted updates the value cache with the store's values
// and its ops are returned to be decided again; a call that failed marks
// the store down and its ops fall back.
func (b *batcher) apply(callGroups [][]*group, replies []casReply, errs []error, sent, recv time.Duration) (retry []*sharedOp) {
	s := b.s
	for c, groups := range callGroups {
		if errs[c] != nil {
			s.log.Debug("shared store call failed", "err", errs[c])
			s.markDown()
			for _, g := range groups {
				b.publishLaxer(g) // the reply may be what was lost
				for _, op := range g.ops {
					s.fallback(op)
				}
			}
			continue
		}
		r := replies[c]
		s.clock.sample(sent, recv, r.timeNs)
		for gi, g := range groups {
			cur := r.conflicted(gi)
			if cur != nil {
				s.stats.conflicts.Add(1)
				b.cacheGroup(g, cur)
				for _, op := range g.ops {
					if !op.answered {
						retry = append(retry, op)
					}
				}
				continue
			}
			b.written(g)
		}
	}
	b.answerSettled()
	return retry
}

// written takes what the store wrote for g: the value cache, and the deny
// cache for g's refusals and refunds. Its ops are answered by
// answerSettled, once every group of the round has been taken, so that no
// client hears of an admission before the refusals it makes stale are
// dropped (a client told "admitted" may send its next request at once).
func (b *batcher) written(g *group) {
	s := b.s
	b.settled = append(b.settled, g)
	b.cacheGroup(g, g.finals)
	// An op answered already (its deadline passed) was written all the
	// same: what it made laxer is dropped too.
	b.publishLaxer(g)
	for _, op := range g.ops {
		switch {
		case op.quantity < 0, op.err != nil:
			// Published above, or nothing to remember.
		case op.d.Limited:
			// A refusal makes no key laxer; the deny cache
			// remembers the ones it can answer, once this
			// instance hears of what makes keys laxer (its
			// invalidations' subscription has taken effect).
			if !op.answered && op.denyable() && !s.opts.NoDenyCache && s.isSubscribed.Load() {
				s.deny.add(op, b.denyEpoch)
			}
		default:
			// An admission under another window of the same
			// family can make the key laxer for the rule a
			// refusal was remembered under (it starts a new
			// count, or drops older requests). The round's
			// admissions drop theirs together, in
			// answerSettled: one lock.
			b.admitted = append(b.admitted, op.keys...)
		}
	}
}

// publishLaxer publishes the keys that g's write makes laxer, or may have
// made laxer when its reply was lost, so that no instance goes on refusing
// them from a remembered state: a refund's (one past the key's state
// deletes it, with an error), and every key the write deletes (a CL
// increment that overflows deletes its key, with an error, as redis-cell
// does).
func (b *batcher) publishLaxer(g *group) {
	var keys []string
	for _, op := range g.ops {
		if op.quantity < 0 {
			keys = append(keys, op.keys...)
		}
	}
	for i := range g.cas {
		if g.cas[i].write == writeDel {
			keys = append(keys, g.cas[i].key)
		}
	}
	if len(keys) > 0 {
		b.s.invalidate(keys)
	}
}

// answerSettled drops the remembered refusals of the round's admissions,
// then answers the ops of the groups written (b.settled).
func (b *batcher) answerSettled() {
	b.dropAdmitted()
	for i, g := range b.settled {
		for _, op := range g.ops {
			op.finish(op.d, op.err) // nothing if answered already
		}
		b.settled[i] = nil
	}
	b.settled = b.settled[:0]
}

// dropAdmitted drops the remembered refusals of the round's admissions.
func (b *batcher) dropAdmitted() {
	s := b.s
	if len(b.admitted) > 0 {
		// Dropping a remembered refusal is always safe: at worst one
		// made in this round too costs its next request a round trip.
		s.deny.drop(b.admitted, false)
		clear(b.admitted)
		b.admitted = b.admitted[:0]
	}
}

// tally returns how many ops the round's replies decide (those of the
// groups written). It also reads, first, the value cache entry of every
// single-key group, and the ops of the groups written, which the round
// trip may have let leave this core's cache (the connections' goroutines
// and the store run meanwhile): their cache misses overlap, instead of
// coming one after the other as apply answers the ops.
func (b *batcher) tally(callGroups [][]*group, replies []casReply, errs []error) int {
	n := 0
	var touched uint64
	for c, groups := range callGroups {
		if errs[c] != nil {
			continue
		}
		for gi, g := range groups {
			if g.slot >= 0 {
				touched += b.cache.slots[g.slot].hash
			}
			if replies[c].conflicted(gi) != nil {
				continue
			}
			for _, op := range g.ops {
				if !op.answered {
					n++
				}
			}
		}
	}
	b.touched += touched
	return n
}

// cacheGroup remembers the values of g's keys.
func (b *batcher) cacheGroup(g *group, vals []storeValue) {
	if g.slot >= 0 {
		b.cache.slots[g.slot].val = vals[0]
		return
	}
	for i, k := range g.keys {
		b.cache.set(k, vals[i])
	}
}

// foreignRuleError is the error of a THROTTLE.ALL some of whose keys hold
// another application's value (wrong[j]): the first rule in order that
// fails, as the engine judges them (the key's family, then a negative
// quantity), so that the reply names the same rule as in memory.
func foreignRuleError(op *sharedOp, at int64, recs []engine.Record, wrong []bool) error {
	// The engine decides the rules in order: an error of a rule before the
	// first foreign key comes first (a refund past a CL key's state).
	if first := slices.Index(wrong, true); first > 0 {
		prefix := slices.Clone(recs[:first])
		var err error
		if op.quantities != nil {
			_, err = engine.DecideEach(at, op.rules[:first], prefix, op.quantities[:first], make([]engine.Decision, first))
		} else {
			_, err = engine.Decide(at, op.op, op.rules[:first], prefix, op.quantity)
		}
		if err != nil {
			return err
		}
	}
	for j, r := range op.rules {
		live := recs[j].Family != engine.FamilyNone && !recs[j].Deleted
		if wrong[j] || live && recs[j].Family != r.Family {
			return &engine.RuleWrongTypeError{Rule: j}
		}
		if op.quantity < 0 && r.Family != engine.FamilyCL { // a ThrottleAllEach has none
			return engine.ErrNegativeQuantity
		}
	}
	return engine.ErrWrongType
}
