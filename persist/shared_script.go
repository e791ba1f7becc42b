package persist

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// casSource is shared mode's only script: a compare-and-set of groups of
// keys, with the store's time. It does no arithmetic on limits: the
// decisions are made in Go, and the script only checks that each key
// still holds the value they were made on.
//
// KEYS are the keys of every group, group after group. ARGV[1] is their
// codes, two letters a key (appendCasCode): the kind expected ("a" absent, "v"
// a string value, "t" a key of another type; upper case for the last key
// of its group) and what to write ("k" keep, "s" set, "d" delete). The
// values are, key after key, the expected value if the kind is "v", and
// the new value and its expiry (PXAT, ms since the epoch) if the write is
// "s". They are the other arguments, one each; or, when every one of them
// is a decimal number (CL keys, the common case) and the codes end with
// "j", ARGV[2] is all of them as one JSON array of strings, which the
// store reads in one cjson.decode instead of parsing an argument per
// value, and which go-redis writes as one argument instead of three a
// key.
//
// Every key is read at once, with one MGET per 1,000 keys (Lua's unpack
// takes about 8,000 at most, and a THROTTLE.ALL's group may be larger),
// which gives a string's value and false for a key that is absent or of
// another type. A value expected
// is then one comparison. A key expected absent and false is confirmed
// absent by the write itself (SET NX) when it is its group's only key and
// is set, and by EXISTS otherwise; a key expected of another type is read
// again with GET under pcall (WRONGTYPE's error: a table in Redis, nil in
// miniredis). So a group of one key costs one command besides its share
// of the MGET, and nothing is built per key unless its group conflicted.
// A group of one key expected to hold a value, or new and set, the
// common cases, has a path of its own that reads its codes once.
//
// The reply is the store's TIME (seconds, microseconds) followed, for each
// group that conflicted (a key did not hold what was expected: nothing of
// the group is written), by its number (from 1) and the current state of
// each of its keys (kind, value, PTTL). The other groups were written.
const casSource = `
local byte = string.byte
local codes = ARGV[1]
local nkeys = #KEYS
local args, a = ARGV, 2
if byte(codes, 2 * nkeys + 1) == 106 then
  args, a = cjson.decode(ARGV[2]), 1
end
local t = redis.call('TIME')
local out = {t[1], t[2]}
local nout = 2
local group = 0
local vals
if nkeys <= 1000 then
  vals = redis.call('MGET', unpack(KEYS))
else
  vals = {}
  for i = 1, nkeys, 1000 do
    local got = redis.call('MGET', unpack(KEYS, i, math.min(i + 999, nkeys)))
    for j = 1, #got do vals[i + j - 1] = got[j] end
  end
end
local k = 1
-- bytes: a 97, v 118, t 116 (A 65, V 86, T 84: last of a group); k 107, s 115, d 100
local function kind(i)
  local e = byte(codes, 2 * i - 1)
  if e < 96 then return e + 32 end
  return e
end
local function current(k, last)
  local r = {}
  for i = k, last do
    local v = redis.pcall('GET', KEYS[i])
    if v == false then
      r[#r + 1] = 'a'
      r[#r + 1] = ''
    elseif type(v) == 'string' then
      r[#r + 1] = 'v'
      r[#r + 1] = v
    else
      r[#r + 1] = 't'
      r[#r + 1] = ''
    end
    r[#r + 1] = redis.call('PTTL', KEYS[i])
  end
  return r
end
-- conflict records group g's keys' current states
local function conflict(g, k, last)
  out[nout + 1] = g
  out[nout + 2] = current(k, last)
  nout = nout + 2
end
while k <= nkeys do
  local e, w = byte(codes, 2 * k - 1), byte(codes, 2 * k)
  group = group + 1
  if e == 86 then
    -- A group of one key expected to hold a value: the common case.
    local first = a
    a = a + 1
    if w == 115 then a = a + 2 end
    if vals[k] ~= args[first] then
      conflict(group, k, k)
    elseif w == 115 then
      -- GET: the old value, which MGET read already, comes back as that
      -- string, where a status reply would be a table built per key.
      redis.call('SET', KEYS[k], args[first + 1], 'PXAT', args[first + 2], 'GET')
    elseif w == 100 then
      redis.call('DEL', KEYS[k])
    end
    k = k + 1
  elseif e == 65 and w == 115 then
    -- A group of one new key, confirmed absent by its write.
    if vals[k] ~= false or not redis.call('SET', KEYS[k], args[a], 'PXAT', args[a + 1], 'NX') then
      conflict(group, k, k)
    end
    a = a + 2
    k = k + 1
  else
    -- A group of several keys, or of one key expected absent and not
    -- set, or of another type.
    local last = k
    while byte(codes, 2 * last - 1) > 96 do last = last + 1 end
    local first = a
    local ok = true
    for i = k, last do
      local e, w = kind(i), byte(codes, 2 * i)
      if ok then
        local v = vals[i]
        if e == 118 then
          ok = v == args[a]
        elseif v ~= false then
          ok = false
        elseif e == 97 then
          ok = redis.call('EXISTS', KEYS[i]) == 0
        else
          local g = redis.pcall('GET', KEYS[i])
          ok = g ~= false and type(g) ~= 'string'
        end
      end
      if e == 118 then a = a + 1 end
      if w == 115 then a = a + 2 end
    end
    if ok then
      a = first
      for i = k, last do
        local e, w = kind(i), byte(codes, 2 * i)
        if e == 118 then a = a + 1 end
        if w == 115 then
          redis.call('SET', KEYS[i], args[a], 'PXAT', args[a + 1])
          a = a + 2
        elseif w == 100 then
          redis.call('DEL', KEYS[i])
        end
      end
    else
      conflict(group, k, last)
    end
    k = last + 1
  end
end
return out
`

// casScript is casSource with its SHA1, for EVALSHA.
var casScript = redis.NewScript(casSource)

// valueKind is the kind of a key's value, as the script names it.
type valueKind byte

// Kinds of a key's value.
const (
	kindAbsent  valueKind = 'a'
	kindValue   valueKind = 'v'
	kindForeign valueKind = 't' // a key of another Redis type
)

// valid reports whether k is one of the kinds.
func (k valueKind) valid() bool { return k == kindAbsent || k == kindValue || k == kindForeign }

// casWrite is what a compare-and-set writes to a key, as the script names
// it.
type casWrite byte

// Writes.
const (
	writeKeep casWrite = 'k'
	writeSet  casWrite = 's'
	writeDel  casWrite = 'd'
)

// valid reports whether w is one of the writes.
func (w casWrite) valid() bool { return w == writeKeep || w == writeSet || w == writeDel }

// storeValue is a key's value in the store: absent, a string, or a key of
// another type.
type storeValue struct {
	val string
	// tat, when num, is the value instead of val: a CL key's TAT that this
	// instance wrote, whose value is its decimal (as strconv.FormatUint),
	// kept as a number so that no string is made per decision and the
	// script's argument is written from it.
	tat uint64
	// expireAtMs is when the key expires (PXAT); for a value read back,
	// from the PTTL and the store's TIME; maxExpire when it has none.
	expireAtMs int64
	kind       valueKind
	num        bool
	// unseen: the key is not in the value cache, so its kind (absent) is
	// a guess, not what the store last said or this instance last wrote.
	unseen bool
}

// unseenValue is what the value cache gives for a key it does not hold.
func unseenValue() storeValue { return storeValue{kind: kindAbsent, unseen: true} }

// maxExpire is the expiry of a key that has none.
const maxExpire = 1<<63 - 1

// casKey is one key's compare-and-set.
type casKey struct {
	key      string // with the prefix
	expected storeValue
	write    casWrite
	newVal   storeValue
}

// casCall is one EVALSHA: some groups of one hash slot.
type casCall struct {
	// keys and args are the script's KEYS and ARGV, as go-redis writes
	// them: pointers into the round's casKeys (*string, *int64), which
	// box without an allocation, but for the first key, a string that
	// go-redis reads to find a cluster's slot.
	keys []any
	args []any
	// codes is ARGV[1], two bytes a key (appendCasCode).
	codes []byte
	// groups are the sizes of the call's groups, in order.
	groups []int
	// argv is the room of the command's arguments, and json and jsonArg
	// the room of ARGV[2] when the values are sent as JSON (jsonArg a
	// view of json's bytes, which go-redis writes without a copy).
	argv    []any
	json    []byte
	jsonArg string
}

// maxCallKeys is about the most keys one script call checks: a round's
// groups are split into calls of at most this many keys (a group is never
// split), all sent in one pipeline, so that one call does not hold the
// shared store, for every instance using it, for long.
const maxCallKeys = 1000

// reset empties the call for reuse.
func (c *casCall) reset() {
	clear(c.keys)
	clear(c.args)
	c.keys, c.args, c.codes, c.groups = c.keys[:0], c.args[:0], c.codes[:0], c.groups[:0]
}

// add appends one group of keys. The call points into group until it is
// sent.
func (c *casCall) add(group []casKey) {
	for i := range group {
		k := &group[i]
		if len(c.keys) == 0 {
			c.keys = append(c.keys, k.key)
		} else {
			c.keys = append(c.keys, &k.key)
		}
		c.codes = appendCasCode(c.codes, k.expected.kind, k.write, i == len(group)-1)
		if k.expected.kind == kindValue {
			c.args = append(c.args, k.expected.arg())
		}
		if k.write == writeSet {
			c.args = append(c.args, k.newVal.arg(), &k.newVal.expireAtMs)
		}
	}
	c.groups = append(c.groups, len(group))
}

// command is the call as an EVALSHA (or, with the script's source, an
// EVAL) for a pipeline.
func (c *casCall) command(ctx context.Context, name, script string) *redis.Cmd {
	clear(c.argv)
	argv := append(c.argv[:0], name, script, len(c.keys))
	argv = append(argv, c.keys...)
	if c.appendJSON() {
		argv = append(argv, string(append(c.codes, 'j')), &c.jsonArg)
	} else {
		argv = append(argv, string(c.codes))
		argv = append(argv, c.args...)
	}
	c.argv = argv
	cmd := redis.NewCmd(ctx, argv...)
	cmd.SetFirstKeyPos(3)
	return cmd
}

// appendJSON writes the call's values to json as a JSON array of strings
// and reports whether it could: every value is a decimal number (a TAT, an
// expiry, or a string of digits), so that no value needs escaping and the
// store reads each exactly as it would read the argument.
func (c *casCall) appendJSON() bool {
	if len(c.args) == 0 {
		return false
	}
	b := append(c.json[:0], '[')
	for i, a := range c.args {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		switch v := a.(type) {
		case *uint64:
			b = strconv.AppendUint(b, *v, 10)
		case *int64:
			b = strconv.AppendInt(b, *v, 10)
		case *string:
			if !isDigits(*v) {
				c.json = b
				return false
			}
			b = append(b, *v...)
		default:
			panic(fmt.Sprintf("persist: a script argument of type %T", a))
		}
		b = append(b, '"')
	}
	b = append(b, ']')
	c.json = b
	c.jsonArg = unsafe.String(unsafe.SliceData(b), len(b))
	return true
}

// isDigits reports whether s is only decimal digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// arg is a value as the script's argument, pointing into v: its string,
// or its TAT, which go-redis writes in decimal.
func (v *storeValue) arg() any {
	if v.num {
		return &v.tat
	}
	return &v.val
}

// appendCasCode appends a key's code in the script's ARGV[1]: the kind
// expected, upper case for the last key of its group, and the write.
func appendCasCode(codes []byte, kind valueKind, write casWrite, last bool) []byte {
	if !kind.valid() {
		panic(fmt.Sprintf("persist: bad expected kind %q", kind))
	}
	if !write.valid() {
		panic(fmt.Sprintf("persist: bad write %q", write))
	}
	k := byte(kind)
	if last {
		k -= 'a' - 'A'
	}
	return append(codes, k, byte(write))
}

// casReply is a script's reply: the store's time and, for each group, nil
// when it was written or the current values of its keys (current itself
// is nil when every group was written, the common case).
type casReply struct {
	timeNs  int64
	current [][]storeValue
}

// conflicted returns the current values of group g's keys, nil when the
// group was written.
func (r *casReply) conflicted(g int) []storeValue {
	if r.current == nil {
		return nil
	}
	return r.current[g]
}

// runCAS sends calls in one pipeline (in a cluster, go-redis sends each to
// its slot's node, in parallel) with EVALSHA, and again with EVAL those
// that met NOSCRIPT (a flushed script cache, a failover). It returns one
// reply or error per call.
func runCAS(ctx context.Context, client redis.UniversalClient, calls []*casCall, natives []*nativeCmd, cluster bool) ([]casReply, []error, int64, error) {
	replies, errs := make([]casReply, len(calls)), make([]error, len(calls))
	cmds := make([]*redis.Cmd, len(calls))
	pipe := client.Pipeline()
	for i, c := range calls {
		cmds[i] = c.command(ctx, "evalsha", casScript.Hash())
		_ = pipe.Process(ctx, cmds[i])
	}
	var timeCmd *redis.TimeCmd
	if len(natives) > 0 {
		timeCmd = redis.NewTimeCmd(ctx, "time")
		_ = pipe.Process(ctx, timeCmd)
		for _, n := range natives {
			_ = pipe.Process(ctx, n.command(ctx, cluster))
		}
	}
	pipe.Exec(ctx) // each command's error is looked at
	var timeNs int64
	var timeErr error
	if timeCmd != nil {
		t, err := timeCmd.Result()
		timeNs, timeErr = t.UnixNano(), err
	}
	var again []int
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		pipe = client.Pipeline()
		for _, i := range again {
			cmds[i] = calls[i].command(ctx, "eval", casSource)
			_ = pipe.Process(ctx, cmds[i])
		}
		pipe.Exec(ctx)
	}
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			errs[i] = err
			continue
		}
		replies[i], errs[i] = parseCAS(cmd.Val(), calls[i].groups)
	}
	return replies, errs, timeNs, timeErr
}

// parseCAS reads the script's reply.
func parseCAS(v any, groups []int) (casReply, error) {
	var r casReply
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 || len(arr)%2 != 0 {
		return r, fmt.Errorf("cas script: unexpected reply %T of %d", v, len(arr))
	}
	sec, err1 := replyInt(arr[0])
	usec, err2 := replyInt(arr[1])
	if err := errors.Join(err1, err2); err != nil {
		return r, fmt.Errorf("cas script: TIME: %w", err)
	}
	r.timeNs = sec*1e9 + usec*1e3
	if len(arr) > 2 {
		r.current = make([][]storeValue, len(groups))
	}
	for i := 2; i < len(arr); i += 2 {
		g64, err := replyInt(arr[i])
		if err != nil || g64 < 1 || g64 > int64(len(groups)) || i+1 == len(arr) || r.current[g64-1] != nil {
			return r, fmt.Errorf("cas script: unexpected group %v", arr[i])
		}
		g, n := int(g64-1), groups[g64-1]
		x, ok := arr[i+1].([]any)
		if !ok || len(x) != 3*n {
			return r, fmt.Errorf("cas script: group %d: %T of %d values for %d keys", g, arr[i+1], len(x), n)
		}
		cur := make([]storeValue, n)
		for j := range cur {
			name, _ := x[3*j].(string)
			val, _ := x[3*j+1].(string)
			pttl, err := replyInt(x[3*j+2])
			if err != nil {
				return r, fmt.Errorf("cas script: PTTL: %w", err)
			}
			kind := kindOf(name)
			if kind == 0 {
				return r, fmt.Errorf("cas script: group %d: kind %q", g, name)
			}
			cur[j] = storeValue{kind: kind, val: val, expireAtMs: maxExpire}
			if pttl >= 0 {
				cur[j].expireAtMs = r.timeNs/1e6 + pttl
			}
			if kind != kindValue {
				cur[j].val = ""
			}
		}
		r.current[g] = cur
	}
	return r, nil
}

// kindOf is the kind the script names name, 0 for none.
func kindOf(name string) valueKind {
	if len(name) == 1 && valueKind(name[0]).valid() {
		return valueKind(name[0])
	}
	return 0
}

// replyInt reads an integer that Redis may give as an integer or a string
// (TIME's fields are strings).
func replyInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(strings.TrimSpace(x), 10, 64)
	}
	return 0, fmt.Errorf("not an integer: %T", v)
}
