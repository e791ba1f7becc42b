package commands

import (
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
func clThrottle(cx *Context, w Writer, args [][]byte) {
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
	if st := cx.store(); st != nil {
		if l := cx.pauseDecision(w, cx.tallyKey(args[1], engine.FamilyCL), false); l != nil {
			st.Throttle(args[1], quota, nums[3], l.behind, l)
			return
		}
		t := cx.tallyKey(args[1], engine.FamilyCL).detach()
		key := args[1]
		cx.await(w, func(finish func(func(Writer))) {
			st.Throttle(key, quota, nums[3], false, engine.ThrottleFunc(func(res engine.Result, err error) {
				finish(func(w Writer) { writeThrottle(t, w, res, err) })
			}))
		})
		return
	}
	res, err := cx.Engine().Throttle(cx.Tx, args[1], quota, nums[3])

	// >> Response
	writeThrottle(cx.tallyKey(args[1], engine.FamilyCL), w, res, err)
}

// writeThrottle writes CL.THROTTLE's reply: its decision, or the reply to
// its error.
func writeThrottle(t tally, w Writer, res engine.Result, err error) {
	if err != nil {
		w.WriteError(engineErrorText(err, &cellTexts))
		return
	}
	writeResult(t, w, res)
}

// writeResult writes a throttle decision as CL.THROTTLE's five integers,
// and counts it, allowed or limited, for the running command.
func writeResult(t tally, w Writer, r engine.Result) {
	t.decided(r.Limited)
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
