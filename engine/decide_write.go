package engine

// This file writes Decide's new states: the keyspace's record and
// storeGCRA, with a Record in place of a shard's entry.

// writeVerdict writes an admitted verdict of rule r to rec, whose state
// was read as st, as Engine.record writes it to the keyspace. A quantity of
// 0 never creates a key and never extends one.
func writeVerdict(rec *Record, st *keyState, r Rule, v *verdict, now, qty int64) {
	switch r.Family {
	case FamilyCL:
		writeGCRA(rec, st.family != FamilyNone, v.step, now/1_000_000)
	case FamilyFW, FamilySWC:
		if qty == 0 {
			return
		}
		c := v.counter
		*rec = Record{Key: rec.Key, Family: r.Family, Start: c.start, Cur: uint32(c.cur),
			ExpireAtMs: expireMs(counterEnd(r, c))}
		if r.Family == FamilySWC {
			rec.Prev = uint32(c.prev) // a fixed window keeps no previous bucket
		}
	case FamilySW:
		writeLog(rec, st, r, v.view, now, qty)
	case FamilyLB:
		if qty == 0 {
			return // a peek reserves nothing
		}
		*rec = Record{Key: rec.Key, Family: FamilyLB, Tail: v.tail, ExpireAtMs: expireMs(v.tail)}
	}
}

// writeGCRA writes a GCRA step to rec as storeGCRA writes it to the
// keyspace: nothing when nothing is stored, a removal when the TAT would
// keep no expiry.
func writeGCRA(rec *Record, exists bool, step gcraStep, nowMs int64) {
	switch {
	case !step.store:
	case step.ttlMillis < 0:
		if exists {
			*rec = Record{Key: rec.Key, Deleted: true}
		}
	default:
		*rec = Record{Key: rec.Key, Family: FamilyCL, TAT: step.tat, ExpireAtMs: nowMs + step.ttlMillis}
	}
}

// writeLog applies an admitted SW verdict to the key's log (st's own copy,
// which it changes) and writes the result to rec: the requests, in new
// slices, with the expiry extended when a request was recorded, or a
// removal when the log ends empty.
func writeLog(rec *Record, st *keyState, r Rule, view swView, now, qty int64) {
	ls, l := st.logs, st.log
	if st.family == FamilyNone {
		if qty == 0 {
			return
		}
		ls, l = newSWLogs(nil, nil)
		view = swView{}
	} else if qty == 0 && view.drop == 0 {
		return // a peek that changes nothing
	}
	ls.apply(l, view, now, qty, r.Window.Limit)
	if l.size == 0 {
		*rec = Record{Key: rec.Key, Deleted: true}
		return
	}
	out := Record{Key: rec.Key, Family: FamilySW, ExpireAtMs: rec.ExpireAtMs,
		Log: make([]int64, l.size), Quantities: make([]uint32, l.size)}
	ring := ls.ring(l)
	for j := range l.size {
		out.Log[j], out.Quantities[j] = l.get(ring, j)
	}
	if qty > 0 {
		// As Engine.commit: now's request, or a later one the expiry covers.
		out.ExpireAtMs = max(out.ExpireAtMs, expireMs(now+r.Window.Window))
	}
	*rec = out
}
