package commands

import "fmt"

// redisVersion is the Redis version cellserver answers like; HELLO and INFO
// report it so that clients enable the features they would with that Redis.
// cellserver's own version is INFO's cellserver_version.
const redisVersion = "7.0.15"

// defaultUser is the user every connection starts as.
const defaultUser = "default"

// hello is HELLO [protover [AUTH username password] [SETNAME clientname]].
// It switches the connection's protocol before replying, so the reply is in
// the new protocol as in Redis: the server's Writer follows Client.Proto.
//
// The options take effect one by one, in order, exactly as in Redis 7.0: an
// AUTH or SETNAME before a failing option stays done (HELLO 3 AUTH u p FOO
// authenticates, then answers the syntax error), and a client that is still
// not authenticated after them gets NOAUTH with the protocol unchanged.
func hello(cx *Context, w Writer, args [][]byte) {
	// >> Args
	proto := 0
	next := 1
	if len(args) >= 2 {
		v, ok := ParseInt(args[1])
		if !ok {
			w.WriteError(msgProtoNotInt)
			return
		}
		if v < 2 || v > 3 {
			w.WriteError(msgNoProto)
			return
		}
		proto, next = int(v), 2
	}

	// >> Operation
	cl := cx.Client
	for i := next; i < len(args); i++ {
		more := len(args) - 1 - i
		switch opt := args[i]; {
		case equalFold(opt, "auth") && more >= 2:
			if !cx.cmds.login(cl, args[i+1], args[i+2]) {
				w.WriteError(msgHelloAuth)
				return
			}
			i += 2
		case equalFold(opt, "setname") && more >= 1:
			if !validClientName(args[i+1]) {
				w.WriteError(msgClientName)
				return
			}
			cl.Name = string(args[i+1])
			cl.changed(EffectInfo)
			i++
		default:
			w.WriteError(fmt.Sprintf(msgHelloOption, quoteC(opt)))
			return
		}
	}
	if cx.cmds.AuthRequired(cl) {
		w.WriteError(msgHelloNoAuth)
		return
	}
	if proto != 0 {
		cl.Proto = proto
		cl.changed(EffectProto | EffectInfo)
		switchProto(w, proto)
	}

	// >> Response
	w.WriteMap(7)
	w.WriteBulkString("server")
	w.WriteBulkString("redis")
	w.WriteBulkString("version")
	w.WriteBulkString(redisVersion)
	w.WriteBulkString("proto")
	w.WriteInt(int64(cl.Proto))
	w.WriteBulkString("id")
	w.WriteInt(cl.ID)
	w.WriteBulkString("mode")
	w.WriteBulkString("standalone")
	w.WriteBulkString("role")
	w.WriteBulkString("master")
	w.WriteBulkString("modules")
	w.WriteArray(0)
}

// auth is AUTH [username] password. The one-argument form authenticates the
// default user, and is refused with Redis's text when the default user has
// no password. A failed attempt changes nothing: a client authenticated
// before stays so, as in Redis.
func auth(cx *Context, w Writer, args [][]byte) {
	// >> Args
	if len(args) > 3 {
		w.WriteError(msgSyntax)
		return
	}
	name, password := []byte(defaultUser), args[1]
	if len(args) == 3 {
		name, password = args[1], args[2]
	} else if !cx.cmds.opts.Users.PasswordSet() {
		w.WriteError(msgAuthNoPassword)
		return
	}

	// >> Operation
	if !cx.cmds.login(cx.Client, name, password) {
		w.WriteError(msgHelloAuth)
		return
	}

	// >> Response
	w.WriteString("OK")
}
