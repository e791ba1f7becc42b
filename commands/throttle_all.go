package commands

import (
	"fmt"
	"strings"

	"github.com/cellserver/cellserver/engine"
)

// throttleAllCommand is THROTTLE.ALL rule [rule ...] [QUANTITY n] [MS]:
// several limits checked as one, all or nothing. Its keys are wherever the
// rules put them, so its row finds them with a Keys function (movablekeys).
func throttleAllCommand() *Command {
	return &Command{
		// Arity: the name and at least one SW, SWC or FW rule of 4 tokens.
		Name: "throttle.all", Arity: -5, Flags: FlagWrite | FlagOverlap,
		Keys: throttleAllKeys, KeySpecFlags: []string{"RW", "access", "update"},
		Group: rateLimitGroup, Since: "0.1.0",
		Summary: "Admits a request only if every rule admits it, and then records it under every rule; otherwise records nothing.",
		Run:     throttleAll,
	}
}

// throttleAllArgs are THROTTLE.ALL's arguments.
type throttleAllArgs struct {
	rules    []engine.Rule
	quantity int64
	millis   bool // MS: times in milliseconds
}

// ruleSyntax is one rule family's word and its fields after the word.
type ruleSyntax struct {
	family engine.Family
	word   string // as the client may write it, lower case
	name   string // as errors print it
	fields int    // key and numbers
	usage  string
}

// ruleSyntaxes lists THROTTLE.ALL's rule families. Read-only.
var ruleSyntaxes = [...]ruleSyntax{
	{engine.FamilyCL, "cl", "CL", 4, "CL takes key max_burst count period"},
	{engine.FamilySW, "sw", "SW", 3, "SW takes key limit window"},
	{engine.FamilySWC, "swc", "SWC", 3, "SWC takes key limit window"},
	{engine.FamilyFW, "fw", "FW", 3, "FW takes key limit window"},
}

// ruleSyntaxOf returns the rule family word names, or nil.
func ruleSyntaxOf(word []byte) *ruleSyntax {
	for i := range ruleSyntaxes {
		if equalFold(word, ruleSyntaxes[i].word) {
			return &ruleSyntaxes[i]
		}
	}
	return nil
}

// isThrottleAllWord reports whether b is a rule family or an option of
// THROTTLE.ALL: where a number should be, it means the rule ended early.
func isThrottleAllWord(b []byte) bool {
	return ruleSyntaxOf(b) != nil || equalFold(b, "quantity") || equalFold(b, "ms")
}

func throttleAll(cx *Context, w Writer, args [][]byte) {
	// >> Args
	a, msg := parseThrottleAll(args, cx.Client.rules[:0])
	defer cx.Client.keepRules(a.rules)
	if msg != "" {
		w.WriteError(msg)
		return
	}

	// >> Operation
	if st := cx.store(); st != nil {
		// The client's buffer is emptied on return: the store is given
		// the tally's copy of the rules (it copies what it keeps).
		if l := cx.pauseDecision(w, cx.tallyRules(a.rules), a.millis); l != nil {
			st.ThrottleAll(l.t.rules, a.quantity, l.done)
			return
		}
		t := cx.tallyRules(a.rules).detach()
		storeDecision(cx, t, w, a.millis, func(done func(engine.Decision, error)) {
			st.ThrottleAll(t.rules, a.quantity, done)
		})
		return
	}
	d, err := cx.Engine().ThrottleAll(cx.Tx, a.rules, a.quantity)

	// >> Response
	writeDecision(cx.tallyRules(a.rules), w, d, err, a.millis)
}

// throttleAllKeys returns THROTTLE.ALL's keys, one per rule, or none when
// the arguments are not valid (the handler then touches no key).
func throttleAllKeys(args [][]byte) [][]byte {
	a, msg := parseThrottleAll(args, nil)
	if msg != "" {
		return nil
	}
	keys := make([][]byte, len(a.rules))
	for i, r := range a.rules {
		keys[i] = r.Key
	}
	return keys
}

// parseThrottleAll reads THROTTLE.ALL's rules and options (args[0] is the
// command's name). Where a rule may start, a word is a rule family (CL, SW,
// SWC, FW) or an option (QUANTITY n, MS), in any case; a rule's fields are
// positional, so a key may be any bytes. It returns the error text when the
// arguments are not valid. That two rules name the same key is the
// engine's to find (engine.DuplicateKeyError). The rules are appended to
// rules, which may be a reused buffer.
func parseThrottleAll(args [][]byte, rules []engine.Rule) (throttleAllArgs, string) {
	a := throttleAllArgs{quantity: 1, rules: rules}
	sawQuantity := false
	for i := 1; i < len(args); {
		word := args[i]
		if equalFold(word, "ms") {
			if a.millis {
				return a, fmt.Sprintf(msgAllTwice, "MS")
			}
			a.millis = true
			i++
			continue
		}
		if equalFold(word, "quantity") {
			if sawQuantity {
				return a, fmt.Sprintf(msgAllTwice, "QUANTITY")
			}
			sawQuantity = true
			// A rule family or an option where the value should be means
			// the value was left out, as at the end.
			if i+1 >= len(args) || isThrottleAllWord(args[i+1]) {
				return a, msgAllQuantityMissing
			}
			n, ok := parseQuantity(args[i+1])
			if !ok {
				return a, msgQuantity
			}
			a.quantity = n
			i += 2
			continue
		}
		if equalFold(word, "lb") {
			return a, msgAllLeaky
		}
		syn := ruleSyntaxOf(word)
		if syn == nil {
			return a, fmt.Sprintf(msgAllUnknown, QuoteArg(word))
		}
		num := len(a.rules) + 1
		fields := args[i+1 : min(i+1+syn.fields, len(args))]
		if len(fields) < syn.fields || anyWord(fields[1:]) {
			return a, fmt.Sprintf(msgAllIncomplete, num, syn.usage)
		}
		r, msg := parseRule(syn, fields)
		if msg != "" {
			return a, fmt.Sprintf(msgAllInRule, num, syn.name, msg)
		}
		a.rules = append(a.rules, r)
		i += 1 + syn.fields
	}
	if len(a.rules) == 0 {
		return a, msgAllNoRule
	}
	return a, ""
}

// anyWord reports whether any of a rule's numeric fields is one of
// THROTTLE.ALL's words, which means the rule is missing fields.
func anyWord(fields [][]byte) bool {
	for _, f := range fields {
		if isThrottleAllWord(f) {
			return true
		}
	}
	return false
}

// parseRule reads one rule's fields (key, then its numbers). It returns
// the problem, without the error code, when they are not valid.
func parseRule(syn *ruleSyntax, fields [][]byte) (engine.Rule, string) {
	r := engine.Rule{Key: fields[0], Family: syn.family}
	if syn.family == engine.FamilyCL {
		// redis-cell's integers and arithmetic, so that a CL rule decides as
		// CL.THROTTLE does on the same key.
		var nums [3]int64
		for i, name := range [...]string{"max_burst", "count", "period"} {
			n, ok := parseCellInt(fields[1+i])
			if !ok {
				return r, fmt.Sprintf(msgAllCellInt, name)
			}
			nums[i] = n
		}
		r.GCRA = engine.GCRAQuota{MaxBurst: nums[0], Count: nums[1], Period: nums[2]}
		if r.GCRA.ZeroRate() {
			// Refused here, by the engine's rule, to name the rule and its
			// problem as the parser names every other.
			return r, msgAllZeroRate
		}
		return r, ""
	}
	var msg string
	if r.Window.Limit, msg = parseWindowLimit(fields[1]); msg != "" {
		return r, strings.TrimPrefix(msg, "ERR ")
	}
	var ok bool
	if r.Window.Window, ok = parseWindow(fields[2]); !ok {
		return r, strings.TrimPrefix(msgWindowDuration, "ERR ")
	}
	return r, ""
}
