package commands

// transactionCommands are MULTI, EXEC and DISCARD. Queued commands run under
// one engine transaction: their shards are locked together, so no other
// client sees a state between two of them.
func (c *Commands) transactionCommands() []*Command {
	return []*Command{
		{Name: "multi", Arity: 1, Flags: FlagNoMulti | FlagFast | FlagNoScript | FlagLoading | FlagStale | FlagAllowBusy,
			Group: "transactions", Since: "1.2.0", Summary: "Starts a transaction.", Run: multi},
		{Name: "exec", Arity: 1, Flags: FlagNoMulti | FlagNoScript | FlagLoading | FlagStale,
			Group: "transactions", Since: "1.2.0", Summary: "Executes all commands in a transaction.", Run: c.exec},
		{Name: "discard", Arity: 1, Flags: FlagNoMulti | FlagFast | FlagNoScript | FlagLoading | FlagStale | FlagAllowBusy,
			Group: "transactions", Since: "2.0.0", Summary: "Discards a transaction.", Run: discard},
	}
}

func multi(cx *Context, w Writer, args [][]byte) {
	if cx.Client.multi != nil {
		w.WriteError(msgMultiNested)
		return
	}
	cx.Client.multi = &multiState{}
	cx.Client.changed(EffectInfo)
	w.WriteString("OK")
}

func discard(cx *Context, w Writer, args [][]byte) {
	if cx.Client.multi == nil {
		w.WriteError(msgDiscardNoMulti)
		return
	}
	cx.Client.multi = nil
	cx.Client.changed(EffectInfo)
	w.WriteString("OK")
}

// exec runs the queued commands atomically and replies with their replies.
func (c *Commands) exec(cx *Context, w Writer, args [][]byte) {
	m := cx.Client.multi
	if m == nil {
		w.WriteError(msgExecNoMulti)
		return
	}
	cx.Client.multi = nil
	cx.Client.changed(EffectInfo)
	if m.failed {
		w.WriteError(msgExecAbort)
		return
	}
	cmds := make([]*Command, len(m.queued))
	for i, q := range m.queued {
		cmds[i], _ = c.resolve(q) // queued commands resolved once already
	}
	inner := &Context{Client: cx.Client, cmds: c}
	if c.opts.Store != nil {
		// In shared mode the commands finish later, in the store: they
		// act there one after the other, each atomically, but the
		// transaction as a whole is not atomic, and the local keyspace
		// (the fallback's) is not locked for them.
		inner.chain = &chain{c: c}
	} else {
		// In memory the transaction locks the shards of every key its
		// commands name (all of them for a command over every key).
		var keys [][]byte
		all := false
		for i, q := range m.queued {
			keys = append(keys, cmds[i].keys(q)...)
			all = all || cmds[i].Flags&FlagAllKeys != 0
		}
		inner.Tx = cx.Engine().Begin(keys, all)
		defer inner.Tx.End()
	}
	// Each command's errors are its own: EXEC itself has failed only if
	// it answered with an error, as in Redis.
	out := w
	if ec, ok := w.(*errorCounter); ok {
		out = ec.Writer
	}
	w.WriteArray(len(cmds))
	for i, cmd := range cmds {
		c.run(inner, &errorCounter{Writer: out, stats: &c.replyErrors}, cmd, m.queued[i])
	}
}
