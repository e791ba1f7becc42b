package commands

import (
	"context"
	"errors"
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

func storeDel(cx *Context, w Writer, args [][]byte)    { storeCount(cx, w, args, Store.Delete) }
func storeExists(cx *Context, w Writer, args [][]byte) { storeCount(cx, w, args, Store.Exists) }

// storeCount answers with count (Delete, Exists) of the keys args[1:].
func storeCount(cx *Context, w Writer, args [][]byte, count func(Store, context.Context, []string) (int64, error)) {
	keys := strs(args[1:])
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
		n, err := count(st, ctx, keys)
		writeIntOr(w, n, err)
	})
}

func storeType(cx *Context, w Writer, args [][]byte) {
	k := string(args[1])
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
		typ, err := st.Type(ctx, k)
		if err != nil {
			w.WriteError(storeFailed(err))
			return
		}
		w.WriteString(typ)
	})
}

func storeGet(cx *Context, w Writer, args [][]byte) {
	k := string(args[1])
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
		val, ok, err := st.Get(ctx, k)
		switch {
		case errors.Is(err, engine.ErrWrongType):
			w.WriteError(msgWrongType)
		case err != nil:
			w.WriteError(storeFailed(err))
		case !ok:
			w.WriteNull()
		default:
			w.WriteBulkString(val)
		}
	})
}

func storePTTL(cx *Context, w Writer, args [][]byte) {
	storeExpiry(cx, w, args[1], func(ms int64) int64 { return ms })
}
func storeTTL(cx *Context, w Writer, args [][]byte) { storeExpiry(cx, w, args[1], ttlOf) }

// storeExpiry answers with key's time to live in the store, in ms, as unit
// converts it.
func storeExpiry(cx *Context, w Writer, key []byte, unit func(ms int64) int64) {
	k := string(key)
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
		ms, err := st.PTTL(ctx, k)
		writeIntOr(w, unit(ms), err)
	})
}

func storeDBSize(cx *Context, w Writer, args [][]byte) {
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
		n, err := st.Len(ctx)
		writeIntOr(w, n, err)
	})
}

func storeFlush(cx *Context, w Writer, args [][]byte) {
	if !flushArgsOK(args) {
		w.WriteError(msgSyntax)
		return
	}
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
		if err := st.Flush(ctx); err != nil {
			w.WriteError(storeFailed(err))
			return
		}
		w.WriteString("OK")
	})
}

func storeKeys(cx *Context, w Writer, args [][]byte) {
	pattern := string(args[1])
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
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
	pattern, typ := "*", strings.ToLower(string(a.typeName))
	if a.pattern != nil {
		pattern = string(a.pattern) // "" matches only the empty key, as in Redis
	}
	if a.typeName != nil && typ == "" {
		writeScanReply(w, 0, nil) // no key's type is empty: the walk is over
		return
	}
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
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
