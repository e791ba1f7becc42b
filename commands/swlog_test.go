package commands

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// logReply encodes SW.LOG's reply: [ms, quantity] pairs.
func logReply(pairs ...int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		fmt.Fprintf(&b, "*2\r\n:%d\r\n:%d\r\n", pairs[i], pairs[i+1])
	}
	return b.String()
}

// TestSWLog: SW.LOG lists the requests recorded, at the clock's reading
// in ms and with their quantities; refused requests are not recorded;
// without WINDOW it lists requests that left the window until a decision
// drops them, with WINDOW only those in it.
func TestSWLog(t *testing.T) {
	h := newHarness(t)
	at := func() int64 { return h.clock.Now().UnixMilli() }
	t0 := at()
	h.do("SW.THROTTLE", "k", "5", "10")
	h.clock.Advance(1500 * time.Microsecond)
	t1 := at()
	h.do("SW.THROTTLE", "k", "5", "10", "2")
	h.do("SW.THROTTLE", "k", "5", "10", "3") // refused: 1+2+3 > 5
	h.clock.Advance(4 * time.Second)
	t2 := at()
	h.do("SW.THROTTLE", "k", "5", "10")
	h.do("FW.THROTTLE", "fw", "5", "1h")

	steps := []timedStep{
		{0, "SW.LOG k", logReply(t0, 1, t1, 2, t2, 1)},
		{0, "SW.LOG k COUNT 2", logReply(t0, 1, t1, 2)},
		{0, "sw.log k count 1 window 10", logReply(t0, 1)},
		{0, "SW.LOG k COUNT 3000000000000", logReply(t0, 1, t1, 2, t2, 1)},
		// 10s after the first two: they have left a window of 10s.
		{6 * time.Second, "SW.LOG k WINDOW 10", logReply(t2, 1)},
		{0, "SW.LOG k WINDOW 10000ms COUNT 5", logReply(t2, 1)},
		{0, "SW.LOG k WINDOW 1m", logReply(t0, 1, t1, 2, t2, 1)},
		{0, "SW.LOG k", logReply(t0, 1, t1, 2, t2, 1)}, // held until a decision drops them
		{0, "SW.THROTTLE k 5 10 0", ints(0, 5, 4, -1, 4)},
		{0, "SW.LOG k", logReply(t2, 1)},
		{0, "SW.LOG missing", "*0\r\n"},
		{0, "SW.LOG fw", "-" + msgWrongType + "\r\n"},
		{0, "SW.LOG k COUNT 0", "-" + msgPositive + "\r\n"},
		{0, "SW.LOG k COUNT -1", "-" + msgPositive + "\r\n"},
		{0, "SW.LOG k COUNT 1.5", "-" + msgNotInteger + "\r\n"},
		{0, "SW.LOG k COUNT", "-" + msgSyntax + "\r\n"},
		{0, "SW.LOG k WINDOW 0", "-" + msgWindowDuration + "\r\n"},
		{0, "SW.LOG k LIMIT 3", "-" + msgSWLogOption + "\r\n"},
		{0, "SW.LOG", "-ERR wrong number of arguments for 'sw.log' command\r\n"},
	}
	h.runTimed(steps)
}

// TestSWLogStore: in shared mode SW.LOG reads the store and answers as in
// memory.
func TestSWLogStore(t *testing.T) {
	shared, memory := newStoreHarness(t)
	for _, s := range []struct {
		after time.Duration
		args  string
	}{
		{0, "SW.THROTTLE k 5 10"},
		{3 * ms, "SW.THROTTLE k 5 10 2"},
		{time.Second, "SW.THROTTLE k 5 10 2"},
		{0, "FW.THROTTLE fw 5 10"},
		{0, "CL.THROTTLE cl 5 10 60"},
		{0, "SW.LOG k"},
		{0, "SW.LOG k COUNT 1"},
		{9 * time.Second, "SW.LOG k WINDOW 10"},
		{0, "SW.LOG k"},
		{0, "SW.LOG missing"},
		{0, "SW.LOG fw"},
		{0, "SW.LOG cl"},
		{0, "SW.LOG k COUNT 0"},
	} {
		shared.clock.Advance(s.after)
		args := strings.Fields(s.args)
		if got, want := shared.do(args...), memory.do(args...); got != want {
			t.Errorf("%s: shared %q, memory %q", s.args, got, want)
		}
	}
	if got := shared.do("SW.LOG", "k", "WINDOW", "10"); got == "*0\r\n" || strings.HasPrefix(got, "-") {
		t.Errorf("shared SW.LOG read nothing: %q", got)
	}
}
