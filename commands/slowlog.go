package commands

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// Redis's limits on what a slow log entry keeps of a command's arguments.
const (
	slowlogMaxArgs     = 32  // SLOWLOG_ENTRY_MAX_ARGC
	slowlogMaxArgBytes = 128 // SLOWLOG_ENTRY_MAX_STRING
)

// slowlog is Redis's slow log: the latest commands that ran for at least
// threshold, newest first, at most maxLen of them. It is safe for
// concurrent use.
type slowlog struct {
	threshold time.Duration
	maxLen    int

	mu      sync.Mutex     // guards entries, newest, nextID
	entries []slowlogEntry // a ring once it holds maxLen entries
	newest  int            // index of the newest entry
	nextID  int64          // ids keep counting across SLOWLOG RESET, as Redis's
}

// slowlogEntry is one slow command, as SLOWLOG GET reports it.
type slowlogEntry struct {
	id, unix, micros int64
	args             []string // trimmed and redacted
	addr, name       string
}

// newSlowlog returns the slow log for Redis's slowlog-log-slower-than
// (microseconds; negative for none) and slowlog-max-len, or nil when it
// would keep nothing.
func newSlowlog(slowerThan int64, maxLen int) *slowlog {
	if slowerThan < 0 || maxLen <= 0 {
		return nil
	}
	threshold := time.Duration(math.MaxInt64) // beyond any command's time
	if slowerThan < int64(threshold/time.Microsecond) {
		threshold = time.Duration(slowerThan) * time.Microsecond
	}
	return &slowlog{threshold: threshold, maxLen: maxLen}
}

// add records a command that took d. Only commands at or above the
// threshold get here: the arguments are copied outside the lock.
func (sl *slowlog) add(cx *Context, cmd *Command, args [][]byte, d time.Duration) {
	if cmd.Name == "exec" {
		return // Redis logs the queued commands, not EXEC (CMD_SKIP_SLOWLOG)
	}
	e := slowlogEntry{
		unix:   cx.Engine().Now().Unix(),
		micros: d.Microseconds(),
		args:   slowlogArgs(cmd.Name, args),
		addr:   cx.Client.Addr,
		name:   cx.Client.Name,
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	e.id = sl.nextID
	sl.nextID++
	if len(sl.entries) < sl.maxLen {
		sl.entries = append(sl.entries, e)
		sl.newest = len(sl.entries) - 1
		return
	}
	sl.newest = (sl.newest + 1) % len(sl.entries)
	sl.entries[sl.newest] = e
}

// get returns up to count entries, newest first.
func (sl *slowlog) get(count int) []slowlogEntry {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	n := min(count, len(sl.entries))
	out := make([]slowlogEntry, n)
	for i := range out {
		out[i] = sl.entries[(sl.newest-i+len(sl.entries))%len(sl.entries)]
	}
	return out
}

func (sl *slowlog) len() int {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return len(sl.entries)
}

func (sl *slowlog) reset() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.entries, sl.newest = nil, 0
}

// slowlogArgs copies what Redis's slow log keeps of args: at most 32, the
// last replaced by "... (N more arguments)" when there were more, each cut
// to 128 bytes plus "... (N more bytes)", and secrets replaced by
// "(redacted)" as Redis 7 redacts them (redactSecrets, and the values of
// password parameters in CONFIG SET).
func slowlogArgs(name string, args [][]byte) []string {
	args = redactSecrets(args)
	if name == "config|set" {
		args = redactConfigSet(args)
	}
	n := min(len(args), slowlogMaxArgs)
	out := make([]string, n)
	for i := range out {
		a := args[i]
		switch {
		case n < len(args) && i == n-1:
			out[i] = fmt.Sprintf("... (%d more arguments)", len(args)-n+1)
		case len(a) > slowlogMaxArgBytes:
			out[i] = fmt.Sprintf("%s... (%d more bytes)", a[:slowlogMaxArgBytes], len(a)-slowlogMaxArgBytes)
		default:
			out[i] = string(a)
		}
	}
	return out
}

// redactConfigSet returns the arguments of CONFIG SET name value [name
// value ...] with the value of each password parameter redacted, as Redis 7
// redacts them; args itself when there is none, and args is never changed.
func redactConfigSet(args [][]byte) [][]byte {
	var out [][]byte
	for j := 2; j+1 < len(args); j += 2 {
		switch strings.ToLower(string(args[j])) {
		case "requirepass", "masterauth", "masteruser", "tls-key-file-pass", "tls-client-key-file-pass":
			if out == nil {
				out = append([][]byte(nil), args...)
			}
			out[j+1] = []byte(redacted)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// slowlogCommand is SLOWLOG and its subcommands.
func slowlogCommand() *Command {
	admin := []string{"@admin", "@slow", "@dangerous"}
	sub := func(name string, arity int, acl []string, since, summary string, run Handler) *Command {
		return &Command{Name: "slowlog|" + name, Arity: arity, Flags: FlagLoading | FlagStale,
			ACLCategories: acl, Group: "server", Since: since, Summary: summary, Run: run}
	}
	return withSubcommands(&Command{
		Name: "slowlog", Arity: -2, ACLCategories: []string{"@slow"}, Group: "server", Since: "2.2.12",
		Summary: "A container for slow log commands.",
		Sub: []*Command{
			sub("get", -2, admin, "2.2.12", "Returns the slow log's entries.", slowlogGet),
			sub("len", 2, admin, "2.2.12", "Returns the number of entries in the slow log.", slowlogLen),
			sub("reset", 2, admin, "2.2.12", "Clears all entries from the slow log.", slowlogReset),
			sub("help", 2, []string{"@slow"}, "6.2.0", "Show helpful text about the different subcommands.", slowlogHelp),
		},
	}, nil)
}

// slowlogGet is SLOWLOG GET [count]: the newest count entries (10 by
// default, -1 for all), each [id, unix time, microseconds, arguments,
// client address, client name].
func slowlogGet(cx *Context, w Writer, args [][]byte) {
	// >> Args
	count := int64(10)
	if len(args) > 3 {
		w.WriteError(fmt.Sprintf(msgSubcommandSyntax, args[1], strings.ToUpper(string(args[0]))))
		return
	}
	if len(args) == 3 {
		n, ok := ParseInt(args[2])
		if !ok || n < -1 {
			w.WriteError(msgSlowlogCount)
			return
		}
		count = n
	}

	// >> Operation
	var entries []slowlogEntry
	if sl := cx.cmds.obs.slowlog; sl != nil {
		if count == -1 || count > int64(sl.maxLen) {
			count = int64(sl.maxLen)
		}
		entries = sl.get(int(count))
	}

	// >> Response
	w.WriteArray(len(entries))
	for _, e := range entries {
		w.WriteArray(6)
		w.WriteInt(e.id)
		w.WriteInt(e.unix)
		w.WriteInt(e.micros)
		w.WriteArray(len(e.args))
		for _, a := range e.args {
			w.WriteBulkString(a)
		}
		w.WriteBulkString(e.addr)
		w.WriteBulkString(e.name)
	}
}

// slowlogLen is SLOWLOG LEN.
func slowlogLen(cx *Context, w Writer, args [][]byte) {
	n := 0
	if sl := cx.cmds.obs.slowlog; sl != nil {
		n = sl.len()
	}
	w.WriteInt(int64(n))
}

// slowlogReset is SLOWLOG RESET: it empties the slow log; entry ids go on
// from where they were.
func slowlogReset(cx *Context, w Writer, args [][]byte) {
	if sl := cx.cmds.obs.slowlog; sl != nil {
		sl.reset()
	}
	w.WriteString("OK")
}

// slowlogHelp is SLOWLOG HELP, in Redis 7.0's words (its last line is
// "Prints this help.", where writeHelp has "Print").
func slowlogHelp(cx *Context, w Writer, args [][]byte) {
	lines := []string{
		"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
		"HELP",
		"    Prints this help.",
	}
	w.WriteArray(len(lines))
	for _, l := range lines {
		w.WriteString(l)
	}
}
