package commands

import "fmt"

// clientCommand is CLIENT and its subcommands.
func clientCommand() *Command {
	const flags = FlagNoScript | FlagLoading | FlagStale
	conn := []string{"@connection"}
	admin := []string{"@admin", "@dangerous", "@connection"}
	sub := func(name string, arity int, cats []string, since, summary string, run Handler) *Command {
		return &Command{Name: "client|" + name, Arity: arity, Flags: flags, ACLCategories: cats,
			Group: "connection", Since: since, Summary: summary, Run: run}
	}
	return withSubcommands(&Command{
		Name: "client", Arity: -2, Group: "connection", Since: "2.4.0",
		Summary: "A container for client connection commands.",
		Sub: []*Command{
			sub("id", 2, conn, "5.0.0", "Returns the unique client ID of the connection.", clientID),
			sub("setname", 3, conn, "2.6.9", "Sets the connection name.", clientSetName),
			sub("getname", 2, conn, "2.6.9", "Returns the name of the connection.", clientGetName),
			sub("setinfo", 4, conn, "7.2.0", "Sets information specific to the client or connection.", clientSetInfo),
			sub("info", 2, conn, "6.2.0", "Returns information about the connection.", clientInfo),
			sub("list", -2, admin, "2.4.0", "Lists open connections.", clientList),
			sub("no-evict", 3, admin, "7.0.0", "Sets the client eviction mode of the connection.", clientOnOff),
			sub("no-touch", 3, conn, "7.2.0",
				"Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", clientOnOff),
			sub("reply", 3, conn, "3.2.0", "Instructs the server whether to reply to commands.", clientReply),
			sub("help", 2, conn, "5.0.0", "Returns helpful text about the different subcommands.", clientHelp),
		},
	}, nil)
}

func clientID(cx *Context, w Writer, args [][]byte) {
	w.WriteInt(cx.Client.ID)
}

// clientSetName is CLIENT SETNAME name; an empty name clears it.
func clientSetName(cx *Context, w Writer, args [][]byte) {
	// >> Args
	name := args[2]
	if !validClientName(name) {
		w.WriteError(msgClientName)
		return
	}

	// >> Operation
	cx.Client.Name = string(name)
	cx.Client.changed(EffectInfo)

	// >> Response
	w.WriteString("OK")
}

func clientGetName(cx *Context, w Writer, args [][]byte) {
	if cx.Client.Name == "" {
		w.WriteNull()
		return
	}
	w.WriteBulkString(cx.Client.Name)
}

// clientSetInfo is CLIENT SETINFO LIB-NAME|LIB-VER value, which client
// libraries send after HELLO.
func clientSetInfo(cx *Context, w Writer, args [][]byte) {
	// >> Args
	attr, value := args[2], args[3]
	var dst *string
	switch {
	case equalFold(attr, "lib-name"):
		dst = &cx.Client.LibName
	case equalFold(attr, "lib-ver"):
		dst = &cx.Client.LibVer
	default:
		w.WriteError(fmt.Sprintf(msgSetInfoOption, quoteC(attr)))
		return
	}
	if !validClientName(value) {
		w.WriteError(fmt.Sprintf(msgSetInfoValue, quoteC(attr)))
		return
	}

	// >> Operation
	*dst = string(value)
	cx.Client.changed(EffectInfo)

	// >> Response
	w.WriteString("OK")
}

// clientOnOff is CLIENT NO-EVICT and NO-TOUCH: cellserver neither evicts
// keys nor keeps LRU data, so both modes are accepted and change nothing.
func clientOnOff(cx *Context, w Writer, args [][]byte) {
	if !equalFold(args[2], "on") && !equalFold(args[2], "off") {
		w.WriteError(msgSyntax)
		return
	}
	w.WriteString("OK")
}

// clientReply is CLIENT REPLY: only ON, the default, is supported.
func clientReply(cx *Context, w Writer, args [][]byte) {
	switch mode := args[2]; {
	case equalFold(mode, "on"):
		w.WriteString("OK")
	case equalFold(mode, "off"), equalFold(mode, "skip"):
		w.WriteError(msgClientReplyMode)
	default:
		w.WriteError(msgSyntax)
	}
}

func clientHelp(cx *Context, w Writer, args [][]byte) {
	writeHelp(w, "client", []string{
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"    * ID <client-id> [<client-id> ...]",
		"      Return clients of specified IDs only.",
		"NO-EVICT (ON|OFF)",
		"    Accepted for compatibility; cellserver never evicts clients.",
		"NO-TOUCH (ON|OFF)",
		"    Accepted for compatibility; cellserver keeps no LRU/LFU data.",
		"REPLY (ON)",
		"    Control the replies sent to the current connection; only ON is supported.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
	})
}

// validClientName reports whether name may be a client name (or a library
// name or version): like Redis, printable ASCII without spaces.
func validClientName(name []byte) bool {
	for _, c := range name {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}
