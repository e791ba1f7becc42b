package engine

// This file holds ThrottleAll's memory reservation: before any rule is
// recorded, the keys the rules leave must fit their shards' budgets
// together, so that a ThrottleAll stays all or nothing under
// Options.MaxMemory.

// reserve makes sure that recording every rule fits the shards' memory
// budgets before any rule is recorded: it pins the rules' existing keys,
// which eviction then passes over, and checks that each shard can hold the
// rules' keys as recording leaves them (new keys, SW logs grown or
// shrunk, keys removed) beside each other; qtyOf(i) is rule i's quantity.
// It returns ErrOutOfMemory, having changed nothing, when a shard cannot
// and the call would add to what the rules' keys there hold: a call that
// adds nothing (a quantity of 0 creates no SW, SWC or FW key) is never
// refused for memory. A rule whose key is the call's only one in its
// shard is held to what its command alone is held to: its key must fit,
// and its log may then grow past the budget. Where no shard has a budget
// nothing is evicted, so nothing needs pinning: it reports whether it
// pinned.
func reserve(vs []verdict, rules []Rule, now int64, qtyOf func(i int) int64) (budgeted bool, err error) {
	for i := range vs {
		budgeted = budgeted || vs[i].s.budget > 0
	}
	if !budgeted {
		return false, nil
	}
	for i := range vs {
		s := vs[i].s
		if s.budget == 0 {
			continue
		}
		held, after, need, keys := int64(0), int64(0), int64(0), 0
		for j := range vs {
			if vs[j].s != s {
				continue
			}
			h, a := vs[j].bytes(rules[j], now, qtyOf(j))
			held, after = held+h, after+a
			if a > 0 {
				keys, need = keys+1, keyCost(rules[j].Family, len(rules[j].Key))
			}
		}
		if keys > 1 {
			need = after
		}
		// A key alone in its shard may grow its log over the budget, as
		// an SW.THROTTLE's may (makeRoomFor): only the key itself must fit.
		if need > s.budget && after > held {
			return true, ErrOutOfMemory
		}
	}
	for k := range vs {
		pin(vs, rules, k, true)
	}
	return true, nil
}

// bytes returns what rule r's key uses now (held) and will use once the
// admitted verdict is recorded with quantity qty (after), as commit records
// it, by the keyspace's estimate (shard.bytesOf).
func (v *verdict) bytes(r Rule, now, qty int64) (held, after int64) {
	s, ent := v.s, v.current(r.Key)
	if ent != nil {
		held = s.bytesOf(ent)
	}
	switch r.Family {
	case FamilyCL:
		switch {
		case !v.step.store:
			return held, held
		case v.step.ttlMillis < 0:
			return held, 0 // storeGCRA drops the key
		}
		return held, keyCost(FamilyCL, len(r.Key))
	case FamilyFW, FamilySWC:
		if qty == 0 {
			return held, held
		}
		return held, keyCost(r.Family, len(r.Key))
	case FamilySW:
		var l *swLog
		var ring []uint64
		view := v.view
		switch {
		case ent != nil && qty == 0 && view.drop == 0:
			return held, held // a peek that changes nothing
		case ent != nil:
			l = s.log(ent)
			ring = s.logs.ring(l)
		case qty == 0:
			return 0, 0 // a peek creates no key
		default:
			l, view = &swLog{}, swView{} // a new key's empty log
		}
		size, words := l.afterApply(ring, view, now, qty, r.Window.Limit)
		if size == 0 {
			return held, 0 // commit removes the key
		}
		return held, keyCost(FamilySW, len(r.Key)) + int64(words)*8
	}
	return held, held
}

// afterApply returns how many requests l, whose ring is ring, holds and
// how long its ring is in words once swLogs.apply(l, v, now, qty, limit)
// has run, without running it, step for step as apply does (grow, rebase,
// shrink), by the same rules (growTo, growCopies, needsRebase, shrinks):
// what a ThrottleAll reserves room for before it records anything. Like
// apply, it reads the ring only where apply grows, re-encodes or shrinks
// it. TestSWLogAfterApply holds the two together.
func (l *swLog) afterApply(ring []uint64, v swView, now, qty, limit int64) (size, words int) {
	size, c, words := l.size-v.drop, l.capacity(), l.n
	n := uint32(0)
	if qty > 0 {
		n = uint32(qty)
		switch {
		case size == c: // grow
			c = growTo(c, size, limit)
			words = c
			if !l.growCopies(now, n) {
				s := l.span(ring, v.drop, now, n)
				words, _, _, _ = ringForm(c, &s)
			}
		case l.needsRebase(now, n):
			s := l.span(ring, v.drop, now, n)
			if _, _, ok := s.compact(); !ok {
				words = wideLen(c)
			}
		}
		size++
	}
	if shrinks(c, size) {
		s := l.span(ring, v.drop, now, n)
		words, _, _, _ = ringForm(c/2, &s)
	}
	return size, words
}

// pin pins rule k's key if it exists, so that recording a later rule's new
// key cannot evict it.
func pin(vs []verdict, rules []Rule, k int, pinned bool) {
	s := vs[k].s
	if slot, _, ok := s.find(rules[k].Key); ok {
		s.entries[slot].setPinned(pinned)
	}
}

// unpin releases the keys reserve and ThrottleAll pinned.
func unpin(vs []verdict, rules []Rule) {
	for k := range vs {
		pin(vs, rules, k, false)
	}
}
