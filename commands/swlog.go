package commands

import (
	"context"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// swLogCommand is SW.LOG key [WINDOW window] [COUNT n].
func swLogCommand() *Command {
	return &Command{
		Name: "sw.log", Arity: -2, Flags: FlagReadonly,
		FirstKey: 1, LastKey: 1, KeySpecFlags: []string{"RO", "access"}, KeyStep: 1,
		Group: rateLimitGroup, Since: "0.2.0",
		Summary: "Returns the requests a sliding-log key holds, oldest first, each as its Unix time in milliseconds and its quantity.",
		Run:     swLog, Shared: storeSWLog,
	}
}

// maxSWLogCount is how many requests SW.LOG answers without COUNT: every
// request an SW key holds, since a log never holds more than its limit.
const maxSWLogCount = engine.MaxWindowLimit

const msgSWLogOption = "ERR syntax error: SW.LOG takes key [WINDOW window] [COUNT n]"

// swLogArgs are SW.LOG's arguments.
type swLogArgs struct {
	window int64 // ns; 0: every request held
	count  int
}

// parseSWLogArgs reads key [WINDOW window] [COUNT n] (args[0] is the name).
func parseSWLogArgs(args [][]byte) (swLogArgs, string) {
	a := swLogArgs{count: maxSWLogCount}
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, msgSyntax
		}
		switch v := args[i+1]; {
		case equalFold(args[i], "count"):
			n, msg := parseCount(v, maxSWLogCount)
			if msg != "" {
				return a, msg
			}
			a.count = n
		case equalFold(args[i], "window"):
			w, ok := parseWindow(v)
			if !ok {
				return a, msgWindowDuration
			}
			a.window = w
		default:
			return a, msgSWLogOption
		}
	}
	return a, ""
}

// swLog answers the requests as an array of [ms, quantity] pairs.
func swLog(cx *Context, w Writer, args [][]byte) {
	// >> Args
	a, msg := parseSWLogArgs(args)
	if msg != "" {
		w.WriteError(msg)
		return
	}

	// >> Operation
	log, err := cx.Engine().SWLog(cx.Tx, args[1], a.window, a.count)

	// >> Response
	writeSWLog(w, log, err)
}

// storeSWLog is SW.LOG in shared mode: the key's state is read from the
// store, and the window judged at the store's clock, as its decisions are.
func storeSWLog(cx *Context, w Writer, args [][]byte) {
	a, msg := parseSWLogArgs(args)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	key, now := string(args[1]), cx.store().Now
	cx.offload(w, func(ctx context.Context, st Store, w Writer) {
		rec, ok, err := st.Record(ctx, key)
		switch {
		case err != nil:
			w.WriteError(storeFailed(err))
		case !ok:
			writeSWLog(w, nil, nil)
		case rec.Family != engine.FamilySW:
			writeSWLog(w, nil, engine.ErrWrongType)
		default:
			writeSWLog(w, engine.RecordLog(&rec, now().UnixNano(), a.window, a.count), nil)
		}
	})
}

// writeSWLog writes the requests, each [Unix ms, quantity], or the error.
func writeSWLog(w Writer, log []engine.LogEntry, err error) {
	if err != nil {
		w.WriteError(msgWrongType)
		return
	}
	w.WriteArray(len(log))
	for _, e := range log {
		w.WriteArray(2)
		w.WriteInt(e.At / int64(time.Millisecond))
		w.WriteInt(int64(e.Quantity))
	}
}

// parseCount reads a COUNT option's value: a positive integer, capped at
// most; it returns the error text when it is not one.
func parseCount(b []byte, most int64) (int, string) {
	n, ok := ParseInt(b)
	switch {
	case !ok:
		return 0, msgNotInteger
	case n <= 0:
		return 0, msgPositive
	}
	return int(min(n, most)), ""
}
