package commands

import (
	"fmt"
	"math"
)

// connectionCommands are the commands about the connection itself.
func connectionCommands() []*Command {
	const connFlags = FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy
	conn := []string{"@connection"}
	return []*Command{
		{Name: "ping", Arity: -1, Flags: FlagFast, ACLCategories: conn, Group: "connection", Since: "1.0.0",
			Summary: "Returns the server's liveliness response.", Run: ping},
		{Name: "echo", Arity: 2, Flags: FlagFast, ACLCategories: conn, Group: "connection", Since: "1.0.0",
			Summary: "Returns the given string.", Run: echo},
		// QUIT and RESET act at once inside MULTI, as in Redis.
		{Name: "quit", Arity: -1, Flags: connFlags | FlagNoMulti, ACLCategories: conn, Group: "connection",
			Since: "1.0.0", Summary: "Closes the connection.", Run: quit},
		{Name: "reset", Arity: 1, Flags: connFlags | FlagNoMulti, ACLCategories: conn, Group: "connection",
			Since: "6.2.0", Summary: "Resets the connection.", Run: reset},
		{Name: "select", Arity: 2, Flags: FlagLoading | FlagStale | FlagFast, ACLCategories: []string{"@keyspace"},
			Group: "connection", Since: "1.0.0", Summary: "Changes the selected database.", Run: selectDB},
		{Name: "hello", Arity: -1, Flags: connFlags, ACLCategories: conn, Group: "connection", Since: "6.0.0",
			Summary: "Handshakes with the Redis server.", Run: hello},
		{Name: "auth", Arity: -2, Flags: connFlags, ACLCategories: conn, Group: "connection", Since: "1.0.0",
			Summary: "Authenticates the connection.", Run: auth},
		clientCommand(),
	}
}

// ping answers PONG, or echoes its one optional argument.
func ping(cx *Context, w Writer, args [][]byte) {
	// The table's arity says "at least one"; PING takes at most two.
	if len(args) > 2 {
		w.WriteError(fmt.Sprintf(msgWrongArity, "ping"))
		return
	}
	if len(args) == 2 {
		w.WriteBulk(args[1])
		return
	}
	w.WriteString("PONG")
}

func echo(cx *Context, w Writer, args [][]byte) {
	w.WriteBulk(args[1])
}

// quit answers OK and asks the server to close the connection once the
// reply is flushed.
func quit(cx *Context, w Writer, args [][]byte) {
	cx.Client.Close = true
	cx.Client.changed(EffectQuit)
	w.WriteString("OK")
}

// reset leaves MULTI and MONITOR, forgets the name and goes back to RESP2; the reply
// is already in RESP2, as in Redis.
func reset(cx *Context, w Writer, args [][]byte) {
	if cx.Client.monitoring {
		cx.cmds.monitors.remove(cx.Client) // RESET ends MONITOR, as in Redis
	}
	cx.Client.reset()
	switchProto(w, cx.Client.Proto)
	w.WriteString("RESET")
}

// selectDB is SELECT: there is one database, 0. Like Redis, the index must
// fit a C int, and an integer that does not gets Redis's range text.
func selectDB(cx *Context, w Writer, args [][]byte) {
	// >> Args
	index, ok := ParseInt(args[1])
	if !ok {
		w.WriteError(msgSelectInvalid)
		return
	}
	if index < math.MinInt32 || index > math.MaxInt32 {
		w.WriteError(msgSelectRange)
		return
	}

	// >> Response
	if index != 0 {
		w.WriteError(msgDBIndex)
		return
	}
	w.WriteString("OK")
}
