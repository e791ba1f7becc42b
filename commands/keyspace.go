package commands

import (
	"strconv"

	"github.com/cellserver/cellserver/engine"
)

// keyspaceCommands are the generic key commands redis-cell users rely on.
func keyspaceCommands() []*Command {
	return []*Command{
		{Name: "del", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, KeyStep: 1,
			KeySpecFlags: []string{"RM", "delete"}, Group: "generic", Since: "1.0.0",
			Summary: "Deletes one or more keys.", Run: del, Shared: storeDel},
		{Name: "unlink", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: -1, KeyStep: 1,
			KeySpecFlags: []string{"RM", "delete"}, Group: "generic", Since: "4.0.0",
			Summary: "Asynchronously deletes one or more keys.", Run: del, Shared: storeDel},
		{Name: "exists", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: -1, KeyStep: 1,
			KeySpecFlags: []string{"RO"}, Group: "generic", Since: "1.0.0",
			Summary: "Determines whether one or more keys exist.", Run: exists, Shared: storeExists},
		{Name: "type", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, KeyStep: 1,
			KeySpecFlags: []string{"RO"}, Group: "generic", Since: "1.0.0",
			Summary: "Determines the type of value stored at a key.", Run: typeCmd, Shared: storeType},
		{Name: "ttl", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, KeyStep: 1,
			KeySpecFlags: []string{"RO", "access"}, Group: "generic", Since: "1.0.0",
			Summary: "Returns the expiration time in seconds of a key.", Run: ttl, Shared: storeTTL},
		{Name: "pttl", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, KeyStep: 1,
			KeySpecFlags: []string{"RO", "access"}, Group: "generic", Since: "2.6.0",
			Summary: "Returns the expiration time in milliseconds of a key.", Run: pttl, Shared: storePTTL},
		{Name: "get", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, KeyStep: 1,
			KeySpecFlags: []string{"RO", "access"}, Group: "string", Since: "1.0.0",
			Summary: "Returns the string value of a key; for a CL key, its TAT in nanoseconds.", Run: get, Shared: storeGet},
		{Name: "dbsize", Arity: 1, Flags: FlagReadonly | FlagFast | FlagAllKeys, Group: "server", Since: "1.0.0",
			Summary: "Returns the number of keys in the database.", Run: dbsize, Shared: storeDBSize},
		{Name: "keys", Arity: 2, Flags: FlagReadonly | FlagAllKeys, Group: "generic", Since: "1.0.0",
			Summary: "Returns all key names that match a pattern.", Run: keys, Shared: storeKeys},
		{Name: "scan", Arity: -2, Flags: FlagReadonly | FlagAllKeys, Group: "generic", Since: "2.8.0",
			Summary: "Iterates over the key names in the database.", Run: scan, Shared: storeScan},
		{Name: "flushdb", Arity: -1, Flags: FlagWrite | FlagAllKeys, Group: "server", Since: "1.0.0",
			Summary: "Removes all keys from the current database.", Run: flush, Shared: storeFlush},
		{Name: "flushall", Arity: -1, Flags: FlagWrite | FlagAllKeys, Group: "server", Since: "1.0.0",
			Summary: "Removes all keys from all databases.", Run: flush, Shared: storeFlush},
	}
}

// del is DEL and UNLINK: both free a key at once here.
func del(cx *Context, w Writer, args [][]byte) {
	n := int64(0)
	for _, k := range args[1:] {
		if cx.Engine().Delete(cx.Tx, k) {
			n++
		}
	}
	w.WriteInt(n)
}

func exists(cx *Context, w Writer, args [][]byte) {
	n := int64(0)
	for _, k := range args[1:] {
		if _, ok := cx.Engine().Get(cx.Tx, k); ok {
			n++
		}
	}
	w.WriteInt(n)
}

func typeCmd(cx *Context, w Writer, args [][]byte) {
	v, _ := cx.Engine().Get(cx.Tx, args[1])
	w.WriteString(v.Family.TypeName())
}

func pttl(cx *Context, w Writer, args [][]byte) {
	w.WriteInt(cx.Engine().PTTL(cx.Tx, args[1]))
}

// ttl rounds the remaining milliseconds to the nearest second, as Redis does.
func ttl(cx *Context, w Writer, args [][]byte) {
	w.WriteInt(ttlOf(cx.Engine().PTTL(cx.Tx, args[1])))
}

// ttlOf is TTL's answer for PTTL's ms: the seconds rounded to the nearest,
// or -1 and -2 as they are.
func ttlOf(ms int64) int64 {
	if ms < 0 {
		return ms
	}
	return (ms + 500) / 1000
}

// get returns a CL key's TAT as redis-cell stores it: decimal nanoseconds.
func get(cx *Context, w Writer, args [][]byte) {
	v, ok := cx.Engine().Get(cx.Tx, args[1])
	writeGet(w, v, ok)
}

// writeGet writes GET's reply for a key's value v (ok false: no key).
func writeGet(w Writer, v engine.Value, ok bool) {
	switch {
	case !ok:
		w.WriteNull()
	case v.Family != engine.FamilyCL:
		w.WriteError(msgWrongType)
	default:
		var buf [20]byte
		w.WriteBulk(strconv.AppendUint(buf[:0], v.TAT, 10))
	}
}

func dbsize(cx *Context, w Writer, args [][]byte) {
	w.WriteInt(int64(cx.Engine().Len(cx.Tx)))
}

// flush is FLUSHDB and FLUSHALL; there is one database. ASYNC and SYNC are
// accepted and both free the keys at once.
func flush(cx *Context, w Writer, args [][]byte) {
	if !flushArgsOK(args) {
		w.WriteError(msgSyntax)
		return
	}
	cx.Engine().Flush(cx.Tx)
	w.WriteString("OK")
}

// flushArgsOK reports whether FLUSHDB's or FLUSHALL's arguments are
// valid: none, ASYNC or SYNC.
func flushArgsOK(args [][]byte) bool {
	return len(args) == 1 || (len(args) == 2 && (equalFold(args[1], "async") || equalFold(args[1], "sync")))
}

// keys lists the live keys matching a glob pattern.
func keys(cx *Context, w Writer, args [][]byte) {
	pattern := args[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	var out []string
	e := cx.Engine()
	for cursor := uint64(0); ; {
		cursor = e.Scan(cx.Tx, cursor, e.Shards()<<20, func(k string, _ engine.Family) {
			if all || globMatch(pattern, []byte(k)) {
				out = append(out, k)
			}
		})
		if cursor == 0 {
			break
		}
	}
	writeKeys(w, out)
}

// writeKeys writes key names as an array of bulk strings.
func writeKeys(w Writer, keys []string) {
	w.WriteArray(len(keys))
	for _, k := range keys {
		w.WriteBulkString(k)
	}
}

// scan is SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor
// walks shards: every key present for the whole iteration is returned
// exactly once, and COUNT is the least number of keys looked at per call.
func scan(cx *Context, w Writer, args [][]byte) {
	// >> Args
	a, msg := parseScanArgs(args)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	matchAll := a.pattern == nil || (len(a.pattern) == 1 && a.pattern[0] == '*')

	// >> Operation
	var out []string
	cursor := a.cursor
	if cursor < uint64(cx.Engine().Shards()) {
		limit := int(min(a.count, int64(1<<30)))
		cursor = cx.Engine().Scan(cx.Tx, cursor, limit, func(k string, f engine.Family) {
			if a.typeName != nil && !equalFold(a.typeName, f.TypeName()) {
				return
			}
			if matchAll || globMatch(a.pattern, []byte(k)) {
				out = append(out, k)
			}
		})
	} else {
		cursor = 0
	}

	// >> Response
	writeScanReply(w, cursor, out)
}

// scanArgs are SCAN's arguments.
type scanArgs struct {
	cursor            uint64
	count             int64
	pattern, typeName []byte // nil when not given
}

// parseScanArgs reads SCAN cursor [MATCH pattern] [COUNT count] [TYPE
// type]; it returns the error text when they are not valid.
func parseScanArgs(args [][]byte) (scanArgs, string) {
	a := scanArgs{count: 10}
	var ok bool
	if a.cursor, ok = parseScanCursor(args[1]); !ok {
		return a, msgInvalidCursor
	}
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, msgSyntax
		}
		switch opt, val := args[i], args[i+1]; {
		case equalFold(opt, "match"):
			a.pattern = val
		case equalFold(opt, "count"):
			n, ok := ParseInt(val)
			if !ok {
				return a, msgNotInteger
			}
			if n < 1 {
				return a, msgSyntax
			}
			a.count = n
		case equalFold(opt, "type"):
			a.typeName = val
		default:
			return a, msgSyntax
		}
	}
	return a, ""
}

// writeScanReply writes SCAN's reply: the next cursor and the keys.
func writeScanReply(w Writer, cursor uint64, keys []string) {
	w.WriteArray(2)
	w.WriteBulkString(strconv.FormatUint(cursor, 10))
	writeKeys(w, keys)
}

// parseScanCursor reads a SCAN cursor as Redis does, with C's strtoul: an
// optional sign, then decimal digits (none at all reads as 0, so "" is 0);
// a minus sign negates modulo 2^64; leading space or trailing bytes are
// invalid, and so is a value beyond 64 bits.
func parseScanCursor(b []byte) (uint64, bool) {
	b = cString(b) // strtoul stops at a NUL, as at the string's end
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, false // a lone sign: strtoul reads nothing
		}
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}
