package commands

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/cellserver/cellserver/engine"
)

// The keyspace commands in shared mode: each acts on the store, off the
// event loop (Commands.offload), and answers as its in-memory twin in
// keyspace.go does. A store that fails answers msgStoreFailed.

// strs copies args, which point into the connection's buffer.
func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

func storeDel(cx *Context, w Writer, args [][]byte) {
	keys := strs(args[1:])
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		n, err := st.Delete(ctx, keys)
		writeIntOr(w, n, err)
	})
}

func storeExists(cx *Context, w Writer, args [][]byte) {
	keys := strs(args[1:])
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		n, err := st.Exists(ctx, keys)
		writeIntOr(w, n, err)
	})
}

func storeType(cx *Context, w Writer, args [][]byte) {
	key := string(args[1])
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		v, ok, err := st.Get(ctx, key)
		switch {
		case err != nil:
			w.WriteError(storeFailed(err))
		case !ok:
			w.WriteString("none")
		case v.Family == engine.FamilyNone:
			w.WriteString("string") // another application's value
		default:
			w.WriteString(v.Family.TypeName())
		}
	})
}

func storePTTL(cx *Context, w Writer, args [][]byte) {
	key := string(args[1])
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		ms, err := st.PTTL(ctx, key)
		writeIntOr(w, ms, err)
	})
}

func storeTTL(cx *Context, w Writer, args [][]byte) {
	key := string(args[1])
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		ms, err := st.PTTL(ctx, key)
		writeIntOr(w, ttlOf(ms), err)
	})
}

func storeGet(cx *Context, w Writer, args [][]byte) {
	key := string(args[1])
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		v, ok, err := st.Get(ctx, key)
		switch {
		case err != nil:
			w.WriteError(storeFailed(err))
		case !ok:
			w.WriteNull()
		case v.Family != engine.FamilyCL:
			w.WriteError(msgWrongType)
		default:
			w.WriteBulkString(strconv.FormatUint(v.TAT, 10))
		}
	})
}

func storeDBSize(cx *Context, w Writer, args [][]byte) {
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		n, err := st.Len(ctx)
		writeIntOr(w, n, err)
	})
}

func storeFlush(cx *Context, w Writer, args [][]byte) {
	if !flushArgsOK(args) {
		w.WriteError(msgSyntax)
		return
	}
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		if err := st.Flush(ctx); err != nil {
			w.WriteError(storeFailed(err))
			return
		}
		w.WriteString("OK")
	})
}

func storeKeys(cx *Context, w Writer, args [][]byte) {
	pattern := string(args[1])
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		keys, err := st.Keys(ctx, pattern)
		if err != nil {
			w.WriteError(storeFailed(err))
			return
		}
		writeKeys(w, keys)
	})
}

func storeScan(cx *Context, w Writer, args [][]byte) {
	a, msg := parseScanArgs(args)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	pattern, typ := string(a.pattern), strings.ToLower(string(a.typeName))
	cx.cmds.offload(w, func(ctx context.Context, st Store, w Writer) {
		keys, next, err := st.Scan(ctx, a.cursor, pattern, a.count, typ)
		if err != nil {
			w.WriteError(storeFailed(err))
			return
		}
		writeScanReply(w, next, keys)
	})
}

// writeIntOr writes n, or the store's failure.
func writeIntOr(w Writer, n int64, err error) {
	if err != nil {
		w.WriteError(storeFailed(err))
		return
	}
	w.WriteInt(n)
}

// errorReply is the text of a reply for err when err carries one.
func errorReply(err error) (string, bool) {
	var re ReplyError
	if errors.As(err, &re) {
		return re.Reply(), true
	}
	return "", false
}
