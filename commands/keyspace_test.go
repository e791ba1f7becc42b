package commands

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestKeyspaceCommands(t *testing.T) {
	h := newHarness(t)
	for _, k := range []string{"user:1", "user:2", "ip:1"} {
		h.do("CL.THROTTLE", k, "15", "30", "60")
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"EXISTS", "user:1", "user:1", "nope"}, ":2\r\n"},
		{[]string{"TYPE", "user:1"}, "+string\r\n"},
		{[]string{"TYPE", "nope"}, "+none\r\n"},
		{[]string{"TTL", "nope"}, ":-2\r\n"},
		{[]string{"PTTL", "nope"}, ":-2\r\n"},
		{[]string{"GET", "nope"}, "$-1\r\n"},
		{[]string{"DBSIZE"}, ":3\r\n"},
		{[]string{"KEYS", "nothing*"}, "*0\r\n"},
		{[]string{"DEL", "user:2", "nope"}, ":1\r\n"},
		{[]string{"UNLINK", "user:2"}, ":0\r\n"},
		{[]string{"DBSIZE"}, ":2\r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"DEL"}, "-ERR wrong number of arguments for 'del' command\r\n"},
		{[]string{"FLUSHDB", "now"}, "-ERR syntax error\r\n"},
		{[]string{"SCAN", "x"}, "-ERR invalid cursor\r\n"},
		{[]string{"SCAN", "+"}, "-ERR invalid cursor\r\n"},
		{[]string{"SCAN", " 1"}, "-ERR invalid cursor\r\n"},
		{[]string{"SCAN", "18446744073709551616"}, "-ERR invalid cursor\r\n"},
		{[]string{"SCAN", "-1"}, "*2\r\n$1\r\n0\r\n*0\r\n"},         // strtoul: -1 is 2^64-1
		{[]string{"SCAN", "99999\x00x"}, "*2\r\n$1\r\n0\r\n*0\r\n"}, // strtoul stops at the NUL
		{[]string{"SCAN", "+\x001"}, "-ERR invalid cursor\r\n"},     // and reads nothing of "+"
		{[]string{"SCAN", "0", "COUNT", "0"}, "-ERR syntax error\r\n"},
		{[]string{"SCAN", "0", "COUNT", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"SCAN", "0", "MATCH"}, "-ERR syntax error\r\n"},
		{[]string{"SCAN", "0", "BOGUS", "1"}, "-ERR syntax error\r\n"},
		{[]string{"SCAN", "99999", "COUNT", "1"}, "*2\r\n$1\r\n0\r\n*0\r\n"},
		{[]string{"SCAN", "0", "TYPE", "list"}, "*2\r\n$1\r\n0\r\n*0\r\n"},
		{[]string{"FLUSHALL", "ASYNC"}, "+OK\r\n"},
		{[]string{"DBSIZE"}, ":0\r\n"},
		{[]string{"FLUSHDB"}, "+OK\r\n"},
	}
	for _, c := range cases {
		if got := h.do(c.args...); got != c.want {
			t.Errorf("%q: got %q, want %q", c.args, got, c.want)
		}
	}
}

// TestScanCursorLikeStrtoul: "" and "-0" read as cursor 0, as Redis's strtoul does.
func TestScanCursorLikeStrtoul(t *testing.T) {
	h := newHarness(t)
	h.do("CL.THROTTLE", "k", "15", "30", "60")
	want := h.do("SCAN", "0")
	for _, c := range []string{"", "-0", "+0", "00"} {
		if got := h.do("SCAN", c); got != want {
			t.Errorf("SCAN %q = %q, want %q", c, got, want)
		}
	}
}

func TestKeysAndScanMatch(t *testing.T) {
	h := newHarness(t)
	var want []string
	for i := 0; i < 50; i++ {
		k := fmt.Sprint("user:", i)
		h.do("CL.THROTTLE", k, "15", "30", "60")
		want = append(want, k)
		h.do("CL.THROTTLE", fmt.Sprint("ip:", i), "15", "30", "60")
	}
	sort.Strings(want)

	got := parseBulks(h.do("KEYS", "user:*"))
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("KEYS user:* = %v", got)
	}

	var scanned []string
	cursor := "0"
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("SCAN does not finish")
		}
		reply := h.do("SCAN", cursor, "MATCH", "user:*", "COUNT", "7", "TYPE", "string")
		items := parseBulks(reply)
		cursor, scanned = items[0], append(scanned, items[1:]...)
		if cursor == "0" {
			break
		}
	}
	sort.Strings(scanned)
	if strings.Join(scanned, ",") != strings.Join(want, ",") {
		t.Errorf("SCAN MATCH user:* = %v", scanned)
	}
}

// TestExpiredKeysInvisible: once expired, a key is gone for every command.
func TestExpiredKeysInvisible(t *testing.T) {
	h := newHarness(t)
	h.do("CL.THROTTLE", "k", "0", "1", "1") // expires in 1s
	h.clock.Advance(1001 * time.Millisecond)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EXISTS", "k"}, ":0\r\n"},
		{[]string{"GET", "k"}, "$-1\r\n"},
		{[]string{"TTL", "k"}, ":-2\r\n"},
		{[]string{"TYPE", "k"}, "+none\r\n"},
		{[]string{"DBSIZE"}, ":0\r\n"},
		{[]string{"KEYS", "*"}, "*0\r\n"},
		{[]string{"DEL", "k"}, ":0\r\n"},
	} {
		if got := h.do(c.args...); got != c.want {
			t.Errorf("%q: got %q, want %q", c.args, got, c.want)
		}
	}
}

// parseBulks extracts the bulk strings of a reply, in order.
func parseBulks(reply string) []string {
	var out []string
	lines := strings.Split(reply, "\r\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "$") && i+1 < len(lines) {
			out = append(out, lines[i+1])
			i++
		}
	}
	return out
}
