package commands

// commandGetKeys is COMMAND GETKEYS command [arg ...].
func commandGetKeys(cx *Context, w Writer, args [][]byte) {
	getKeys(cx, w, args[2:], false)
}

// commandGetKeysAndFlags is COMMAND GETKEYSANDFLAGS command [arg ...].
func commandGetKeysAndFlags(cx *Context, w Writer, args [][]byte) {
	getKeys(cx, w, args[2:], true)
}

// getKeys answers with the key arguments of the full command, found from
// the table's key positions (or the command's Keys function), and with
// their key-spec flags if asked.
func getKeys(cx *Context, w Writer, full [][]byte, withFlags bool) {
	// >> Args
	cmd := cx.cmds.table.lookup(full[0])
	if cmd != nil && len(cmd.Sub) > 0 && len(full) >= 2 {
		cmd = cmd.subcommand(full[1])
	}
	switch {
	case cmd == nil:
		w.WriteError(msgInvalidCommand)
		return
	case cmd.FirstKey <= 0 && cmd.Keys == nil:
		w.WriteError(msgNoKeyArguments)
		return
	case !arityOK(cmd.Arity, len(full)):
		w.WriteError(msgInvalidArgCount)
		return
	}

	// >> Operation
	keys := cmd.keys(full)

	// >> Response
	if len(keys) == 0 {
		w.WriteError(msgInvalidArguments)
		return
	}
	w.WriteArray(len(keys))
	for _, k := range keys {
		if withFlags {
			w.WriteArray(2)
			w.WriteBulk(k)
			writeStatusSet(w, cmd.KeySpecFlags)
			continue
		}
		w.WriteBulk(k)
	}
}
