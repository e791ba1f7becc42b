package commands

import (
	"fmt"

	"github.com/cellserver/cellserver/engine"
)

// windowCommands are the sliding-log, sliding-counter and fixed-window
// limits, the leaky-bucket queue (LB.THROTTLE), and THROTTLE.ALL, which
// checks several limits at once.
func windowCommands() []*Command {
	row := func(name string, f engine.Family, fast Flag, summary string) *Command {
		return &Command{
			Name: name, Arity: -4, Flags: FlagWrite | FlagOverlap | fast,
			FirstKey: 1, LastKey: 1, KeyStep: 1, KeySpecFlags: []string{"RW", "access", "update"},
			Group: rateLimitGroup, Since: "0.1.0", Summary: summary,
			Run: windowThrottle(f, name),
		}
	}
	return []*Command{
		// SW's limited answer walks the log to find retry_after: not fast.
		row("sw.throttle", engine.FamilySW, 0,
			"Admits a request if the requests recorded in the last window, plus this one, are at most the limit (a sliding log)."),
		row("swc.throttle", engine.FamilySWC, FlagFast,
			"Admits a request by a sliding-window counter: this window's count plus the previous window's, weighted by overlap."),
		row("fw.throttle", engine.FamilyFW, FlagFast,
			"Admits a request if the fixed window it falls in, aligned to the Unix epoch, has room."),
		leakyCommand(),
		throttleAllCommand(),
	}
}

// rateLimitGroup is the group COMMAND DOCS gives cellserver's own rate-limit
// commands (CL.THROTTLE is redis-cell's, in the module group).
const rateLimitGroup = "ratelimit"

// decidingCommands are the commands whose answer is allowed or limited,
// which metrics count as such instead of as ok.
func decidingCommands() []*Command {
	return append(throttleCommands(), windowCommands()...)
}

// windowArgs are SW.THROTTLE's, SWC.THROTTLE's and FW.THROTTLE's arguments.
type windowArgs struct {
	quota    engine.WindowQuota
	quantity int64
	millis   bool // MS: times in milliseconds
}

// windowThrottle returns the handler of family f's command name:
// name key limit window [quantity] [MS].
func windowThrottle(f engine.Family, name string) Handler {
	return func(cx *Context, w Writer, args [][]byte) {
		// >> Args
		a, msg := parseWindowArgs(args)
		if msg != "" {
			w.WriteError(msg)
			return
		}

		// >> Operation and Response
		decideRule(cx, w, engine.Rule{Key: args[1], Family: f, Window: a.quota}, a.quantity, a.millis)
	}
}

// decideRule decides one rule that is not CL.THROTTLE's (a window's, or
// LB.THROTTLE's), in the store in shared mode or else in the engine, and
// writes the decision, times in seconds or, with millis, milliseconds.
func decideRule(cx *Context, w Writer, rule engine.Rule, quantity int64, millis bool) {
	t := cx.tallyKey(rule.Key, rule.Family)
	if st := cx.store(); st != nil {
		if l := cx.pauseDecision(w, t, millis); l != nil {
			st.ThrottleWindow(rule, quantity, l.behind, l.done)
			return
		}
		storeDecision(cx, t.detach(), w, millis, func(done func(engine.Decision, error)) {
			st.ThrottleWindow(rule, quantity, false, done)
		})
		return
	}
	d, err := cx.Engine().ThrottleWindow(cx.Tx, rule, quantity)
	writeDecision(t, w, d, err, millis)
}

// parseWindowArgs reads key limit window [quantity] [MS] (args[0] is the
// command's name); it returns the error text when they are not valid.
// It allocates only for an error that quotes an argument.
func parseWindowArgs(args [][]byte) (windowArgs, string) {
	a := windowArgs{quantity: 1}
	var msg string
	if a.quota.Limit, msg = parseWindowLimit(args[2]); msg != "" {
		return a, msg
	}
	var ok bool
	if a.quota.Window, ok = parseWindow(args[3]); !ok {
		return a, msgWindowDuration
	}
	rest := args[4:]
	if len(rest) > 0 && !equalFold(rest[0], "ms") {
		if a.quantity, ok = parseQuantity(rest[0]); !ok {
			return a, msgQuantity
		}
		rest = rest[1:]
	}
	for _, opt := range rest {
		if !equalFold(opt, "ms") {
			return a, fmt.Sprintf(msgWindowOption, QuoteArg(opt))
		}
		a.millis = true
	}
	return a, ""
}

// parseWindowLimit reads a window family's limit: an integer from 1 to
// engine.MaxWindowLimit, written as Redis writes integers. It returns the
// error text when b is not one: a limit such as +3 or 03, which redis-cell's
// CL.THROTTLE would take, is told which of Redis's rules it breaks rather
// than that it is out of range.
func parseWindowLimit(b []byte) (int64, string) {
	n, ok := ParseInt(b)
	if ok && n >= 1 && n <= engine.MaxWindowLimit {
		return n, ""
	}
	if !ok && len(b) > 1 && allDigits(b[1:]) {
		switch b[0] {
		case '+':
			return 0, msgWindowLimitSign
		case '0':
			return 0, msgWindowLimitZero
		}
	}
	return 0, msgWindowLimit
}

// allDigits reports whether b is ASCII digits only.
func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseQuantity reads a quantity: an integer of at least 0 (0 peeks).
func parseQuantity(b []byte) (int64, bool) {
	n, ok := ParseInt(b)
	return n, ok && n >= 0
}

// parseWindow reads a window as nanoseconds: ASCII digits, then nothing
// (seconds) or a unit in any case: ms, s, m, h or d. Zero, a sign, a
// fraction, another unit or more than engine.MaxWindow is refused. It
// allocates nothing.
func parseWindow(b []byte) (int64, bool) {
	digits := 0
	for digits < len(b) && '0' <= b[digits] && b[digits] <= '9' {
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	unit := windowUnit(b[digits:])
	if unit == 0 {
		return 0, false
	}
	most := engine.MaxWindow / unit // the largest count of units allowed
	n := int64(0)
	for _, c := range b[:digits] {
		d := int64(c - '0')
		if n > (most-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if n == 0 {
		return 0, false
	}
	return n * unit, true
}

// windowUnit returns the nanoseconds in the unit suffix names (none means
// seconds), or 0 for an unknown unit.
func windowUnit(suffix []byte) int64 {
	const second = 1_000_000_000
	switch {
	case len(suffix) == 0, equalFold(suffix, "s"):
		return second
	case equalFold(suffix, "ms"):
		return second / 1000
	case equalFold(suffix, "m"):
		return 60 * second
	case equalFold(suffix, "h"):
		return 3600 * second
	case equalFold(suffix, "d"):
		return 86400 * second
	}
	return 0
}

// writeDecision writes a window or THROTTLE.ALL reply: the decision in
// CL.THROTTLE's shape, times in seconds rounded up or, with millis, in
// milliseconds, counted as allowed or limited; or the reply to its error.
func writeDecision(t tally, w Writer, d engine.Decision, err error, millis bool) {
	if err != nil {
		w.WriteError(engineErrorText(err, &ruleTexts))
		return
	}
	r := d.Seconds()
	if millis {
		r = d.Millis()
	}
	writeResult(t, w, r)
}

// storeDecision sends a window or THROTTLE.ALL decision to the shared
// store; its reply goes out when the store has decided, counted in t,
// which the caller has detached.
func storeDecision(cx *Context, t tally, w Writer, millis bool, decide func(done func(engine.Decision, error))) {
	cx.await(w, func(finish func(func(Writer))) {
		decide(func(d engine.Decision, err error) {
			finish(func(w Writer) { writeDecision(t, w, d, err, millis) })
		})
	})
}
