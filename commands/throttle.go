package commands

import (
	"errors"

	"github.com/cellserver/cellserver/engine"
)

// throttleCommands are the rate-limit commands.
func throttleCommands() []*Command {
	return []*Command{{
		Name: "cl.throttle", Arity: -1, Flags: FlagWrite | FlagModule | FlagOverlap,
		FirstKey: 1, LastKey: 1, KeyStep: 1, KeySpecFlags: []string{"RW", "access", "update"},
		Group: "module", Module: "redis-cell",
		Run: clThrottle,
	}}
}

// clThrottle is CL.THROTTLE key max_burst count period [quantity], answering
// as redis-cell 0.5 does, errors included.
func clThrottle(ctx *Context, w Writer, args [][]byte) {
	// >> Args
	if len(args) != 5 && len(args) != 6 {
		w.WriteError(msgCellUsage)
		return
	}
	var nums [4]int64
	nums[3] = 1
	for i, a := range args[2:] {
		n, ok := parseCellInt(a)
		if !ok {
			w.WriteError(oneLine(msgCellParseInt + string(a)))
			return
		}
		nums[i] = n
	}
	quota := engine.GCRAQuota{MaxBurst: nums[0], Count: nums[1], Period: nums[2]}

	// >> Operation
	res, err := ctx.Engine().Throttle(ctx.Tx, args[1], quota, nums[3])

	// >> Response
	switch {
	case errors.Is(err, engine.ErrZeroRate):
		w.WriteError(msgCellZeroRate)
	case errors.Is(err, engine.ErrExpire):
		w.WriteError(msgCellExpire)
	case errors.Is(err, engine.ErrWrongType):
		w.WriteError(msgWrongType)
	case errors.Is(err, engine.ErrOutOfMemory):
		w.WriteError(msgOOM)
	case err != nil:
		w.WriteError("ERR " + err.Error())
	default:
		writeResult(ctx, w, res)
	}
}

// writeResult writes a throttle decision as CL.THROTTLE's five integers,
// and counts it, allowed or limited, for the running command.
func writeResult(ctx *Context, w Writer, r engine.Result) {
	ctx.countDecision(r.Limited)
	limited := int64(0)
	if r.Limited {
		limited = 1
	}
	w.WriteArray(5)
	w.WriteInt(limited)
	w.WriteInt(r.Limit)
	w.WriteInt(r.Remaining)
	w.WriteInt(r.RetryAfter)
	w.WriteInt(r.ResetAfter)
}
