package commands

import (
	"strings"
	"testing"
	"time"
)

// timedStep is one command, after moving the clock on, and its exact reply.
type timedStep struct {
	after time.Duration // the clock moves on by this much first
	cmd   string        // the arguments, split on spaces
	want  string
}

// runTimed runs steps in order on h's fake clock, comparing exact replies.
func (h *harness) runTimed(steps []timedStep) {
	h.t.Helper()
	for i, s := range steps {
		h.clock.Advance(s.after)
		if got := h.do(strings.Fields(s.cmd)...); got != s.want {
			h.t.Errorf("step %d, %q:\n got %q\nwant %q", i+1, s.cmd, got, s.want)
		}
	}
}

// alignedHarness is a harness whose clock is at a whole day since the Unix
// epoch, a multiple of every window the tests use, so that fixed windows
// and the sliding counter's buckets start at the clock.
func alignedHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	const day = 24 * time.Hour
	h.clock.Advance(day - time.Duration(h.clock.Now().UnixNano()%int64(day)))
	return h
}

const ms = time.Millisecond

// TestSWThrottle walks a sliding log through a burst, a client that keeps
// retrying while blocked (never recorded, so it gets in once its old
// requests leave), requests exactly at the window's end, a peek, and the
// key's expiry.
func TestSWThrottle(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "SW.THROTTLE k 3 10", ints(0, 3, 2, -1, 10)},
		{0, "SW.THROTTLE k 3 10", ints(0, 3, 1, -1, 10)},
		{4 * time.Second, "SW.THROTTLE k 3 10", ints(0, 3, 0, -1, 10)},
		// Blocked until the two requests of 0s leave, at 10s.
		{0, "SW.THROTTLE k 3 10", ints(1, 3, 0, 6, 10)},
		{0, "PTTL k", ":9999\r\n"}, // the newest request (4s) leaves at 14s
		{0, "TTL k", ":10\r\n"},
		{time.Second, "SW.THROTTLE k 3 10", ints(1, 3, 0, 5, 9)},
		{4999 * ms, "SW.THROTTLE k 3 10 1 MS", ints(1, 3, 0, 1, 4001)},
		{0, "SW.THROTTLE k 3 10", ints(1, 3, 0, 1, 5)},
		// At 10s exactly the requests of 0s have left; the retries were
		// never recorded, so this one is admitted.
		{ms, "SW.THROTTLE k 3 10", ints(0, 3, 1, -1, 10)},
		{0, "SW.THROTTLE k 3 10", ints(0, 3, 0, -1, 10)},
		{0, "SW.THROTTLE k 3 10", ints(1, 3, 0, 4, 10)},
		{4 * time.Second, "SW.THROTTLE k 3 10", ints(0, 3, 0, -1, 10)}, // 4s's request left at 14s
		{0, "PTTL k", ":9999\r\n"},
		// A peek neither records nor extends.
		{3 * time.Second, "SW.THROTTLE k 3 10 0", ints(0, 3, 0, -1, 7)},
		{0, "PTTL k", ":6999\r\n"},
		{6999 * ms, "SW.THROTTLE k 3 10 0 MS", ints(0, 3, 2, -1, 1)}, // only 14s's request is left
		{0, "EXISTS k", ":1\r\n"},
		{0, "PTTL k", ":0\r\n"},
		{0, "TTL k", ":0\r\n"},
		// The key goes when its newest request leaves the window.
		{ms, "EXISTS k", ":0\r\n"},
		{0, "PTTL k", ":-2\r\n"},
		{0, "TTL k", ":-2\r\n"},
		{0, "SW.THROTTLE k 3 10 0", ints(0, 3, 3, -1, 0)},
		{0, "EXISTS k", ":0\r\n"},
	})
}

func TestSWThrottleQuantity(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "SW.THROTTLE q 5 10 3", ints(0, 5, 2, -1, 10)},
		// 3 more fit once the first request (of 3) leaves at 10s.
		{time.Second, "SW.THROTTLE q 5 10 3", ints(1, 5, 2, 9, 9)},
		// More than the limit never fits: retry_after -1.
		{0, "SW.THROTTLE q 5 10 6", ints(1, 5, 2, -1, 9)},
		{0, "SW.THROTTLE q 5 10 2", ints(0, 5, 0, -1, 10)},
		// 4 need both requests gone: the second leaves at 11s.
		{0, "SW.THROTTLE q 5 10 4", ints(1, 5, 0, 10, 10)},
		{9 * time.Second, "SW.THROTTLE q 5 10 4", ints(1, 5, 3, 1, 1)},
		{time.Second, "SW.THROTTLE q 5 10 4", ints(0, 5, 1, -1, 10)},
	})
}

// TestSWThrottleSubSecond: a 250 ms window, in milliseconds with MS and in
// seconds rounded up without.
func TestSWThrottleSubSecond(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "SW.THROTTLE s 2 250ms MS", ints(0, 2, 1, -1, 250)},
		{0, "SW.THROTTLE s 2 250ms MS", ints(0, 2, 0, -1, 250)},
		{0, "SW.THROTTLE s 2 250ms MS", ints(1, 2, 0, 250, 250)},
		{100 * ms, "SW.THROTTLE s 2 250ms MS", ints(1, 2, 0, 150, 150)},
		{0, "SW.THROTTLE s 2 250ms", ints(1, 2, 0, 1, 1)},
		{0, "PTTL s", ":149\r\n"},
		{150 * ms, "SW.THROTTLE s 2 250ms 1 MS", ints(0, 2, 1, -1, 250)},
		{0, "sw.throttle s 2 250MS ms", ints(0, 2, 0, -1, 250)},
		{0, "PTTL s", ":249\r\n"},
		{249 * ms, "EXISTS s", ":1\r\n"},
		{ms, "EXISTS s", ":0\r\n"},
	})
}

// TestSWCThrottle walks a sliding-window counter across a bucket edge: the
// previous bucket weighs in proportion to its overlap with the window.
func TestSWCThrottle(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "SWC.THROTTLE c 10 10 10", ints(0, 10, 0, -1, 20)},
		{0, "PTTL c", ":19999\r\n"}, // the bucket counts until the end of the next one
		// In the next bucket the 10 weigh 9 after 1s: 11s from now.
		{0, "SWC.THROTTLE c 10 10", ints(1, 10, 0, 11, 20)},
		// At the bucket's edge the previous bucket weighs in full.
		{10 * time.Second, "SWC.THROTTLE c 10 10", ints(1, 10, 0, 1, 10)},
		{0, "PTTL c", ":9999\r\n"}, // a refusal extends nothing
		{time.Second, "SWC.THROTTLE c 10 10", ints(0, 10, 0, -1, 19)},
		{0, "PTTL c", ":18999\r\n"},
		// 5s into the bucket: 10 × 5/10 + 1 = 6 counted.
		{4 * time.Second, "SWC.THROTTLE c 10 10 0", ints(0, 10, 4, -1, 15)},
		{0, "PTTL c", ":14999\r\n"},
		{0, "SWC.THROTTLE c 10 10 4 MS", ints(0, 10, 0, -1, 15000)},
		// One more fits once the previous bucket weighs 4: at 6s, 1s on.
		{0, "SWC.THROTTLE c 10 10 1 MS", ints(1, 10, 0, 1000, 15000)},
		{0, "SWC.THROTTLE c 10 10 11", ints(1, 10, 0, -1, 15)},
		{999 * ms, "SWC.THROTTLE c 10 10 1 MS", ints(1, 10, 0, 1, 14001)},
		{ms, "SWC.THROTTLE c 10 10 1 MS", ints(0, 10, 0, -1, 14000)},
		{14 * time.Second, "EXISTS c", ":0\r\n"},
		{0, "SWC.THROTTLE c 10 10 0", ints(0, 10, 10, -1, 0)},
		{0, "EXISTS c", ":0\r\n"},
	})
}

func TestSWCThrottleSubSecond(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "SWC.THROTTLE cs 4 250ms 4 MS", ints(0, 4, 0, -1, 500)},
		// Next bucket at 250ms, where 4 × (1 − 62.5/250) = 3 leave room for 1.
		{125 * ms, "SWC.THROTTLE cs 4 250ms 1 MS", ints(1, 4, 0, 188, 375)},
		{0, "SWC.THROTTLE cs 4 250ms", ints(1, 4, 0, 1, 1)},
		{0, "PTTL cs", ":374\r\n"},
		{375 * ms, "EXISTS cs", ":0\r\n"},
	})
}

// TestFWThrottle walks a fixed window: aligned to the epoch, full until its
// end, fresh exactly at its end.
func TestFWThrottle(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "FW.THROTTLE f 3 10", ints(0, 3, 2, -1, 10)},
		{0, "FW.THROTTLE f 3 10", ints(0, 3, 1, -1, 10)},
		{0, "FW.THROTTLE f 3 10", ints(0, 3, 0, -1, 10)},
		{0, "FW.THROTTLE f 3 10", ints(1, 3, 0, 10, 10)},
		{0, "PTTL f", ":9999\r\n"},
		{9999 * ms, "FW.THROTTLE f 3 10 1 MS", ints(1, 3, 0, 1, 1)},
		{0, "FW.THROTTLE f 3 10", ints(1, 3, 0, 1, 1)},
		{ms, "FW.THROTTLE f 3 10", ints(0, 3, 2, -1, 10)},
		{0, "FW.THROTTLE f 3 10 4", ints(1, 3, 2, -1, 10)},
		{0, "FW.THROTTLE f 3 10 2", ints(0, 3, 0, -1, 10)},
		{0, "PTTL f", ":9999\r\n"},
		{4 * time.Second, "FW.THROTTLE f 3 10 0", ints(0, 3, 0, -1, 6)},
		{0, "PTTL f", ":5999\r\n"},
		{0, "TTL f", ":6\r\n"},
		{6 * time.Second, "EXISTS f", ":0\r\n"},
		{0, "TTL f", ":-2\r\n"},
		{0, "FW.THROTTLE f 3 10 0", ints(0, 3, 3, -1, 0)},
		{0, "EXISTS f", ":0\r\n"},
	})
}

func TestFWThrottleSubSecond(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "FW.THROTTLE fs 2 250ms 1 MS", ints(0, 2, 1, -1, 250)},
		{100 * ms, "FW.THROTTLE fs 2 250ms 1 ms", ints(0, 2, 0, -1, 150)},
		{0, "FW.THROTTLE fs 2 250ms MS", ints(1, 2, 0, 150, 150)},
		{0, "FW.THROTTLE fs 2 250ms", ints(1, 2, 0, 1, 1)},
		{0, "PTTL fs", ":149\r\n"},
		{150 * ms, "FW.THROTTLE fs 2 250ms MS", ints(0, 2, 1, -1, 250)},
	})
}

// TestWindowFamilies: a key belongs to one family; TYPE names it, SCAN's
// TYPE filter finds it, another family's command gets WRONGTYPE and
// changes nothing, and DEL resets it.
func TestWindowFamilies(t *testing.T) {
	wrong := wantErr(msgWrongType)
	alignedHarness(t).runTimed([]timedStep{
		{0, "SW.THROTTLE s 5 10", ints(0, 5, 4, -1, 10)},
		{0, "SWC.THROTTLE w 5 10", ints(0, 5, 4, -1, 20)},
		{0, "FW.THROTTLE f 5 10", ints(0, 5, 4, -1, 10)},
		{0, "CL.THROTTLE c 15 30 60", ints(0, 16, 15, -1, 2)},
		{0, "TYPE s", "+sw\r\n"},
		{0, "TYPE w", "+swc\r\n"},
		{0, "TYPE f", "+fw\r\n"},
		{0, "TYPE c", "+string\r\n"},
		{0, "SWC.THROTTLE s 5 10", wrong},
		{0, "FW.THROTTLE s 5 10 0", wrong},
		{0, "SW.THROTTLE w 5 10", wrong},
		{0, "FW.THROTTLE w 5 10", wrong},
		{0, "SW.THROTTLE f 5 10", wrong},
		{0, "SWC.THROTTLE f 5 10", wrong},
		{0, "SW.THROTTLE c 5 10", wrong},
		{0, "CL.THROTTLE s 15 30 60", wrong},
		{0, "CL.THROTTLE f 15 30 60 0", wrong},
		{0, "GET w", wrong},
		{0, "SW.THROTTLE s 5 10 0", ints(0, 5, 4, -1, 10)}, // unchanged
		{0, "SWC.THROTTLE w 5 10 0", ints(0, 5, 4, -1, 20)},
		{0, "FW.THROTTLE f 5 10 0", ints(0, 5, 4, -1, 10)},
		{0, "SCAN 0 TYPE sw COUNT 1000", "*2\r\n" + wantBulk("0") + wantArray(1) + wantBulk("s")},
		{0, "SCAN 0 TYPE SWC COUNT 1000", "*2\r\n" + wantBulk("0") + wantArray(1) + wantBulk("w")},
		{0, "SCAN 0 TYPE fw COUNT 1000", "*2\r\n" + wantBulk("0") + wantArray(1) + wantBulk("f")},
		{0, "DEL s w f", ":3\r\n"},
		{0, "SW.THROTTLE s 5 10", ints(0, 5, 4, -1, 10)},
		{0, "SWC.THROTTLE w 5 10", ints(0, 5, 4, -1, 20)},
		{0, "FW.THROTTLE f 5 10", ints(0, 5, 4, -1, 10)},
	})
}

// TestWindowPeekFreshKey: quantity 0 on a missing key answers the full
// limit and creates nothing.
func TestWindowPeekFreshKey(t *testing.T) {
	h := alignedHarness(t)
	for _, name := range []string{"SW.THROTTLE", "SWC.THROTTLE", "FW.THROTTLE"} {
		h.runTimed([]timedStep{
			{0, name + " p 5 10 0", ints(0, 5, 5, -1, 0)},
			{0, name + " p 5 10 0 MS", ints(0, 5, 5, -1, 0)},
			{0, "EXISTS p", ":0\r\n"},
		})
	}
}

// TestWindowMultiExec: window commands in a transaction run against its
// locked shards.
func TestWindowMultiExec(t *testing.T) {
	alignedHarness(t).runTimed([]timedStep{
		{0, "MULTI", "+OK\r\n"},
		{0, "SW.THROTTLE a 1 10", "+QUEUED\r\n"},
		{0, "SW.THROTTLE a 1 10", "+QUEUED\r\n"},
		{0, "FW.THROTTLE b 1 10 1 MS", "+QUEUED\r\n"},
		{0, "SWC.THROTTLE a 1 10", "+QUEUED\r\n"},
		{0, "EXEC", "*4\r\n" + ints(0, 1, 0, -1, 10) + ints(1, 1, 0, 10, 10) + ints(0, 1, 0, -1, 10000) + wantErr(msgWrongType)},
	})
}

// TestWindowMetrics: the window commands count their answers as allowed or
// limited, as CL.THROTTLE does, and INFO stats sums them.
func TestWindowMetrics(t *testing.T) {
	h := alignedHarness(t)
	for range 3 {
		h.do("SW.THROTTLE", "k", "2", "10") // allowed, allowed, limited
	}
	h.do("SW.THROTTLE", "k", "0", "10") // error
	h.do("FW.THROTTLE", "f", "1", "10")
	h.do("SWC.THROTTLE", "f", "1", "10") // WRONGTYPE
	for name, want := range map[string]outcomes{
		"sw.throttle":  {allowed: 2, limited: 1, errors: 1, calls: 4},
		"fw.throttle":  {allowed: 1, calls: 1},
		"swc.throttle": {errors: 1, calls: 1},
	} {
		m := metricsOf(t, h.cmds, name)
		if got := outcomesOf(m); got != want || !m.Decides {
			t.Errorf("%s: %+v decides %v, want %+v, decides", name, got, m.Decides, want)
		}
	}
	text := infoText(t, h, "stats")
	if field(t, text, "throttle_allowed_calls") != "3" || field(t, text, "throttle_limited_calls") != "1" {
		t.Errorf("INFO stats: %q", text)
	}
}
