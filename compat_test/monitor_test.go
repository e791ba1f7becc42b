package compat_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// monitorStamp matches what differs between two servers' MONITOR lines for
// the same command: the time and the client's port.
var monitorStamp = regexp.MustCompile(`(?m)^\+[0-9]{10}\.[0-9]{6} \[0 127\.0\.0\.1:[0-9]+\] `)

// monitorTranscript runs one conversation against the server at addr: a
// client runs commands while a monitor watches and then runs its own, and
// it returns everything the monitor received, with each line's time and
// port replaced by "+T [0 ADDR] " once checked to be the client's.
func monitorTranscript(t *testing.T, addr string) string {
	t.Helper()
	mon, cl := dialRaw(t, addr), dialRaw(t, addr)
	var got strings.Builder
	got.WriteString(mon.do("MONITOR"))
	for _, args := range [][]string{
		{"PING"},
		{"ECHO", "a\\b\"c\n\r\t\a\b\x00\xff\x7f z"},
		{"AUTH", "secret"},                                        // refused, shown redacted
		{"HELLO", "2", "AUTH", "default", "pw", "SETNAME", "app"}, // shown with both redacted
		{"CLIENT", "SETNAME", "x"},
		{"CLIENT", "LIST"},                           // administrative: not shown
		{"CONFIG", "GET", "maxmemory"},               // administrative: not shown
		{"NOSUCH", "x"},                              // rejected: not shown
		{"GET"},                                      // wrong arity: not shown
		{"MULTI"}, {"PING"}, {"ECHO", "q"}, {"EXEC"}, // the queued ones at EXEC, before it
		{"SELECT", "0"},
		{"TIME"},
		{"ECHO", "end"},
	} {
		cl.do(args...)
	}
	// The client's lines are queued by the time it has its replies; its
	// last one is ECHO "end".
	for !strings.HasSuffix(got.String(), "\"ECHO\" \"end\"\r\n") {
		got.WriteString(mon.reply())
	}
	// What the monitor may run: the connection commands, each followed by
	// its own line; no key command, no second MONITOR (ignored without a
	// reply); RESET ends monitoring.
	for _, args := range [][]string{{"PING", "m"}, {"DBSIZE"}, {"MONITOR"}, {"ECHO", "m2"}, {"RESET"}} {
		mon.send(resp(args...))
	}
	for !strings.HasSuffix(got.String(), "+RESET\r\n") {
		got.WriteString(mon.reply())
	}
	cl.do("ECHO", "after reset")
	got.WriteString(mon.do("PING")) // just PONG: no line for the ECHO
	cl.do("QUIT")

	local := cl.c.LocalAddr().String()
	for _, line := range strings.SplitAfter(got.String(), "\r\n") {
		if m := monitorStamp.FindString(line); m != "" && !strings.Contains(m, local) && !strings.Contains(m, mon.c.LocalAddr().String()) {
			t.Errorf("line %q names neither client (%s, %s)", line, local, mon.c.LocalAddr())
		}
	}
	return monitorStamp.ReplaceAllString(got.String(), "+T [0 ADDR] ")
}

// TestMonitorMatchesRedis: a monitor sees the same lines, byte for byte but
// for the time and port, as Redis 7.0's, for the same commands of another
// client and of its own, and is refused what Redis refuses it.
func TestMonitorMatchesRedis(t *testing.T) {
	t.Parallel()
	real := startRedis(t)
	want := monitorTranscript(t, real.Addr)
	got := monitorTranscript(t, startServer(t).addr)
	if got != want {
		t.Errorf("MONITOR transcript differs from Redis's:\n got %q\nwant %q", got, want)
	}
}

// TestMonitorRedactsAlways: where Redis 7.0 shows a password (AUTH with too
// many arguments, HELLO refused before its options are read), cellserver
// redacts it as SLOWLOG does.
func TestMonitorRedactsAlways(t *testing.T) {
	t.Parallel()
	addr := startServer(t).addr
	mon, cl := dialRaw(t, addr), dialRaw(t, addr)
	mon.do("MONITOR")
	cl.do("AUTH", "a", "b", "c")
	cl.do("HELLO", "4", "AUTH", "u", "secret")
	for _, want := range []string{
		` "AUTH" "(redacted)" "(redacted)" "(redacted)"` + "\r\n",
		` "HELLO" "4" "AUTH" "(redacted)" "(redacted)"` + "\r\n",
	} {
		if line := mon.reply(); !strings.HasSuffix(line, want) {
			t.Errorf("line %q, want it to end %q", line, want)
		}
	}
}

// TestMonitorGoRedis: go-redis's Monitor sees another go-redis client's
// CL.THROTTLE.
func TestMonitorGoRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t)
	lines := make(chan string, 16)
	mon := s.goRedis(t).Monitor(ctx, lines)
	mon.Start()
	// No Stop: it waits out go-redis's read timeout; the cleanup's Close ends it.
	if got := <-lines; got != "OK" {
		t.Fatalf("MONITOR answered %q", got)
	}
	if err := s.goRedis(t).Do(ctx, "CL.THROTTLE", "user1", "15", "30", "60").Err(); err != nil {
		t.Fatal(err)
	}
	got := <-lines
	for !strings.Contains(got, "CL.THROTTLE") { // go-redis's own HELLO first
		got = <-lines
	}
	if !regexp.MustCompile(`^[0-9]+\.[0-9]{6} \[0 127\.0\.0\.1:[0-9]+\] "CL.THROTTLE" "user1" "15" "30" "60"$`).MatchString(got) {
		t.Errorf("line %q", got)
	}
}
