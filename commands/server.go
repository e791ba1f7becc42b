package commands

import "strconv"

// serverCommands are the commands about the server: COMMAND, INFO, CONFIG,
// TIME, SLOWLOG, MONITOR.
func (c *Commands) serverCommands() []*Command {
	return []*Command{
		commandCommand(),
		// INFO reads the whole keyspace (its Keyspace section), so inside
		// EXEC it holds every shard.
		{Name: "info", Arity: -1, Flags: FlagLoading | FlagStale | FlagAllKeys, ACLCategories: []string{"@dangerous"},
			Group: "server", Since: "1.0.0", Summary: "Returns information and statistics about the server.", Run: info},
		configCommand(),
		{Name: "time", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Group: "server", Since: "2.6.0",
			Summary: "Returns the server time.", Run: timeCmd},
		slowlogCommand(),
		monitorCommand(),
	}
}

// timeCmd is TIME: the engine's clock as Unix seconds and microseconds.
func timeCmd(cx *Context, w Writer, args [][]byte) {
	now := cx.Engine().Now()
	w.WriteArray(2)
	w.WriteBulkString(strconv.FormatInt(now.Unix(), 10))
	w.WriteBulkString(strconv.Itoa(now.Nanosecond() / 1000))
}
