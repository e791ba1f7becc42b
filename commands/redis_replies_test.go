package commands

import (
	"strings"
	"testing"
)

// TestSelectOutOfIntRange: SELECT reads its index as Redis's
// getIntFromObjectOrReply does, which answers an integer outside a C int
// with its range, not with "not an integer" (replies of redis-server 7.0.15).
func TestSelectOutOfIntRange(t *testing.T) {
	const outOfRange = "ERR value is out of range, value must between -2147483648 and 2147483647"
	newHarness(t).runSteps([]replyStep{
		{[]string{"SELECT", "2147483648"}, wantErr(outOfRange)},
		{[]string{"SELECT", "-2147483649"}, wantErr(outOfRange)},
		{[]string{"SELECT", "9223372036854775807"}, wantErr(outOfRange)},
		{[]string{"SELECT", "9223372036854775808"}, wantErr("ERR value is not an integer or out of range")},
		{[]string{"SELECT", "-2147483648"}, wantErr("ERR DB index is out of range")},
	})
}

// TestConfigSetOddArguments: CONFIG SET with a name left without a
// value is Redis 7.0's syntax error (its arity, -4, is met).
func TestConfigSetOddArguments(t *testing.T) {
	newHarness(t).runSteps([]replyStep{
		{[]string{"CONFIG", "SET", "a", "1", "b"}, wantErr("ERR syntax error")},
		{[]string{"CONFIG", "SET", "maxmemory", "1", "b"}, wantErr("ERR syntax error")},
		{[]string{"CONFIG", "SET", "a"}, wantErr("ERR wrong number of arguments for 'config|set' command")},
	})
}

// TestGlobRangeSignedChars: Redis's stringmatchlen compares a class's
// range bounds and the string's byte as C chars, signed on the platforms
// Redis runs on, so bytes from 0x80 sort before ASCII (replies of KEYS on
// Redis 7.0.15).
func TestGlobRangeSignedChars(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"[--\xc3]", "*", true},    // -61..45 holds '*' (42)
		{"[--\xc3]", "a", false},   // but not 'a' (97)
		{"[--\xc3]", "\xff", true}, // -1 is in -61..45
		{"[a-\xff]", "\xc3", false},
		{"[a-\xff]", "\x00", true},
		{"[\xc3-\xff]", "\xd0", true},
		{"[\xc3-\xff]", "a", false},
	}
	for _, c := range cases {
		if got := globMatch([]byte(c.pattern), []byte(c.s)); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// TestRedactHelloAfterSetnameAuth: a client named "auth" by HELLO's
// SETNAME still has the password of the AUTH option after it redacted, as
// Redis 7.0 redacts it (SLOWLOG GET on redis-server 7.0.15 shows HELLO 3
// SETNAME auth AUTH (redacted) (redacted)); MONITOR's lines and the slow
// log share redactSecrets.
func TestRedactHelloAfterSetnameAuth(t *testing.T) {
	h := slowlogHarness(t, 0, 128)
	h.do("HELLO", "2", "SETNAME", "auth", "AUTH", "default", "secret")
	want := wantArray(1) + slowlogEntryBytes(h, 0, "auth",
		"HELLO", "2", "SETNAME", "auth", "AUTH", "(redacted)", "(redacted)")
	if got := normDuration(h.do("SLOWLOG", "GET", "1")); got != want {
		t.Fatalf("SLOWLOG GET 1\n got %q\nwant %q", got, want)
	}
	line := string(appendMonitorLine(nil, "127.0.0.1:1",
		redactSecrets(bytesArgs("HELLO", "3", "SETNAME", "AUTH", "AUTH", "u", "pw")), h.clock.Now()))
	if want := `"HELLO" "3" "SETNAME" "AUTH" "AUTH" "(redacted)" "(redacted)"`; !strings.HasSuffix(line, want+"\r\n") {
		t.Errorf("MONITOR line %q, want it to end %q", line, want)
	}
}

// bytesArgs makes a command's arguments of strings.
func bytesArgs(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// TestErrorsQuoteUpToNUL: Redis's error texts quote an argument
// with C's %s, which stops at its first NUL byte (replies of
// redis-server 7.0.15).
func TestErrorsQuoteUpToNUL(t *testing.T) {
	newHarness(t).runSteps([]replyStep{
		{[]string{"NOSUCH\x00X", "a\x00b"}, wantErr("ERR unknown command 'NOSUCH', with args beginning with: 'a' ")},
		{[]string{"CLIENT", "NO\x00SUCH"}, wantErr("ERR unknown subcommand 'NO'. Try CLIENT HELP.")},
		{[]string{"HELLO", "3", "F\x00OO"}, wantErr("ERR Syntax error in HELLO option 'F'")},
		{[]string{"CLIENT", "LIST", "TYPE", "nor\x00mal"}, wantErr("ERR Unknown client type 'nor'")},
		{[]string{"CONFIG", "SET", "nosu\x00ch", "x"}, wantErr("ERR Unknown option or number of arguments for CONFIG SET - 'nosu'")},
	})
}

// TestGlobFoldRangesAsRedis: CONFIG GET and COMMAND LIST's PATTERN match
// as Redis's nocase stringmatchlen does: a range's bounds are put in order
// as signed chars and then lowered by C's tolower, which turns a byte from
// 0x80 into its unsigned value, so that a range from such a byte to an
// ASCII one holds nothing; an escaped byte in a class compares exactly
// (replies of redis-server 7.0.15).
func TestGlobFoldRangesAsRedis(t *testing.T) {
	h := newHarness(t).withOpts(Options{Settings: []Setting{{Name: "maxmemory", Value: "100mb"}}})
	maxmemory := wantArray(2) + wantBulks("maxmemory", "100mb")
	h.runSteps([]replyStep{
		{[]string{"CONFIG", "GET", "[\xc3-z]axmemory"}, wantArray(0)},
		{[]string{"CONFIG", "GET", "[^\xc3-z]axmemory"}, maxmemory},
		{[]string{"CONFIG", "GET", "[M-`]axmemory"}, wantArray(0)},
		{[]string{"CONFIG", "GET", `[\M]axmemory`}, wantArray(0)},
		{[]string{"CONFIG", "GET", "[L-n]axmemory"}, maxmemory},
		{[]string{"CONFIG", "GET", "MAX[M-M]EMORY"}, maxmemory},
		{[]string{"CONFIG", "GET", "[\xc3-\xff]axmemory"}, wantArray(0)},
		{[]string{"COMMAND", "LIST", "FILTERBY", "PATTERN", "[\xc3-z]et"}, wantArray(0)},
		{[]string{"COMMAND", "LIST", "FILTERBY", "PATTERN", `[\G]et`}, wantArray(0)},
		{[]string{"COMMAND", "LIST", "FILTERBY", "PATTERN", "[G]ET"}, wantArray(1) + wantBulk("get")},
	})
}
