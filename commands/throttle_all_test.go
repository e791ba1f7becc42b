package commands

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestThrottleAllAllOrNothing: a request limited by one rule is recorded
// under none, and the reply combines the rules: the least remaining (the
// first on a tie), the largest retry_after among the limiting rules, the
// largest reset_after of all.
func TestThrottleAllAllOrNothing(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "THROTTLE.ALL SW a 2 10 FW b 5 1m", ints(0, 2, 1, -1, 60)},
		{0, "THROTTLE.ALL SW a 2 10 FW b 5 1m", ints(0, 2, 0, -1, 60)},
		// SW limits: FW records nothing, and reports its state as it is.
		{0, "THROTTLE.ALL SW a 2 10 FW b 5 1m", ints(1, 2, 0, 10, 60)},
		{0, "FW.THROTTLE b 5 1m 0", ints(0, 5, 3, -1, 60)},
		{0, "SW.THROTTLE a 2 10 0", ints(0, 2, 0, -1, 10)},
		{0, "PTTL b", ":59999\r\n"},
		// At 10s the SW requests have left.
		{10 * time.Second, "THROTTLE.ALL SW a 2 10 FW b 5 1m", ints(0, 2, 1, -1, 50)},
		{0, "THROTTLE.ALL SW a 2 10 FW b 5 1m QUANTITY 2", ints(1, 2, 1, 10, 50)},
		{0, "THROTTLE.ALL FW b 5 1m SW a 2 10 quantity 1 ms", ints(0, 2, 0, -1, 50000)},
		{0, "FW.THROTTLE b 5 1m 0", ints(0, 5, 1, -1, 50)},
		// FW limits now; SW, which would admit, records nothing.
		{0, "THROTTLE.ALL FW b 5 1m SW c 2 10 QUANTITY 2", ints(1, 5, 1, 50, 50)},
		{0, "EXISTS c", ":0\r\n"},
	})
}

func TestThrottleAllCombine(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		// A tie on remaining: the first rule's limit.
		{0, "FW.THROTTLE x 4 1m", ints(0, 4, 3, -1, 60)},
		{0, "THROTTLE.ALL FW x 4 1m SW y 3 10", ints(0, 4, 2, -1, 60)},
		{0, "THROTTLE.ALL SW y 3 10 FW x 4 1m", ints(0, 3, 1, -1, 60)},
		// The largest retry among the limiting rules (FW's), not the
		// largest reset (SWC's, which limits nothing).
		{0, "THROTTLE.ALL SW s 1 10 FW f 1 1m SWC c 100 1h", ints(0, 1, 0, -1, 7200)},
		{5 * time.Second, "THROTTLE.ALL SW s 1 10 FW f 1 1m SWC c 100 1h", ints(1, 1, 0, 55, 7195)},
		{0, "THROTTLE.ALL SWC c 100 1h SW s 1 10 FW f 1 1m MS", ints(1, 1, 0, 55000, 7195000)},
		// A quantity one rule can never admit can never be admitted.
		{0, "THROTTLE.ALL SW s 1 10 FW f 1 1m SWC c 100 1h QUANTITY 2", ints(1, 1, 0, -1, 7195)},
		{0, "SWC.THROTTLE c 100 1h 0", ints(0, 100, 99, -1, 7195)},
		// Quantity 0 peeks at every rule and creates nothing.
		{0, "THROTTLE.ALL SW s 1 10 FW n 1 1m QUANTITY 0", ints(0, 1, 0, -1, 5)},
		{0, "EXISTS n", ":0\r\n"},
		{0, "PTTL s", ":4999\r\n"},
	})
}

// TestThrottleAllCL: a CL rule decides as CL.THROTTLE does on the same key,
// with redis-cell's rounding of its seconds.
func TestThrottleAllCL(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "THROTTLE.ALL CL cl 15 30 60", ints(0, 16, 15, -1, 2)},
		{0, "CL.THROTTLE cl 15 30 60", ints(0, 16, 14, -1, 4)},
		{0, "THROTTLE.ALL cl cl +15 030 60 QUANTITY 0", ints(0, 16, 14, -1, 4)},
		{0, "TYPE cl", "+string\r\n"},
		{0, "THROTTLE.ALL CL cl2 0 1 10 SW sw2 5 10", ints(0, 1, 0, -1, 10)},
		{0, "THROTTLE.ALL CL cl2 0 1 10 SW sw2 5 10", ints(1, 1, 0, 10, 10)},
		{0, "THROTTLE.ALL CL cl2 0 1 10 SW sw2 5 10 MS", ints(1, 1, 0, 10000, 10000)},
		{0, "SW.THROTTLE sw2 5 10 0", ints(0, 5, 4, -1, 10)},
		{0, "CL.THROTTLE cl2 0 1 10 0", ints(0, 1, 0, -1, 10)},
		{0, "THROTTLE.ALL SW cl 5 10 FW z 1 10", wantErr(msgWrongType + " (rule 1)")},
		{0, "THROTTLE.ALL FW z 1 10 CL sw2 15 30 60", wantErr(msgWrongType + " (rule 2)")},
		{0, "EXISTS z", ":0\r\n"},
	})
}

func TestThrottleAllErrors(t *testing.T) {
	h := alignedHarness(t)
	h.do("FW.THROTTLE", "keep", "5", "10")
	inRule := func(n int, family, msg string) string {
		return wantErr("ERR rule " + string(rune('0'+n)) + " (" + family + "): " + strings.TrimPrefix(msg, "ERR "))
	}
	clTakes := wantErr("ERR rule 1 is incomplete: CL takes key max_burst count period")
	cases := []struct {
		args string // after THROTTLE.ALL
		want string
	}{
		{"SW k 10", wantErr("ERR wrong number of arguments for 'throttle.all' command")},
		{"CL k 1 2", clTakes},
		{"CL k 1 2 MS", clTakes},
		{"SW a 10 1s FW b 5", wantErr("ERR rule 2 is incomplete: FW takes key limit window")},
		{"SW a 10 FW b 5 1m", wantErr("ERR rule 1 is incomplete: SW takes key limit window")},
		{"SWC a 10 MS QUANTITY", wantErr("ERR rule 1 is incomplete: SWC takes key limit window")},
		{"XX a 10 1s", wantErr("ERR unknown rule or option 'XX': a rule starts with CL, SW, SWC or FW; the options are QUANTITY n and MS")},
		{"SW a 10 1s 5", wantErr("ERR unknown rule or option '5': a rule starts with CL, SW, SWC or FW; the options are QUANTITY n and MS")},
		{"SW a 0 1s", inRule(1, "SW", msgWindowLimit)},
		{"SW a 1 1s FW b 4294967296 1s", inRule(2, "FW", msgWindowLimit)},
		{"SWC a 1 1x", inRule(1, "SWC", msgWindowDuration)},
		{"SW a 1 1s FW b 1 0", inRule(2, "FW", msgWindowDuration)},
		{"CL a x 30 60", wantErr("ERR rule 1 (CL): max_burst must be an integer")},
		{"CL a 15 30 1.5", wantErr("ERR rule 1 (CL): period must be an integer")},
		{"SW a 1 1s CL b 15 0 60", wantErr("ERR rule 2 (CL): zero rates are not supported: count and period must not be 0")},
		{"CL a 15 30 0", wantErr("ERR rule 1 (CL): zero rates are not supported: count and period must not be 0")},
		{"CL a 15 9223372036854775807 1", wantErr(msgAllRateRounds)},
		{"CL a -2 -30 60", wantErr(msgAllCellExpire)},
		{"SW a 1 1s FW a 1 1s", wantErr("ERR rules 1 and 2 name the same key; each rule needs a key of its own")},
		{"SW a 1 1s FW b 1 1s CL b 1 1 1", wantErr("ERR rules 2 and 3 name the same key; each rule needs a key of its own")},
		{"SW a 1 1s QUANTITY -1", wantErr(msgQuantity)},
		{"SW a 1 1s QUANTITY x", wantErr(msgQuantity)},
		// QUANTITY without its value says so, also when a word follows.
		{"SW a 1 1s QUANTITY", wantErr("ERR QUANTITY needs a value: QUANTITY n, a non-negative integer")},
		{"QUANTITY SW a 1 1s", wantErr("ERR QUANTITY needs a value: QUANTITY n, a non-negative integer")},
		{"SW a 1 1s QUANTITY ms", wantErr("ERR QUANTITY needs a value: QUANTITY n, a non-negative integer")},
		// An option given twice is a syntax error, even with equal values.
		{"SW a 1 1s QUANTITY 1 QUANTITY 1", wantErr("ERR syntax error: QUANTITY is given twice")},
		{"QUANTITY 2 SW a 1 1s quantity 0", wantErr("ERR syntax error: QUANTITY is given twice")},
		{"SW a 1 1s MS MS", wantErr("ERR syntax error: MS is given twice")},
		{"ms SW a 1 1s QUANTITY 1 Ms", wantErr("ERR syntax error: MS is given twice")},
		// A limit spelt as redis-cell would take it is told why not.
		{"SW a +3 1s", inRule(1, "SW", msgWindowLimitSign)},
		{"SW a 1 1s FW b 03 1s", inRule(2, "FW", msgWindowLimitZero)},
		// WRONGTYPE stays the code; the rule is named after the text.
		{"SW keep 5 10", wantErr("WRONGTYPE Operation against a key holding the wrong kind of value (rule 1)")},
		{"FW a 1 1s SW keep 5 10", wantErr("WRONGTYPE Operation against a key holding the wrong kind of value (rule 2)")},
	}
	for _, c := range cases {
		if got := h.do(strings.Fields("THROTTLE.ALL " + c.args)...); got != c.want {
			t.Errorf("THROTTLE.ALL %s:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
	h.runSteps([]replyStep{
		{[]string{"DBSIZE"}, ":1\r\n"}, // nothing written but keep
		{[]string{"FW.THROTTLE", "keep", "5", "10", "0"}, ints(0, 5, 4, -1, 10)},
		{[]string{"THROTTLE.ALL", "SW", "a", "1", "1s", "a\r\nb"},
			wantErr("ERR unknown rule or option 'a  b': a rule starts with CL, SW, SWC or FW; the options are QUANTITY n and MS")},
	})
}

// TestThrottleAllMultiExec: THROTTLE.ALL in a transaction locks its rules'
// keys, found by its Keys function, with the transaction's other keys.
func TestThrottleAllMultiExec(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "MULTI", "+OK\r\n"},
		{0, "THROTTLE.ALL SW ma 2 10 FW mb 5 1m", "+QUEUED\r\n"},
		{0, "SW.THROTTLE ma 2 10", "+QUEUED\r\n"},
		{0, "THROTTLE.ALL SW ma 2 10 FW mb 5 1m CL mc 1 1 1", "+QUEUED\r\n"},
		{0, "THROTTLE.ALL SW ma 2 1x FW mb 5 1m", "+QUEUED\r\n"},
		{0, "EXEC", "*4\r\n" + ints(0, 2, 1, -1, 60) + ints(0, 2, 0, -1, 10) + ints(1, 2, 0, 10, 60) +
			wantErr("ERR rule 1 (SW): "+strings.TrimPrefix(msgWindowDuration, "ERR "))},
		{0, "FW.THROTTLE mb 5 1m 0", ints(0, 5, 4, -1, 60)},
		{0, "EXISTS mc", ":0\r\n"},
	})
}

// TestThrottleAllCommandInfo: THROTTLE.ALL's keys move, as COMMAND INFO
// says (movablekeys, no key positions); COMMAND GETKEYS finds them.
func TestThrottleAllCommandInfo(t *testing.T) {
	h := newHarness(t)
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "INFO", "throttle.all"}, "*1\r\n*10\r\n" + wantBulk("throttle.all") + wantInt(-5) +
			"*2\r\n+write\r\n+movablekeys\r\n:0\r\n:0\r\n:0\r\n*2\r\n+@write\r\n+@slow\r\n*0\r\n*0\r\n*0\r\n"},
		{[]string{"COMMAND", "GETKEYS", "THROTTLE.ALL", "SW", "a", "2", "10", "CL", "b", "1", "2", "3", "QUANTITY", "2", "MS"},
			wantArray(2) + wantBulks("a", "b")},
		{[]string{"COMMAND", "GETKEYS", "THROTTLE.ALL", "fw", "ms", "2", "10", "swc", "quantity", "1", "1s"},
			wantArray(2) + wantBulks("ms", "quantity")},
		{[]string{"COMMAND", "GETKEYSANDFLAGS", "THROTTLE.ALL", "SW", "a", "2", "10"},
			wantArray(1) + wantArray(2) + wantBulk("a") + "*3\r\n+RW\r\n+access\r\n+update\r\n"},
		{[]string{"COMMAND", "GETKEYS", "THROTTLE.ALL", "SW", "a", "2", "1x"}, wantErr(msgInvalidArguments)},
		{[]string{"COMMAND", "GETKEYS", "THROTTLE.ALL", "SW", "a", "2"}, wantErr(msgInvalidArgCount)},
		{[]string{"COMMAND", "DOCS", "throttle.all"}, wantArray(2) + wantBulk("throttle.all") + wantArray(6) +
			wantBulks("summary", "Admits a request only if every rule admits it, and then records it under every rule; otherwise records nothing.",
				"since", "0.1.0", "group", "ratelimit")},
	})
}

func TestThrottleAllMetrics(t *testing.T) {
	h := alignedHarness(t)
	for range 3 {
		h.do("THROTTLE.ALL", "SW", "a", "2", "10", "FW", "b", "5", "60") // allowed, allowed, limited
	}
	h.do("THROTTLE.ALL", "SW", "a", "2", "10", "FW", "a", "5", "60") // error
	m := metricsOf(t, h.cmds, "throttle.all")
	if got, want := outcomesOf(m), (outcomes{allowed: 2, limited: 1, errors: 1, calls: 4}); got != want || !m.Decides {
		t.Errorf("throttle.all: %+v decides %v, want %+v, decides", got, m.Decides, want)
	}
}

// TestThrottleAllManyRules: many rules are checked for a repeated key in
// linear time, and the reply still names the two rules.
func TestThrottleAllManyRules(t *testing.T) {
	h := alignedHarness(t)
	args := []string{"THROTTLE.ALL"}
	for i := range 40 {
		args = append(args, "FW", "k"+strconv.Itoa(i), "5", "10")
	}
	if got, want := h.do(args...), ints(0, 5, 4, -1, 10); got != want {
		t.Errorf("40 rules: %q, want %q", got, want)
	}
	args = append(args, "SW", "k3", "5", "10")
	if got, want := h.do(args...), wantErr("ERR rules 4 and 41 name the same key; each rule needs a key of its own"); got != want {
		t.Errorf("a repeated key: %q, want %q", got, want)
	}
	if got, want := h.do("FW.THROTTLE", "k39", "5", "10", "0"), ints(0, 5, 4, -1, 10); got != want {
		t.Errorf("after: %q, want %q", got, want)
	}
}

// TestThrottleAllParsingAllocatesNothing checks that THROTTLE.ALL parses
// its rules into the client's kept buffer: what allocates is the engine's
// transaction, not the parsing.
func TestThrottleAllParsingAllocatesNothing(t *testing.T) {
	args := [][]byte{[]byte("THROTTLE.ALL"), []byte("SW"), []byte("a"), []byte("10"), []byte("1s"),
		[]byte("FW"), []byte("b"), []byte("100"), []byte("1m")}
	cl := &Client{}
	allocs := testing.AllocsPerRun(1000, func() {
		a, msg := parseThrottleAll(args, cl.rules[:0])
		if msg != "" || len(a.rules) != 2 {
			t.Fatalf("parse: %q, %d rules", msg, len(a.rules))
		}
		cl.keepRules(a.rules)
	})
	if allocs != 0 {
		t.Errorf("parsing THROTTLE.ALL: %v allocs, want 0", allocs)
	}
	if len(cl.rules) != 0 || cap(cl.rules) < 2 {
		t.Errorf("kept buffer: len %d cap %d, want empty with room for 2", len(cl.rules), cap(cl.rules))
	}
	if r := cl.rules[:2]; r[0].Key != nil || r[1].Key != nil {
		t.Error("kept buffer still holds the request's keys")
	}
}
