package commands

// commandDocs is COMMAND DOCS [name ...]: a map from each known name to its
// documentation; unknown names are left out, as in Redis.
func commandDocs(cx *Context, w Writer, args [][]byte) {
	// >> Args
	var cmds []*Command
	if len(args) == 2 {
		cmds = cx.cmds.table.sorted
	}
	for _, name := range args[2:] {
		if cmd := cx.cmds.table.lookupFull(name); cmd != nil {
			cmds = append(cmds, cmd)
		}
	}

	// >> Response
	w.WriteMap(len(cmds))
	for _, cmd := range cmds {
		w.WriteBulkString(cmd.Name)
		writeCommandDocs(w, cmd)
	}
}

// writeCommandDocs writes cmd's documentation as Redis 7.0's
// addReplyCommandDocs does: summary and since when known, always the group,
// the module for a module command, and the subcommands' documentation.
func writeCommandDocs(w Writer, cmd *Command) {
	n := 1
	for _, present := range []bool{cmd.Summary != "", cmd.Since != "", cmd.Flags&FlagModule != 0, len(cmd.Sub) > 0} {
		if present {
			n++
		}
	}
	w.WriteMap(n)
	if cmd.Summary != "" {
		w.WriteBulkString("summary")
		w.WriteBulkString(cmd.Summary)
	}
	if cmd.Since != "" {
		w.WriteBulkString("since")
		w.WriteBulkString(cmd.Since)
	}
	w.WriteBulkString("group")
	w.WriteBulkString(cmd.Group)
	if cmd.Flags&FlagModule != 0 {
		w.WriteBulkString("module")
		w.WriteBulkString(cmd.Module)
	}
	if len(cmd.Sub) > 0 {
		w.WriteBulkString("subcommands")
		w.WriteMap(len(cmd.Sub))
		for _, sub := range cmd.Sub {
			w.WriteBulkString(sub.Name)
			writeCommandDocs(w, sub)
		}
	}
}
