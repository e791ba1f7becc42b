package commands

import (
	"bytes"
	"slices"
)

// commandCommand is COMMAND and its subcommands, which describe the table
// to clients (cluster-aware clients read key positions from it; redis-cli
// reads COMMAND DOCS).
func commandCommand() *Command {
	const flags = FlagLoading | FlagStale
	conn := []string{"@connection"}
	sub := func(name string, arity int, since, summary string, run Handler) *Command {
		return &Command{Name: "command|" + name, Arity: arity, Flags: flags, ACLCategories: conn,
			Group: "server", Since: since, Summary: summary, Run: run}
	}
	return withSubcommands(&Command{
		Name: "command", Arity: -1, Flags: flags, ACLCategories: conn, Group: "server", Since: "2.8.13",
		Summary: "Returns detailed information about all commands.",
		Sub: []*Command{
			sub("count", 2, "2.8.13", "Returns a count of commands.", commandCount),
			sub("docs", -2, "7.0.0", "Returns documentary information about one, multiple or all commands.", commandDocs),
			sub("getkeys", -4, "2.8.13", "Extracts the key names from an arbitrary command.", commandGetKeys),
			sub("getkeysandflags", -4, "7.0.0",
				"Extracts the key names and access flags for an arbitrary command.", commandGetKeysAndFlags),
			sub("info", -2, "2.8.13", "Returns information about one, multiple or all commands.", commandInfo),
			sub("list", -2, "7.0.0", "Returns a list of command names.", commandList),
			sub("help", 2, "5.0.0", "Returns helpful text about the different subcommands.", commandHelp),
		},
	}, commandAll)
}

// commandAll is COMMAND without a subcommand: every command's COMMAND INFO.
func commandAll(cx *Context, w Writer, args [][]byte) {
	cmds := cx.cmds.table.sorted
	w.WriteArray(len(cmds))
	for _, cmd := range cmds {
		writeCommandInfo(w, cmd)
	}
}

func commandCount(cx *Context, w Writer, args [][]byte) {
	w.WriteInt(int64(len(cx.cmds.table.sorted)))
}

// commandInfo is COMMAND INFO [name ...]; an unknown name gets a null.
func commandInfo(cx *Context, w Writer, args [][]byte) {
	if len(args) == 2 {
		commandAll(cx, w, args)
		return
	}
	w.WriteArray(len(args) - 2)
	for _, name := range args[2:] {
		writeCommandInfo(w, cx.cmds.table.lookupFull(name))
	}
}

// commandList is COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN
// pattern]: the names of every command and subcommand. Each filter ignores
// case, as Redis's: its table of modules is keyed case-insensitively.
func commandList(cx *Context, w Writer, args [][]byte) {
	// >> Args
	keep := func(*Command) bool { return true }
	for i := 2; i < len(args); i += 3 {
		if !equalFold(args[i], "filterby") || len(args)-1-i != 2 {
			w.WriteError(msgSyntax)
			return
		}
		switch kind, arg := args[i+1], args[i+2]; {
		case equalFold(kind, "module"):
			keep = func(c *Command) bool { return c.Module != "" && equalFold(arg, c.Module) }
		case equalFold(kind, "aclcat"):
			cat := "@" + string(bytes.ToLower(arg))
			keep = func(c *Command) bool { return slices.Contains(aclCategories(c), cat) }
		case equalFold(kind, "pattern"):
			keep = func(c *Command) bool { return globMatchFold(arg, []byte(c.Name)) }
		default:
			w.WriteError(msgSyntax)
			return
		}
	}

	// >> Operation
	var names []string
	for _, cmd := range cx.cmds.table.sorted {
		for _, c := range append([]*Command{cmd}, cmd.Sub...) {
			if keep(c) {
				names = append(names, c.Name)
			}
		}
	}

	// >> Response
	w.WriteArray(len(names))
	for _, n := range names {
		w.WriteBulkString(n)
	}
}

func commandHelp(cx *Context, w Writer, args [][]byte) {
	writeHelp(w, "command", []string{
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full Redis command.",
	})
}

// lookupFull finds a command, or a subcommand by its full name
// ("client|list"), in any case.
func (t *table) lookupFull(name []byte) *Command {
	parent, sub, found := bytes.Cut(name, []byte("|"))
	cmd := t.lookup(parent)
	if !found || cmd == nil {
		return cmd
	}
	return cmd.subcommand(sub)
}

// writeCommandInfo writes cmd as Redis 7.0's addReplyCommandInfo does, or a
// null for an unknown command.
func writeCommandInfo(w Writer, cmd *Command) {
	if cmd == nil {
		w.WriteNull()
		return
	}
	first, last, step := cmd.FirstKey, cmd.LastKey, cmd.KeyStep
	if first <= 0 {
		first, last, step = 0, 0, 0
	}
	w.WriteArray(10)
	w.WriteBulkString(cmd.Name)
	w.WriteInt(int64(cmd.Arity))
	var flags []string
	for _, f := range flagNames {
		if cmd.Flags&f.flag != 0 {
			flags = append(flags, f.name)
		}
	}
	if cmd.Keys != nil {
		flags = append(flags, "movablekeys") // as Redis marks a command with a getkeys function
	}
	writeStatusSet(w, flags)
	w.WriteInt(int64(first))
	w.WriteInt(int64(last))
	w.WriteInt(int64(step))
	writeStatusSet(w, aclCategories(cmd))
	w.WriteSet(0) // tips
	writeKeySpecs(w, cmd)
	if len(cmd.Sub) == 0 {
		w.WriteSet(0) // as Redis: an empty set, not an array, when there are none
		return
	}
	w.WriteArray(len(cmd.Sub))
	for _, sub := range cmd.Sub {
		writeCommandInfo(w, sub)
	}
}

// writeKeySpecs writes the one key spec that FirstKey, LastKey and KeyStep
// describe, as Redis derives a module command's spec from the same three
// numbers: begin at index FirstKey; find keys up to lastkey, relative to
// the first key (or counted from the end when negative).
func writeKeySpecs(w Writer, cmd *Command) {
	if cmd.FirstKey <= 0 {
		w.WriteSet(0)
		return
	}
	last := cmd.LastKey
	if last >= 0 {
		last -= cmd.FirstKey
	}
	w.WriteSet(1)
	w.WriteMap(3)
	w.WriteBulkString("flags")
	writeStatusSet(w, cmd.KeySpecFlags)
	w.WriteBulkString("begin_search")
	w.WriteMap(2)
	w.WriteBulkString("type")
	w.WriteBulkString("index")
	w.WriteBulkString("spec")
	w.WriteMap(1)
	w.WriteBulkString("index")
	w.WriteInt(int64(cmd.FirstKey))
	w.WriteBulkString("find_keys")
	w.WriteMap(2)
	w.WriteBulkString("type")
	w.WriteBulkString("range")
	w.WriteBulkString("spec")
	w.WriteMap(3)
	w.WriteBulkString("lastkey")
	w.WriteInt(int64(last))
	w.WriteBulkString("keystep")
	w.WriteInt(int64(cmd.KeyStep))
	w.WriteBulkString("limit")
	w.WriteInt(0)
}

// writeStatusSet writes names as a set of simple strings.
func writeStatusSet(w Writer, names []string) {
	w.WriteSet(len(names))
	for _, n := range names {
		w.WriteString(n)
	}
}

// aclCategoryOrder is the order in which Redis lists ACL categories.
var aclCategoryOrder = []string{
	"@keyspace", "@read", "@write", "@set", "@sortedset", "@list", "@hash", "@string", "@bitmap",
	"@hyperloglog", "@geo", "@stream", "@pubsub", "@admin", "@fast", "@slow", "@blocking",
	"@dangerous", "@connection", "@transaction", "@scripting",
}

// aclCategories returns cmd's ACL categories in Redis's order: those in its
// row plus, for a command Redis itself serves, those its flags imply (@write,
// @read, and @fast or else @slow), as Redis adds them. A module command has
// only the categories in its row.
func aclCategories(cmd *Command) []string {
	have := slices.Clone(cmd.ACLCategories)
	if cmd.Flags&FlagModule == 0 {
		if cmd.Flags&FlagWrite != 0 {
			have = append(have, "@write")
		}
		if cmd.Flags&FlagReadonly != 0 {
			have = append(have, "@read")
		}
		if cmd.Flags&FlagFast != 0 {
			have = append(have, "@fast")
		} else {
			have = append(have, "@slow")
		}
	}
	var out []string
	for _, c := range aclCategoryOrder {
		if slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	for _, c := range have {
		if !slices.Contains(aclCategoryOrder, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}
