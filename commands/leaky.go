package commands

import (
	"fmt"

	"github.com/cellserver/cellserver/engine"
)

// leakyCommand is LB.THROTTLE key count period [quantity] [MAXWAIT
// duration] [MS]: a leaky bucket as a queue, which paces requests to count
// per period by telling each caller how long to wait for its departure.
func leakyCommand() *Command {
	return &Command{
		Name: "lb.throttle", Arity: -4, Flags: FlagWrite | FlagOverlap | FlagFast,
		FirstKey: 1, LastKey: 1, KeyStep: 1, KeySpecFlags: []string{"RW", "access", "update"},
		Group: rateLimitGroup, Since: "0.1.0",
		Summary: "Reserves the next free departures of a queue leaving at count per period, and answers how long to wait for them (a leaky bucket as a queue).",
		Run:     leakyThrottle,
	}
}

// leakyArgs are LB.THROTTLE's arguments.
type leakyArgs struct {
	quota    engine.LeakyQuota
	quantity int64
	millis   bool // MS: times in milliseconds
}

func leakyThrottle(cx *Context, w Writer, args [][]byte) {
	// >> Args
	a, msg := parseLeakyArgs(args)
	if msg != "" {
		w.WriteError(msg)
		return
	}

	// >> Operation and Response
	decideRule(cx, w, engine.Rule{Key: args[1], Family: engine.FamilyLB, Leaky: a.quota}, a.quantity, a.millis)
}

// parseLeakyArgs reads key count period [quantity] [MAXWAIT duration] [MS]
// (args[0] is the command's name); it returns the error text when they are
// not valid. MAXWAIT defaults to one period.
func parseLeakyArgs(args [][]byte) (leakyArgs, string) {
	a := leakyArgs{quantity: 1}
	n, msg := parseWindowLimit(args[2])
	if msg != "" {
		return a, msgLeakyCount
	}
	a.quota.Count = n
	var ok bool
	if a.quota.Period, ok = parseWindow(args[3]); !ok {
		return a, msgLeakyPeriod
	}
	a.quota.MaxWait = a.quota.Period
	rest := args[4:]
	if len(rest) > 0 && !equalFold(rest[0], "ms") && !equalFold(rest[0], "maxwait") {
		if a.quantity, ok = parseQuantity(rest[0]); !ok {
			return a, msgQuantity
		}
		rest = rest[1:]
	}
	sawWait := false
	for len(rest) > 0 {
		opt := rest[0]
		switch {
		case equalFold(opt, "ms"):
			if a.millis {
				return a, fmt.Sprintf(msgAllTwice, "MS")
			}
			a.millis = true
			rest = rest[1:]
		case equalFold(opt, "maxwait"):
			if sawWait {
				return a, fmt.Sprintf(msgAllTwice, "MAXWAIT")
			}
			sawWait = true
			if len(rest) < 2 {
				return a, msgLeakyMaxWait
			}
			if a.quota.MaxWait, ok = parseMaxWait(rest[1]); !ok {
				return a, msgLeakyMaxWait
			}
			rest = rest[2:]
		default:
			return a, fmt.Sprintf(msgLeakyOption, QuoteArg(opt))
		}
	}
	return a, ""
}

// parseMaxWait reads MAXWAIT's duration: a window (parseWindow), or zero
// written with or without a unit (0, 0ms, 0s: never wait).
func parseMaxWait(b []byte) (int64, bool) {
	if d, ok := parseWindow(b); ok {
		return d, true
	}
	zeros := 0
	for zeros < len(b) && b[zeros] == '0' {
		zeros++
	}
	return 0, zeros > 0 && windowUnit(b[zeros:]) != 0
}
