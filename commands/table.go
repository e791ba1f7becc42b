package commands

import (
	"fmt"
	"strings"
)

// Flag describes how a command behaves; COMMAND INFO reports the names.
type Flag uint16

const (
	// FlagWrite marks a command that may change the keyspace.
	FlagWrite Flag = 1 << iota
	// FlagReadonly marks a command that only reads the keyspace.
	FlagReadonly
	// FlagFast marks a command that runs in constant or log time.
	FlagFast
	// FlagNoScript marks a command Lua scripts may not call.
	FlagNoScript
	// FlagLoading marks a command allowed while the dataset loads.
	FlagLoading
	// FlagStale marks a command allowed on a stale replica.
	FlagStale
	// FlagNoMulti marks a command that is run at once, not queued, inside MULTI.
	FlagNoMulti
	// FlagAllowBusy marks a command allowed while the server is busy.
	FlagAllowBusy
	// FlagNoAuth marks a command allowed before authentication.
	FlagNoAuth
	// FlagModule marks a command that Redis serves from a module (CL.THROTTLE).
	FlagModule
	// FlagAllKeys marks a command that reads or changes the whole keyspace;
	// inside EXEC it locks every shard.
	FlagAllKeys
	// FlagOverlap marks a command that may run while an earlier command of
	// the same connection is paused (Pauser): it changes no connection
	// state that the paused command could depend on, and its reply waits
	// in line behind the paused one. Without it, a connection runs nothing
	// more until its paused commands have completed.
	FlagOverlap
)

// flagNames lists the flags in the order COMMAND INFO prints them.
var flagNames = []struct {
	flag Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagNoScript, "noscript"},
	{FlagLoading, "loading"}, {FlagStale, "stale"}, {FlagNoMulti, "no_multi"},
	{FlagAllowBusy, "allow_busy"}, {FlagFast, "fast"}, {FlagNoAuth, "no_auth"},
	{FlagModule, "module"},
}

// Handler runs one command. args[0] is the command name as the client sent
// it; the dispatcher has already checked the arity. It runs on the
// connection's driver, perhaps an event loop that other clients wait on, so
// it never waits itself: a command that must wait for I/O pauses its reply
// (Pauser, await) or runs off the loop (Commands.offload).
type Handler func(cx *Context, w Writer, args [][]byte)

// Command is one row of the command table.
type Command struct {
	// Name is the lower-case command name ("cl.throttle").
	Name string
	// Arity follows Redis: N means exactly N arguments, -N at least N; the
	// name counts.
	Arity int
	// Flags say how the command behaves.
	Flags Flag
	// FirstKey, LastKey and KeyStep give the key positions as Redis does
	// (LastKey -1: up to the last argument); all zero for no keys.
	FirstKey, LastKey, KeyStep int
	// Keys, when set, finds the key arguments of a command whose keys are not
	// at fixed positions (THROTTLE.ALL); FirstKey, LastKey and KeyStep are
	// then 0, and COMMAND INFO reports the command as movablekeys. It must
	// return every key the handler will touch for args the handler accepts.
	Keys func(args [][]byte) [][]byte
	// KeySpecFlags are the key-spec flags COMMAND INFO reports ("RW", "access", ...).
	KeySpecFlags []string
	// Group and Summary are what COMMAND DOCS reports.
	Group, Summary, Since string
	// Module names the module that serves the command in Redis, if any.
	Module string
	// Sub lists subcommands (CLIENT, CONFIG, COMMAND), for COMMAND INFO and DOCS.
	Sub []*Command
	// Run is the handler.
	Run Handler
	// Shared, when set, is the handler in shared mode (Options.Store), for a
	// command whose work there differs from Run's: the keyspace commands,
	// which act on the store.
	Shared Handler
	// ACLCategories lists the command's ACL categories ("@fast", ...).
	ACLCategories []string
}

// table is the command table, built once per Commands value.
type table struct {
	byName map[string]*Command
	sorted []*Command
}

// newTable indexes cmds by name. Two commands with one name is a programming
// error and panics at start-up.
func newTable(cmds []*Command) *table {
	t := &table{byName: make(map[string]*Command, len(cmds))}
	for _, c := range cmds {
		if c.Name != strings.ToLower(c.Name) {
			panic(fmt.Sprintf("commands: name %q is not lower case", c.Name))
		}
		if _, dup := t.byName[c.Name]; dup {
			panic(fmt.Sprintf("commands: %q registered twice", c.Name))
		}
		t.byName[c.Name] = c
		t.sorted = append(t.sorted, c)
	}
	return t
}

// lookup finds a command by the name the client sent, in any case, without
// allocating for names up to 32 bytes.
func (t *table) lookup(name []byte) *Command {
	var buf [32]byte
	if len(name) > len(buf) {
		return t.byName[strings.ToLower(string(name))]
	}
	for i, b := range name {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		buf[i] = b
	}
	return t.byName[string(buf[:len(name)])]
}

// arityOK reports whether n arguments (name included) satisfy arity.
func arityOK(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}

// keys returns the key arguments of args by the command's key positions,
// or by its Keys function.
func (c *Command) keys(args [][]byte) [][]byte {
	if c.Keys != nil {
		return c.Keys(args)
	}
	if c.FirstKey <= 0 || c.FirstKey >= len(args) {
		return nil
	}
	last := c.LastKey
	if last < 0 {
		last = len(args) + last
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	step := c.KeyStep
	if step <= 0 {
		step = 1
	}
	var keys [][]byte
	for i := c.FirstKey; i <= last; i += step {
		keys = append(keys, args[i])
	}
	return keys
}
