package persist

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	"github.com/cellserver/cellserver/engine"
)

// formatVersion is the first byte of every value in cellserver's own format
// (the package doc describes it). It is not an ASCII digit, so such a value
// is never read as redis-cell's decimal TAT, nor a TAT as one of these.
const formatVersion = 0x01

// Family tags, between the version byte and the payload; each ends in ':'
// so that no tag is a prefix of another.
const (
	tagSW  = "sw:"
	tagSWC = "swc:"
	tagFW  = "fw:"
	tagLB  = "lb:"
)

// errMalformed marks a value in cellserver's format that does not decode.
var errMalformed = errors.New("malformed value")

// encodeState appends the value that stores rec's state in cellserver's own
// format to buf. It reports false for a family that has no such format (CL
// keys are stored in redis-cell's) and for a malformed SW record.
func encodeState(buf []byte, rec *engine.Record) ([]byte, bool) {
	switch rec.Family {
	case engine.FamilyFW:
		buf = append(append(buf, formatVersion), tagFW...)
		buf = binary.AppendVarint(buf, rec.Start)
		return binary.AppendUvarint(buf, uint64(rec.Cur)), true
	case engine.FamilySWC:
		buf = append(append(buf, formatVersion), tagSWC...)
		buf = binary.AppendVarint(buf, rec.Start)
		buf = binary.AppendUvarint(buf, uint64(rec.Cur))
		return binary.AppendUvarint(buf, uint64(rec.Prev)), true
	case engine.FamilyLB:
		buf = append(append(buf, formatVersion), tagLB...)
		return binary.AppendVarint(buf, rec.Tail), true
	case engine.FamilySW:
		if len(rec.Log) == 0 || len(rec.Log) != len(rec.Quantities) {
			return buf, false
		}
		buf = append(append(buf, formatVersion), tagSW...)
		buf = binary.AppendUvarint(buf, uint64(len(rec.Log)))
		prev := int64(0)
		for i, at := range rec.Log {
			// Wrapping subtraction: decoding adds back with the same wrap.
			buf = binary.AppendVarint(buf, at-prev)
			buf = binary.AppendUvarint(buf, uint64(rec.Quantities[i]))
			prev = at
		}
		return buf, true
	}
	return buf, false
}

// parseValue reads a stored value into rec's family and state: a state in
// cellserver's own format (decodeState), or redis-cell's decimal TAT, a CL
// key. It reports false for anything else (another application's value, a
// malformed state); rec is then not to be used.
func parseValue(val string, rec *engine.Record) bool {
	if len(val) > 0 && val[0] == formatVersion {
		return decodeState(val, rec) == nil
	}
	tat, err := strconv.ParseUint(val, 10, 64)
	if err != nil {
		return false
	}
	rec.Family, rec.TAT = engine.FamilyCL, tat
	return true
}

// decodeState reads a value in cellserver's own format (its first byte is
// formatVersion) into rec's family and state. It returns errMalformed for
// anything else: another version, an unknown tag, a truncated or
// overlong payload, a count out of range. It never allocates more than the
// value's own length justifies.
func decodeState(val string, rec *engine.Record) error {
	if len(val) == 0 || val[0] != formatVersion {
		return errMalformed
	}
	d := decoder{s: val[1:]}
	switch {
	case d.tag(tagFW):
		rec.Family = engine.FamilyFW
		rec.Start, rec.Cur = d.varint(), d.count()
	case d.tag(tagSWC):
		rec.Family = engine.FamilySWC
		rec.Start, rec.Cur, rec.Prev = d.varint(), d.count(), d.count()
	case d.tag(tagLB):
		rec.Family = engine.FamilyLB
		rec.Tail = d.varint()
	case d.tag(tagSW):
		rec.Family = engine.FamilySW
		n := d.uvarint()
		// Each request takes at least two bytes: the count cannot claim
		// more than the value holds.
		if d.bad || n == 0 || n > uint64(len(d.s))/2 {
			return errMalformed
		}
		rec.Log, rec.Quantities = make([]int64, n), make([]uint32, n)
		at := int64(0)
		for i := range rec.Log {
			at += d.varint()
			rec.Log[i], rec.Quantities[i] = at, d.count()
			if rec.Quantities[i] == 0 {
				d.bad = true
			}
		}
	default:
		return errMalformed
	}
	if d.bad || len(d.s) != 0 {
		return errMalformed
	}
	return nil
}

// decoder reads varints off the front of s; bad records the first failure
// (after which every read gives 0).
type decoder struct {
	s   string
	bad bool
}

// tag consumes t if s starts with it.
func (d *decoder) tag(t string) bool {
	if len(d.s) < len(t) || d.s[:len(t)] != t {
		return false
	}
	d.s = d.s[len(t):]
	return true
}

func (d *decoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	// binary.Uvarint wants bytes; a varint is at most 10 of them.
	var b [binary.MaxVarintLen64]byte
	k := copy(b[:], d.s)
	v, n := binary.Uvarint(b[:k])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.s = d.s[n:]
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1) // zigzag, as binary.Varint
}

// count reads a count that must fit 32 bits.
func (d *decoder) count() uint32 {
	v := d.uvarint()
	if v > math.MaxUint32 {
		d.bad = true
		return 0
	}
	return uint32(v)
}
