package persist

import (
	"strconv"

	"github.com/cellserver/cellserver/engine"
)

// decodeValue reads a key's value in the store into a record for
// engine.Decide: absent (FamilyNone), a CL key's TAT in redis-cell's format,
// or an SW, SWC, FW or LB state in cellserver's. It reports false for a value
// that is neither (another application's key), or an SW, SWC or FW state
// without an expiry, which gets ErrWrongType.
// A key expired by nowMs reads as absent.
func decodeValue(sv storeValue, key string, nowMs int64) (engine.Record, bool) {
	rec := engine.Record{Key: key}
	switch sv.kind {
	case kindAbsent:
		return rec, true
	case kindForeign:
		return rec, false
	}
	if sv.num {
		rec.Family, rec.TAT = engine.FamilyCL, sv.tat
	} else if !parseValue(sv.val, &rec) {
		return engine.Record{Key: key}, false
	}
	rec.ExpireAtMs = sv.expireAtMs
	switch {
	case rec.ExpireAtMs != maxExpire:
	case rec.Family == engine.FamilyCL:
		// No expiry: redis-cell leaves such a key on some errors. A TAT in
		// the past limits nothing, so the key can go at its TAT (as Load).
		rec.ExpireAtMs = int64(rec.TAT / 1e6)
	default:
		// cellserver always writes its own states with an expiry, and an
		// SW peek would write this one back with none it can give.
		return engine.Record{Key: key}, false
	}
	if nowMs > rec.ExpireAtMs {
		return engine.Record{Key: key}, true
	}
	return rec, true
}

// encodeValue is the store value that holds rec: absent for a deleted or
// absent key, a decimal TAT for a CL key, cellserver's format otherwise.
func encodeValue(rec *engine.Record) storeValue {
	if rec.Deleted || rec.Family == engine.FamilyNone {
		return storeValue{kind: kindAbsent}
	}
	if rec.Family == engine.FamilyCL {
		return storeValue{kind: kindValue, val: strconv.FormatUint(rec.TAT, 10), expireAtMs: rec.ExpireAtMs}
	}
	buf, ok := encodeState(nil, rec)
	if !ok {
		return storeValue{kind: kindAbsent}
	}
	return storeValue{kind: kindValue, val: string(buf), expireAtMs: rec.ExpireAtMs}
}

// newestTime is the latest instant rec's state holds (an SW log's newest
// request, an SWC or FW bucket's start), 0 for none (an LB key's tail is
// a departure to come, not a time the key has seen): a decision on the key
// is made no earlier, so that instances whose clocks differ within the
// bound never record a request out of order or roll a bucket back.
func newestTime(rec *engine.Record) int64 {
	switch rec.Family {
	case engine.FamilySW:
		if n := len(rec.Log); n > 0 {
			return rec.Log[n-1]
		}
	case engine.FamilySWC, engine.FamilyFW:
		return rec.Start
	}
	return 0
}

// initialValue is what a key's record was decoded to, so that only a key
// the decisions changed is written. An absent or CL record is kept as its
// fields (encoding it would allocate a string per key and round); another
// one as its encoding (an SW log's array may be changed in place).
type initialValue struct {
	simple bool // absent or CL: absent, tat and expireAtMs hold it
	absent bool
	tat    uint64
	// expireAtMs is a CL key's expiry.
	expireAtMs int64
	enc        storeValue // when not simple
}

// initialOf notes rec as decoded.
func initialOf(rec *engine.Record) initialValue {
	switch {
	case rec.Deleted || rec.Family == engine.FamilyNone:
		return initialValue{simple: true, absent: true}
	case rec.Family == engine.FamilyCL:
		return initialValue{simple: true, tat: rec.TAT, expireAtMs: rec.ExpireAtMs}
	}
	return initialValue{enc: encodeValue(rec)}
}

// changed returns rec's value and whether it differs from the initial one,
// as encodeValue's results would.
func (iv *initialValue) changed(rec *engine.Record) (storeValue, bool) {
	if !iv.simple {
		v := encodeValue(rec)
		return v, v != iv.enc
	}
	switch {
	case rec.Deleted || rec.Family == engine.FamilyNone:
		return storeValue{kind: kindAbsent}, !iv.absent
	case rec.Family == engine.FamilyCL:
		if !iv.absent && rec.TAT == iv.tat && rec.ExpireAtMs == iv.expireAtMs {
			return storeValue{}, false
		}
		// encodeValue's value, as a number.
		return storeValue{kind: kindValue, tat: rec.TAT, num: true, expireAtMs: rec.ExpireAtMs}, true
	}
	// Another family's state, where the key was absent or a CL key.
	v := encodeValue(rec)
	if iv.absent {
		return v, v.kind != kindAbsent
	}
	return v, true
}
