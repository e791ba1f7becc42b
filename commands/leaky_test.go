package commands

import (
	"strings"
	"testing"
)

// TestLBThrottle walks a queue of 10 per second (one departure every
// 100ms, MAXWAIT one second: 11 places) through steady calls, a burst
// queued up to MAXWAIT and then refused, a quantity above its capacity, a
// peek, MS, and the key's expiry when the queue empties.
func TestLBThrottle(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "LB.THROTTLE k 10 1 0", ints(0, 11, 11, 0, 0)},
		{0, "EXISTS k", ":0\r\n"},
		{0, "LB.THROTTLE k 10 1", ints(0, 11, 10, 0, 1)},
		{0, "LB.THROTTLE k 10 1s 1 MS", ints(0, 11, 9, 100, 200)},
		{0, "TYPE k", "+lb\r\n"},
		{0, "PTTL k", ":199\r\n"},
		{0, "LB.THROTTLE k 10 1 9 MS", ints(0, 11, 0, 200, 1100)},
		{0, "LB.THROTTLE k 10 1 1 MS", ints(1, 11, 0, 100, 1100)},
		{0, "LB.THROTTLE k 10 1", ints(1, 11, 0, 1, 2)},
		{0, "LB.THROTTLE k 10 1 12", ints(1, 11, 0, -1, 2)},
		// A longer MAXWAIT takes a place the default refused.
		{0, "LB.THROTTLE k 10 1 1 MAXWAIT 2s MS", ints(0, 21, 9, 1100, 1200)},
		{700 * ms, "LB.THROTTLE k 10 1 0 MS", ints(0, 11, 6, 500, 500)},
		// MAXWAIT 0: only a departure now.
		{0, "LB.THROTTLE k 10 1 1 MAXWAIT 0 MS", ints(1, 1, 0, 500, 500)},
		{0, "LB.THROTTLE k 10 250ms 1 MAXWAIT 0ms MS", ints(1, 1, 0, 500, 500)},
		{499 * ms, "EXISTS k", ":1\r\n"},
		{ms, "EXISTS k", ":0\r\n"},
		{0, "LB.THROTTLE k 10 1 1 ms maxwait 0", ints(0, 1, 0, 0, 100)},
		{0, "DEL k", ":1\r\n"},
		{0, "LB.THROTTLE k 10 1 1 MS", ints(0, 11, 10, 0, 100)},
	})
}

// TestLBThrottleFamilies: an LB key is its own family, and THROTTLE.ALL
// refuses LB rules, saying why.
func TestLBThrottleFamilies(t *testing.T) {
	h := newHarness(t)
	h.runSteps([]replyStep{
		{[]string{"LB.THROTTLE", "q", "5", "1"}, ints(0, 6, 5, 0, 1)},
		// The README's example: two workers of a fleet at 25 calls a second.
		{[]string{"LB.THROTTLE", "api:partner", "25", "1s", "1", "MS"}, ints(0, 26, 25, 0, 40)},
		{[]string{"LB.THROTTLE", "api:partner", "25", "1s", "1", "MS"}, ints(0, 26, 24, 40, 80)},
		{[]string{"CL.THROTTLE", "q", "1", "5", "1"}, wantErr(msgWrongType)},
		{[]string{"SW.THROTTLE", "q", "5", "1"}, wantErr(msgWrongType)},
		{[]string{"GET", "q"}, wantErr(msgWrongType)},
		{[]string{"FW.THROTTLE", "f", "5", "1"}, ints(0, 5, 4, -1, 1)},
		{[]string{"LB.THROTTLE", "f", "5", "1"}, wantErr(msgWrongType)},
		{[]string{"THROTTLE.ALL", "FW", "f", "5", "1", "LB", "q", "5", "1"}, wantErr(msgAllLeaky)},
		{[]string{"THROTTLE.ALL", "lb", "q", "5", "1"}, wantErr(msgAllLeaky)},
	})
}

func TestLBThrottleArgErrors(t *testing.T) {
	count, period, quantity, maxWait := wantErr(msgLeakyCount), wantErr(msgLeakyPeriod), wantErr(msgQuantity), wantErr(msgLeakyMaxWait)
	cases := []struct {
		args string // after the command's name
		want string
	}{
		{"k 0 1", count}, {"k -1 1", count}, {"k x 1", count}, {"k 4294967296 1", count}, {"k +5 1", count},
		{"k 5 0", period}, {"k 5 -1", period}, {"k 5 1us", period}, {"k 5 36501d", period},
		{"k 5 1 -1", quantity}, {"k 5 1 x", quantity},
		{"k 5 1 MAXWAIT", maxWait}, {"k 5 1 1 MAXWAIT -1", maxWait}, {"k 5 1 MAXWAIT 1us", maxWait},
		{"k 5 1 MAXWAIT MS", maxWait}, {"k 5 1 MAXWAIT 36501d", maxWait},
		{"k 5 1 1 MAXWAIT 1 MAXWAIT 2", wantErr("ERR syntax error: MAXWAIT is given twice")},
		{"k 5 1 MS MS", wantErr("ERR syntax error: MS is given twice")},
		{"k 5 1 1 XX", wantErr("ERR unknown option 'XX'; the options are MAXWAIT duration and MS")},
		{"k 5 1 1 2", wantErr("ERR unknown option '2'; the options are MAXWAIT duration and MS")},
	}
	h := newHarness(t)
	for _, c := range cases {
		if got := h.do(strings.Fields("LB.THROTTLE " + c.args)...); got != c.want {
			t.Errorf("LB.THROTTLE %s:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
	h.runSteps([]replyStep{
		{[]string{"LB.THROTTLE", "k", "5"}, wantErr("ERR wrong number of arguments for 'lb.throttle' command")},
		{[]string{"DBSIZE"}, ":0\r\n"},
	})
}

// TestLBThrottleMaxWaitUnits: MAXWAIT and the period take the window's
// units; the limit is the departures within MAXWAIT plus now's.
func TestLBThrottleMaxWaitUnits(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		args  string
		limit int64
	}{
		{"k1 25 1 0 MAXWAIT 1m", 25*60 + 1}, {"k2 1 1m 0 MAXWAIT 5m", 6}, {"k3 3 1s 0", 3},
		{"k4 1 1d 0 MAXWAIT 0s", 1}, {"k5 1000 1ms 0 MAXWAIT 1h", 3_600_000_000 + 1},
	} {
		want := ints(0, c.limit, c.limit, 0, 0)
		if got := h.do(strings.Fields("LB.THROTTLE " + c.args)...); got != want {
			t.Errorf("LB.THROTTLE %s:\n got %q\nwant %q", c.args, got, want)
		}
	}
}
