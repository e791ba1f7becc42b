package commands

import "fmt"

// redisVersion is the Redis version cellserver answers like; HELLO and INFO
// report it so that clients enable the features they would with that Redis.
// cellserver's own version is INFO's cellserver_version.
const redisVersion = "7.0.15"

// defaultUser is the only user there is; it has no password yet, so any
// password authenticates it.
const defaultUser = "default"

// hello is HELLO [protover [AUTH username password] [SETNAME clientname]].
// It switches the connection's protocol before replying, so the reply is in
// the new protocol as in Redis: the server's Writer follows Client.Proto.
func hello(ctx *Context, w Writer, args [][]byte) {
	// >> Args
	proto := 0
	next := 1
	if len(args) >= 2 {
		v, ok := parseRedisInt(args[1])
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
	var user, name []byte
	authenticate, rename := false, false
	for i := next; i < len(args); i++ {
		more := len(args) - 1 - i
		switch opt := args[i]; {
		case equalFold(opt, "auth") && more >= 2:
			user, authenticate = args[i+1], true
			i += 2
		case equalFold(opt, "setname") && more >= 1:
			name, rename = args[i+1], true
			i++
		default:
			w.WriteError(fmt.Sprintf(msgHelloOption, oneLine(string(opt))))
			return
		}
	}

	// >> Operation
	if authenticate && string(user) != defaultUser {
		w.WriteError(msgHelloAuth)
		return
	}
	if rename && !validClientName(name) {
		w.WriteError(msgClientName)
		return
	}
	cl := ctx.Client
	if rename {
		cl.Name = string(name)
	}
	if proto != 0 {
		cl.Proto = proto
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

// auth is AUTH [username] password. There are no passwords yet: the
// one-argument form gets Redis's answer for a server without one, and the
// default user authenticates with any password.
func auth(ctx *Context, w Writer, args [][]byte) {
	switch {
	case len(args) > 3:
		w.WriteError(msgSyntax)
	case len(args) == 2:
		w.WriteError(msgAuthNoPassword)
	case string(args[1]) != defaultUser:
		w.WriteError(msgHelloAuth)
	default:
		w.WriteString("OK")
	}
}
