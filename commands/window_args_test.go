package commands

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

func TestParseWindow(t *testing.T) {
	const second = int64(time.Second)
	good := map[string]int64{
		"1": second, "10": 10 * second, "010": 10 * second, "10s": 10 * second, "10S": 10 * second,
		"250ms": 250_000_000, "250MS": 250_000_000, "250mS": 250_000_000, "1ms": 1_000_000,
		"5m": 300 * second, "5M": 300 * second, "1h": 3600 * second, "1H": 3600 * second,
		"1d": 86400 * second, "1D": 86400 * second,
		"3153600000": engine.MaxWindow, "36500d": engine.MaxWindow, "876000h": engine.MaxWindow,
		"52560000m": engine.MaxWindow, "3153600000000ms": engine.MaxWindow,
	}
	for in, want := range good {
		if got, ok := parseWindow([]byte(in)); !ok || got != want {
			t.Errorf("parseWindow(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"", "0", "00", "0s", "0ms", "0d", "-1", "+1", "-1s", "1.5", "1.5s", "1e3", "10x", "10sec", "1us", "1ns",
		"s", "ms", " 1", "1 ", "1 s", "0x10", "3153600001", "36501d", "876001h", "3153600000001ms",
		"9223372036854775807", "9223372036854775808", "99999999999999999999999999d", "1\xff",
	} {
		if got, ok := parseWindow([]byte(in)); ok {
			t.Errorf("parseWindow(%q) = %d, want refused", in, got)
		}
	}
}

// TestWindowArgErrors: every bad argument gets an error naming the problem
// and writes nothing, for each family.
func TestWindowArgErrors(t *testing.T) {
	limit, window, quantity := wantErr(msgWindowLimit), wantErr(msgWindowDuration), wantErr(msgQuantity)
	cases := []struct {
		args string // after the command's name
		want string
	}{
		{"k 0 10", limit}, {"k -1 10", limit}, {"k 4294967296 10", limit}, {"k abc 10", limit},
		{"k 1.5 10", limit}, {"k 9223372036854775808 10", limit}, {"k + 10", limit}, {"k +x 10", limit},
		{"k -05 10", limit}, {"k 0 10", limit},
		// In range, but spelt as Redis does not read integers: the error
		// says which rule the spelling breaks.
		{"k +5 10", wantErr("ERR limit must be written without a sign: Redis reads integers without '+'")},
		{"k +05 10", wantErr(msgWindowLimitSign)},
		{"k 05 10", wantErr("ERR limit must be written without leading zeros, as Redis reads integers")},
		{"k 00 10", wantErr(msgWindowLimitZero)},
		{"k 5 0", window}, {"k 5 -1", window}, {"k 5 1.5", window}, {"k 5 10x", window}, {"k 5 ms", window},
		{"k 5 3153600001", window}, {"k 5 36501d", window}, {"k 5 1us", window},
		{"k 5 10 -1", quantity}, {"k 5 10 x", quantity}, {"k 5 10 1.5", quantity}, {"k 5 10 +1", quantity},
		{"k 5 10 01", quantity},
		{"k 5 10 1 XX", wantErr("ERR unknown option 'XX'; the only option is MS")},
		{"k 5 10 MS XX", wantErr("ERR unknown option 'XX'; the only option is MS")},
		{"k 5 10 1 MS 2", wantErr("ERR unknown option '2'; the only option is MS")},
		{"k 0 0 -1 XX", limit}, // the first problem is named
	}
	for _, name := range []string{"SW.THROTTLE", "SWC.THROTTLE", "FW.THROTTLE"} {
		h := newHarness(t)
		for _, c := range cases {
			if got := h.do(strings.Fields(name + " " + c.args)...); got != c.want {
				t.Errorf("%s %s:\n got %q\nwant %q", name, c.args, got, c.want)
			}
		}
		lower := strings.ToLower(name)
		h.runSteps([]replyStep{
			{[]string{name, "k", "5"}, wantErr("ERR wrong number of arguments for '" + lower + "' command")},
			{[]string{name, "k", "5", "10", "1", "MS\r\nPING"}, wantErr("ERR unknown option 'MS  PING'; the only option is MS")},
			{[]string{"DBSIZE"}, ":0\r\n"},
		})
	}
}

// TestWindowArgsAccepted: the extremes of each argument, and the window's
// units, reach the engine as meant (the reply's reset is the window).
func TestWindowArgsAccepted(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "FW.THROTTLE big 4294967295 10 4294967295", ints(0, 4294967295, 0, -1, 10)},
		{0, "SW.THROTTLE big2 4294967295 10 4294967295", ints(0, 4294967295, 0, -1, 10)},
		{0, "SW.THROTTLE big2 4294967295 10 9223372036854775807", ints(1, 4294967295, 0, -1, 10)},
		{0, "SW.THROTTLE y 1 36500d", ints(0, 1, 0, -1, 3153600000)},
		{0, "SW.THROTTLE y2 1 3153600000 1 MS", ints(0, 1, 0, -1, 3153600000000)},
		{0, "SW.THROTTLE u1 1 5M", ints(0, 1, 0, -1, 300)},
		{0, "SW.THROTTLE u2 1 1H", ints(0, 1, 0, -1, 3600)},
		{0, "SW.THROTTLE u3 1 1d", ints(0, 1, 0, -1, 86400)},
		{0, "SW.THROTTLE u4 1 010", ints(0, 1, 0, -1, 10)},
		{0, "SW.THROTTLE u5 1 1ms ms", ints(0, 1, 0, -1, 1)},
		{0, "SW.THROTTLE u6 1 1ms", ints(0, 1, 0, -1, 1)},
		{0, "SW.THROTTLE u7 1 10 MS MS", ints(0, 1, 0, -1, 10000)},
	})
}

// TestWindowOutOfMemory: a new key that does not fit maxmemory gets Redis's
// OOM error and nothing is written.
func TestWindowOutOfMemory(t *testing.T) {
	clock := engine.NewManualClock(time.Unix(1_795_336_200, 0))
	eng := engine.New(engine.Options{Now: clock.Now, SweepInterval: -1, MaxMemory: 1})
	t.Cleanup(eng.Close)
	h := &harness{t: t, clock: clock, eng: eng, cmds: New(Options{Engine: eng, Version: "test"}),
		client: NewClient(1, "127.0.0.1:50000", "127.0.0.1:6379", clock.Now())}
	oom := wantErr(msgOOM)
	h.runTimed([]timedStep{
		{0, "SW.THROTTLE k 5 10", oom},
		{0, "SWC.THROTTLE k 5 10", oom},
		{0, "FW.THROTTLE k 5 10 1 MS", oom},
		{0, "THROTTLE.ALL SW a 5 10 FW b 5 10", oom},
		{0, "SW.THROTTLE k 5 10 0", ints(0, 5, 5, -1, 0)}, // a peek needs no memory
		{0, "DBSIZE", ":0\r\n"},
	})
}

// TestWindowAllocs: on an existing key the window commands allocate
// nothing, the window's parsing included, beyond what the reply writer does.
func TestWindowAllocs(t *testing.T) {
	for _, c := range []struct {
		family engine.Family
		args   string
	}{
		{engine.FamilySW, "SW.THROTTLE k 100 1h 0"},
		{engine.FamilySW, "sw.throttle k 100 250ms 0 ms"},
		{engine.FamilySWC, "SWC.THROTTLE k 1000000 10s 1"},
		{engine.FamilySWC, "SWC.THROTTLE k 1000000 5m 0 MS"},
		{engine.FamilyFW, "FW.THROTTLE k 4294967295 1d 1 MS"},
		{engine.FamilyFW, "FW.THROTTLE k 100 60"},
	} {
		h := alignedHarness(t)
		h.do(strings.Fields(strings.Replace(c.args, " 0", " 1", 1))...)
		var args [][]byte
		for _, a := range strings.Fields(c.args) {
			args = append(args, []byte(a))
		}
		a, msg := parseWindowArgs(args)
		if msg != "" {
			t.Fatalf("%s: %s", c.args, msg)
		}
		rule := engine.Rule{Key: args[1], Family: c.family, Window: a.quota}
		engineAllocs := testing.AllocsPerRun(1000, func() {
			if _, err := h.eng.ThrottleWindow(nil, rule, a.quantity); err != nil {
				t.Fatal(err)
			}
		})
		w := discardWriter{}
		allocs := testing.AllocsPerRun(1000, func() { h.cmds.Dispatch(w, h.client, args) })
		if allocs != 0 {
			t.Errorf("%s: %v allocs per call (engine.ThrottleWindow alone: %v), want 0", c.args, allocs, engineAllocs)
		}
	}
}

func BenchmarkDispatchSWThrottle(b *testing.B) {
	h := newHarness(&testing.T{})
	args := [][]byte{[]byte("SW.THROTTLE"), []byte("user123"), []byte("100"), []byte("1h"), []byte("0")}
	h.do("SW.THROTTLE", "user123", "100", "1h")
	w := discardWriter{}
	b.ReportAllocs()
	for b.Loop() {
		h.cmds.Dispatch(w, h.client, args)
	}
}

// TestWindowCommandInfo: the rows as COMMAND INFO, DOCS and GETKEYS show them.
func TestWindowCommandInfo(t *testing.T) {
	h := newHarness(t)
	keySpec := "*1\r\n*6\r\n$5\r\nflags\r\n*3\r\n+RW\r\n+access\r\n+update\r\n" +
		"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n" +
		"*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
	info := func(name, flags, acl string) string {
		return "*1\r\n*10\r\n" + wantBulk(name) + wantInt(-4) + flags + ":1\r\n:1\r\n:1\r\n" + acl + "*0\r\n" + keySpec
	}
	fast := "*2\r\n+write\r\n+fast\r\n"
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "INFO", "sw.throttle"}, info("sw.throttle", "*1\r\n+write\r\n", "*2\r\n+@write\r\n+@slow\r\n")},
		{[]string{"COMMAND", "INFO", "SWC.THROTTLE"}, info("swc.throttle", fast, "*2\r\n+@write\r\n+@fast\r\n")},
		{[]string{"COMMAND", "INFO", "fw.throttle"}, info("fw.throttle", fast, "*2\r\n+@write\r\n+@fast\r\n")},
		{[]string{"COMMAND", "INFO", "lb.throttle"}, info("lb.throttle", fast, "*2\r\n+@write\r\n+@fast\r\n")},
		{[]string{"COMMAND", "GETKEYS", "SW.THROTTLE", "user:1", "10", "1m"}, wantArray(1) + wantBulk("user:1")},
		{[]string{"COMMAND", "DOCS", "fw.throttle"}, wantArray(2) + wantBulk("fw.throttle") + wantArray(6) +
			wantBulks("summary", "Admits a request if the fixed window it falls in, aligned to the Unix epoch, has room.",
				"since", "0.1.0", "group", "ratelimit")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "PATTERN", "*.throttle"},
			wantArray(5) + wantBulks("cl.throttle", "sw.throttle", "swc.throttle", "fw.throttle", "lb.throttle")},
	})
	if strconv.Itoa(engine.MaxWindowLimit) != strings.TrimPrefix(msgWindowLimit, "ERR limit must be an integer from 1 to ") {
		t.Errorf("msgWindowLimit %q does not name engine.MaxWindowLimit %d", msgWindowLimit, engine.MaxWindowLimit)
	}
}
