package commands

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestCLThrottleReplies checks CL.THROTTLE's exact reply bytes against the
// replies captured from redis-cell 0.5 (docs/redis-cell-replies.md).
func TestCLThrottleReplies(t *testing.T) {
	usage := "-" + msgCellUsage + "\r\n"
	cases := []struct {
		row  string
		args []string
		want string
	}{
		{"1", []string{"CL.THROTTLE", "user123", "15", "30", "60"}, ints(0, 16, 15, -1, 2)},
		{"3 no args", []string{"CL.THROTTLE"}, usage},
		{"3 key", []string{"cl.throttle", "k"}, usage},
		{"3 burst", []string{"cl.throttle", "k", "15"}, usage},
		{"3 count", []string{"cl.throttle", "k", "15", "30"}, usage},
		{"3 extra", []string{"cl.throttle", "k", "15", "30", "60", "1", "extra"}, usage},
		{"3 eight", []string{"cl.throttle", "k", "15", "30", "60", "1", "2", "3"}, usage},
		{"4 burst", []string{"cl.throttle", "k", "abc", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: abc\r\n"},
		{"4 count", []string{"cl.throttle", "k", "15", "abc", "60"}, "-Cell error: Store error: Couldn't parse as integer: abc\r\n"},
		{"4 first bad wins", []string{"cl.throttle", "k", "15", "x", "y", "z"}, "-Cell error: Store error: Couldn't parse as integer: x\r\n"},
		{"4 quantity", []string{"cl.throttle", "k", "15", "30", "60", "q"}, "-Cell error: Store error: Couldn't parse as integer: q\r\n"},
		{"4b 1.5", []string{"cl.throttle", "k", "1.5", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1.5\r\n"},
		{"4b 60.0", []string{"cl.throttle", "k", "15", "30", "60.0"}, "-Cell error: Store error: Couldn't parse as integer: 60.0\r\n"},
		{"4b empty", []string{"cl.throttle", "k", "", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: \r\n"},
		{"4b leading space", []string{"cl.throttle", "k", " 15", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer:  15\r\n"},
		{"4b trailing space", []string{"cl.throttle", "k", "15 ", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 15 \r\n"},
		{"4b hex", []string{"cl.throttle", "k", "0x10", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 0x10\r\n"},
		{"4b exp", []string{"cl.throttle", "k", "1e3", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1e3\r\n"},
		{"4b sign only", []string{"cl.throttle", "k", "-", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: -\r\n"},
		{"4c plus", []string{"cl.throttle", "p", "+15", "30", "60"}, ints(0, 16, 15, -1, 2)},
		{"4c leading zero", []string{"cl.throttle", "z", "015", "30", "60"}, ints(0, 16, 15, -1, 2)},
		{"4c minus zero", []string{"cl.throttle", "mz", "-0", "30", "60"}, ints(0, 1, 0, -1, 2)},
		{"4d overflow", []string{"cl.throttle", "k", "9223372036854775808", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 9223372036854775808\r\n"},
		{"5", []string{"cl.throttle", "nb1", "-1", "30", "60"}, ints(1, 0, 0, -1, 0)},
		{"5b", []string{"cl.throttle", "nb2", "-2", "30", "60"}, ints(1, -1, 0, -1, 0)},
		{"6", []string{"cl.throttle", "c0", "15", "0", "60"}, "-" + msgCellZeroRate + "\r\n"},
		{"7", []string{"cl.throttle", "p0", "15", "30", "0"}, "-" + msgCellZeroRate + "\r\n"},
		{"7b", []string{"cl.throttle", "nc", "15", "-30", "60"}, ints(1, 16, 0, -1, 0)},
		{"9", []string{"cl.throttle", "q16", "15", "30", "60", "16"}, ints(0, 16, 0, -1, 32)},
		{"9b", []string{"cl.throttle", "q17", "15", "30", "60", "17"}, ints(1, 16, 16, -1, 0)},
		{"10", []string{"cl.throttle", "qneg", "15", "30", "60", "-1"}, "-" + msgCellExpire + "\r\n"},
		{"13 non-UTF-8 argument", []string{"cl.throttle", "k", "1\xff", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1\xff\r\n"},
		{"13 CRLF in argument", []string{"cl.throttle", "k", "1\r\n", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1  \r\n"},
		{"13b binary key", []string{"cl.throttle", "a\x00b c", "15", "30", "60"}, ints(0, 16, 15, -1, 2)},
		{"13 non-UTF-8 key", []string{"cl.throttle", "\xff\xfe", "15", "30", "60"}, ints(0, 16, 15, -1, 2)},
		{"14", []string{"cl.throttle", "big", "9223372036854775807", "30", "60"}, ints(1, -9223372036854775808, 0, -1, 0)},
		{"14b", []string{"cl.throttle", "big", "9223372036854775806", "30", "60"}, ints(1, 9223372036854775807, 0, -1, 0)},
		{"14c", []string{"cl.throttle", "big", "15", "9223372036854775807", "60"}, "-" + msgCellZeroRate + "\r\n"},
		{"14d", []string{"cl.throttle", "big", "15", "30", "9223372036854775807"}, ints(1, 16, 0, -1, 0)},
		{"14e", []string{"cl.throttle", "big", "15", "30", "60", "9223372036854775807"}, "-" + msgCellExpire + "\r\n"},
		{"14f", []string{"cl.throttle", "big2", "15", "30", "60", "-9223372036854775808"}, ints(0, 16, 16, -1, 0)},
		{"14j", []string{"cl.throttle", "big3", "15", "30", "60", "1000000000000"}, ints(1, 16, 16, -1, 0)},
	}
	for _, c := range cases {
		t.Run(c.row, func(t *testing.T) {
			h := newHarness(t)
			if got := h.do(c.args...); got != c.want {
				t.Errorf("%q\n got  %q\n want %q", c.args, got, c.want)
			}
		})
	}
}

// TestCLThrottleSequences replays the reference's multi-step rows.
func TestCLThrottleSequences(t *testing.T) {
	h := newHarness(t)
	step := func(want string, args ...string) {
		t.Helper()
		if got := h.do(args...); got != want {
			t.Errorf("%q: got %q, want %q", args, got, want)
		}
	}
	// 1, 1b, 2, 2b, 2c
	step(ints(0, 16, 15, -1, 2), "CL.THROTTLE", "user123", "15", "30", "60")
	h.clock.Advance(time.Millisecond)
	step(ints(0, 16, 14, -1, 4), "CL.THROTTLE", "user123", "15", "30", "60")
	step("$19\r\n1795336195675642640\r\n", "GET", "user123")
	step(":3999\r\n", "PTTL", "user123")
	step(":4\r\n", "TTL", "user123")
	step("+string\r\n", "TYPE", "user123")
	// 5: negative burst never creates the key.
	step(ints(1, 0, 0, -1, 0), "CL.THROTTLE", "nb1", "-1", "30", "60")
	step(":0\r\n", "EXISTS", "nb1")
	// 7c: no burst.
	step(ints(0, 1, 0, -1, 2), "CL.THROTTLE", "b0", "0", "30", "60")
	step(ints(1, 1, 0, 2, 2), "CL.THROTTLE", "b0", "0", "30", "60")
	// 8b: a peek changes nothing.
	step(ints(0, 16, 15, -1, 2), "CL.THROTTLE", "peek", "15", "30", "60")
	step(ints(0, 16, 15, -1, 2), "CL.THROTTLE", "peek", "15", "30", "60", "0")
	step(ints(0, 16, 15, -1, 2), "CL.THROTTLE", "peek", "15", "30", "60", "0")
	// 9: the whole burst at once, then limited.
	step(ints(0, 16, 0, -1, 32), "CL.THROTTLE", "q16", "15", "30", "60", "16")
	step(ints(1, 16, 0, 2, 32), "CL.THROTTLE", "q16", "15", "30", "60", "1")
	// 10: an error leaves nothing behind, and says the same again.
	step("-"+msgCellExpire+"\r\n", "CL.THROTTLE", "qneg", "15", "30", "60", "-1")
	step(":0\r\n", "EXISTS", "qneg")
	step("-"+msgCellExpire+"\r\n", "CL.THROTTLE", "qneg", "15", "30", "60", "-1")
	// 10b: negative quantity after one hit moves the TAT back.
	step(ints(0, 16, 15, -1, 2), "CL.THROTTLE", "back", "15", "30", "60")
	step(ints(0, 16, 16, -1, 0), "CL.THROTTLE", "back", "15", "30", "60", "-1")
	// 11: one per two seconds, no burst, over time.
	step(ints(0, 1, 0, -1, 2), "CL.THROTTLE", "e2e", "0", "1", "2", "1")
	step(":2000\r\n", "PTTL", "e2e")
	step(ints(1, 1, 0, 2, 2), "CL.THROTTLE", "e2e", "0", "1", "2", "1")
	step(":2000\r\n", "PTTL", "e2e")
	h.clock.Advance(2001 * time.Millisecond)
	step(ints(0, 1, 0, -1, 2), "CL.THROTTLE", "e2e", "0", "1", "2", "1")
	h.clock.Advance(500 * time.Millisecond)
	step(ints(1, 1, 0, 2, 2), "CL.THROTTLE", "e2e", "0", "1", "2", "1")
	// DEL resets a limit.
	step(":1\r\n", "DEL", "q16")
	step(ints(0, 16, 15, -1, 2), "CL.THROTTLE", "q16", "15", "30", "60")
}

// TestCLThrottleAllocs: dispatching CL.THROTTLE on an existing key allocates
// nothing beyond what the reply writer does.
func TestCLThrottleAllocs(t *testing.T) {
	h := newHarness(t)
	args := [][]byte{[]byte("CL.THROTTLE"), []byte("user123"), []byte("15"), []byte("30"), []byte("60"), []byte("0")}
	h.do("CL.THROTTLE", "user123", "15", "30", "60")
	w := discardWriter{}
	allocs := testing.AllocsPerRun(1000, func() { h.cmds.Dispatch(w, h.client, args) })
	if allocs != 0 {
		t.Errorf("CL.THROTTLE dispatch: %v allocs, want 0", allocs)
	}
}

func BenchmarkDispatchCLThrottle(b *testing.B) {
	h := newHarness(&testing.T{})
	args := [][]byte{[]byte("CL.THROTTLE"), []byte("user123"), []byte("15"), []byte("30"), []byte("60"), []byte("0")}
	w := discardWriter{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.cmds.Dispatch(w, h.client, args)
	}
}

// discardWriter is a Writer that writes nothing, for allocation checks.
type discardWriter struct{}

func (discardWriter) WriteError(string)      {}
func (discardWriter) WriteString(string)     {}
func (discardWriter) WriteBulk([]byte)       {}
func (discardWriter) WriteBulkString(string) {}
func (discardWriter) WriteInt(int64)         {}
func (discardWriter) WriteArray(int)         {}
func (discardWriter) WriteMap(int)           {}
func (discardWriter) WriteSet(int)           {}
func (discardWriter) WriteNull()             {}
func (discardWriter) WriteNullArray()        {}
func (discardWriter) WriteVerbatim(string)   {}

// BenchmarkDispatchCLThrottleParallel dispatches from one client per
// goroutine, each on its own key, as connections on several cores do: what
// the clients share (counters, the table) shows here.
func BenchmarkDispatchCLThrottleParallel(b *testing.B) {
	h := newHarness(&testing.T{})
	var ids atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := ids.Add(1)
		cl := NewClient(id, "127.0.0.1:50000", "127.0.0.1:6379", h.clock.Now())
		args := [][]byte{[]byte("CL.THROTTLE"), fmt.Appendf(nil, "user%d", id), []byte("15"), []byte("30"), []byte("60"), []byte("0")}
		w := discardWriter{}
		for pb.Next() {
			h.cmds.Dispatch(w, cl, args)
		}
	})
}
