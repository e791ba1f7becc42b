package compat_test

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRawThrottleErrors checks every CL.THROTTLE error of
// redis-cell-replies.md byte for byte on the wire.
func TestRawThrottleErrors(t *testing.T) {
	t.Parallel()
	c := dialRaw(t, startServer(t).addr)
	const usage = "-" + cellUsage + "\r\n"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"CL.THROTTLE"}, usage},
		{[]string{"CL.THROTTLE", "k"}, usage},
		{[]string{"CL.THROTTLE", "k", "15"}, usage},
		{[]string{"CL.THROTTLE", "k", "15", "30"}, usage},
		{[]string{"CL.THROTTLE", "k", "15", "30", "60", "1", "extra"}, usage},
		{[]string{"CL.THROTTLE", "k", "15", "30", "60", "1", "extra", "more"}, usage},
		{[]string{"cl.throttle", "k"}, usage},
		{[]string{"Cl.Throttle", "k"}, usage},
		{[]string{"CL.THROTTLE", "k", "abc", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: abc\r\n"},
		{[]string{"CL.THROTTLE", "k", "15", "abc", "60"}, "-Cell error: Store error: Couldn't parse as integer: abc\r\n"},
		{[]string{"CL.THROTTLE", "k", "15", "30", "abc"}, "-Cell error: Store error: Couldn't parse as integer: abc\r\n"},
		{[]string{"CL.THROTTLE", "k", "15", "30", "60", "abc"}, "-Cell error: Store error: Couldn't parse as integer: abc\r\n"},
		{[]string{"CL.THROTTLE", "k", "1.5", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1.5\r\n"},
		{[]string{"CL.THROTTLE", "k", "15", "30", "60.0"}, "-Cell error: Store error: Couldn't parse as integer: 60.0\r\n"},
		{[]string{"CL.THROTTLE", "k", "", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: \r\n"},
		{[]string{"CL.THROTTLE", "k", " 15", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer:  15\r\n"},
		{[]string{"CL.THROTTLE", "k", "15 ", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 15 \r\n"},
		{[]string{"CL.THROTTLE", "k", "0x10", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 0x10\r\n"},
		{[]string{"CL.THROTTLE", "k", "1e3", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1e3\r\n"},
		{[]string{"CL.THROTTLE", "k", "9223372036854775808", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 9223372036854775808\r\n"},
		{[]string{"CL.THROTTLE", "k", "1\xff", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1\xff\r\n"},
		// An error reply is one line: CR and LF in the echoed argument become spaces.
		{[]string{"CL.THROTTLE", "k", "1\r\n2", "30", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1  2\r\n"},
		{[]string{"CL.THROTTLE", "c0", "15", "0", "60"}, "-" + cellZeroRate + "\r\n"},
		{[]string{"CL.THROTTLE", "p0", "15", "30", "0"}, "-" + cellZeroRate + "\r\n"},
		{[]string{"CL.THROTTLE", "k14c", "15", "9223372036854775807", "60"}, "-" + cellZeroRate + "\r\n"},
		{[]string{"CL.THROTTLE", "qneg", "15", "30", "60", "-1"}, "-" + cellExpire + "\r\n"},
		{[]string{"CL.THROTTLE", "k14e", "15", "30", "60", "9223372036854775807"}, "-" + cellExpire + "\r\n"},
		// And the replies that are not errors, in RESP2.
		{[]string{"CL.THROTTLE", "user123", "15", "30", "60"}, ints(0, 16, 15, -1, 2)},
		{[]string{"CL.THROTTLE", "k14", "9223372036854775807", "30", "60"}, ints(1, -9223372036854775808, 0, -1, 0)},
	}
	for _, tt := range tests {
		if got := c.do(tt.args...); got != tt.want {
			t.Errorf("%q:\n got  %q\n want %q", tt.args, got, tt.want)
		}
	}
}

func TestRawErrors(t *testing.T) {
	t.Parallel()
	c := dialRaw(t, startServer(t).addr)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"foo", "a", "b"}, "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"},
		{[]string{"foo"}, "-ERR unknown command 'foo', with args beginning with: \r\n"},
		{[]string{"FOO", "x"}, "-ERR unknown command 'FOO', with args beginning with: 'x' \r\n"},
		{[]string{"get"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"GET", "a", "b"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"del"}, "-ERR wrong number of arguments for 'del' command\r\n"},
		{[]string{"DBSIZE", "x"}, "-ERR wrong number of arguments for 'dbsize' command\r\n"},
	}
	for _, tt := range tests {
		if got := c.do(tt.args...); got != tt.want {
			t.Errorf("%q:\n got  %q\n want %q", tt.args, got, tt.want)
		}
	}
}

func TestRawMulti(t *testing.T) {
	t.Parallel()
	c := dialRaw(t, startServer(t).addr)
	steps := []struct {
		args []string
		want string
	}{
		// A command that fails to queue aborts the transaction.
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"CL.THROTTLE", "m", "15", "30", "60"}, "+QUEUED\r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"EXISTS", "m"}, ":0\r\n"},
		// So does an unknown command.
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"nosuch"}, "-ERR unknown command 'nosuch', with args beginning with: \r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		// CL.THROTTLE's usage error is not an arity error (arity is -1): it
		// is queued and comes from EXEC, as in Redis with redis-cell.
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"CL.THROTTLE", "m"}, "+QUEUED\r\n"},
		{[]string{"CL.THROTTLE", "m", "15", "30", "60"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*2\r\n-" + cellUsage + "\r\n" + ints(0, 16, 15, -1, 2)},
		{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
		{[]string{"DISCARD"}, "-ERR DISCARD without MULTI\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"MULTI"}, "-ERR MULTI calls can not be nested\r\n"},
		{[]string{"DISCARD"}, "+OK\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"EXEC"}, "*0\r\n"},
	}
	for i, st := range steps {
		if got := c.do(st.args...); got != st.want {
			t.Errorf("step %d %q:\n got  %q\n want %q", i+1, st.args, got, st.want)
		}
	}
}

// TestRawPipelined sends 1000 commands in one write and reads 1000 replies
// in order. The period is a year, so the clock moves nothing and every
// reply is exact.
func TestRawPipelined(t *testing.T) {
	t.Parallel()
	c := dialRaw(t, startServer(t).addr)
	const n = 1000
	var batch strings.Builder
	for range n {
		batch.WriteString(resp("CL.THROTTLE", "piped", "2000", "2000", "31536000"))
	}
	c.send(batch.String())
	const interval = 31536000 / 2000 // seconds between two allowed calls
	for i := int64(1); i <= n; i++ {
		want := ints(0, 2001, 2001-i, -1, i*interval)
		if got := c.reply(); got != want {
			t.Fatalf("reply %d:\n got  %q\n want %q", i, got, want)
		}
	}
	// The connection is still in step.
	if got := c.do("EXISTS", "piped"); got != ":1\r\n" {
		t.Errorf("EXISTS after the batch = %q", got)
	}
}

func TestRawInline(t *testing.T) {
	t.Parallel()
	c := dialRaw(t, startServer(t).addr)
	tests := []struct{ send, want string }{
		{"PING\r\n", "+PONG\r\n"},
		{"ping\n", "+PONG\r\n"},
		{"CL.THROTTLE inline 15 30 60\r\n", ints(0, 16, 15, -1, 2)},
		{"EXISTS inline\r\n", ":1\r\n"},
		{"\r\nPING\r\n", "+PONG\r\n"}, // an empty line is ignored
	}
	for _, tt := range tests {
		c.send(tt.send)
		if got := c.reply(); got != tt.want {
			t.Errorf("%q:\n got  %q\n want %q", tt.send, got, tt.want)
		}
	}
}

// TestRawProtocolErrors sends garbage; the server answers Redis's protocol
// error and closes that connection, while a client connected beside it
// carries on, and new clients are served.
func TestRawProtocolErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	tests := []struct{ name, send, want string }{
		{"bulk length max int64", "*1\r\n$9223372036854775807\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk length beyond proto-max-bulk-len", "*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk length not a number", "*1\r\n$abc\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"negative bulk length", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"multibulk length not a number", "*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"multibulk length beyond int32", "*3000000000\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"$ expected", "*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'\r\n"},
		{"unbalanced quotes", "SET \"a b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	}
	beside := dialRaw(t, s.addr)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			beside := beside.withT(t)
			if got := beside.do("CL.THROTTLE", "beside", "1000", "1000", "60"); !strings.HasPrefix(got, "*5\r\n:0\r\n") {
				t.Fatalf("client beside, before: %q", got)
			}
			c := dialRaw(t, s.addr)
			c.send(tt.send)
			if got := c.reply(); got != tt.want {
				t.Errorf("%q:\n got  %q\n want %q", tt.send, got, tt.want)
			}
			c.expectClosed()
			if got := beside.do("PING"); got != "+PONG\r\n" {
				t.Errorf("client beside, after: %q", got)
			}
		})
	}
	// A negative multibulk length is an empty command in Redis: no reply,
	// and the connection carries on.
	c := dialRaw(t, s.addr)
	c.send("*-5\r\n*0\r\nPING\r\n")
	if got := c.reply(); got != "+PONG\r\n" {
		t.Errorf("*-5 then *0 then PING: got %q, want only +PONG", got)
	}
	if got := dialRaw(t, s.addr).do("PING"); got != "+PONG\r\n" {
		t.Errorf("a new client after the garbage: %q", got)
	}
}

// TestRawManyClients runs clients side by side, each with its own keys and
// a shared one, to catch races under -race.
func TestRawManyClients(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const clients, calls = 8, 50
	start := time.Now()
	conns := make([]*rawConn, clients)
	for i := range conns {
		conns[i] = dialRaw(t, s.addr)
		conns[i].c.SetDeadline(time.Now().Add(ioTimeout))
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients) // each client reports its first error
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := throttleMany(c, fmt.Sprintf("own:%d", i), calls); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := conns[0].do("CL.THROTTLE", "shared", "1000", "1000", "31536000", "0"); !clWithin(got, start, 0, 1001, 1001-clients*calls, -1, clients*calls*31536) {
		t.Errorf("shared key after %d calls: %q", clients*calls, got)
	}
}

// clWithin reports whether reply is ints(want...) but for its last field,
// reset_after, which may be less by up to the whole seconds that have
// passed since start, plus one for the part of a second: the key's TAT was
// set at its first call, and the calls after it are that much later on a
// loaded machine.
func clWithin(reply string, start time.Time, want ...int64) bool {
	w := slices.Clone(want)
	for range int64(time.Since(start)/time.Second) + 2 {
		if reply == ints(w...) {
			return true
		}
		w[len(w)-1]--
	}
	return false
}

// throttleMany makes calls pipelined pairs of calls on c, one on key own
// and one on the shared key, and checks the replies. It runs on its own
// goroutine, so it returns its first error instead of failing the test.
func throttleMany(c *rawConn, own string, calls int64) error {
	start := time.Now()
	for j := int64(1); j <= calls; j++ {
		batch := resp("CL.THROTTLE", own, "100", "100", "31536000") + resp("CL.THROTTLE", "shared", "1000", "1000", "31536000")
		if _, err := io.WriteString(c.c, batch); err != nil {
			return fmt.Errorf("%s: write: %v", own, err)
		}
		mine, err := readReply(c.r)
		if err != nil || !clWithin(string(mine), start, 0, 101, 101-j, -1, j*315360) {
			return fmt.Errorf("%s call %d: %q, %v; want %q (its last field less by the seconds since the first call at most)",
				own, j, mine, err, ints(0, 101, 101-j, -1, j*315360))
		}
		shared, err := readReply(c.r)
		if err != nil || !strings.HasPrefix(string(shared), "*5\r\n:0\r\n:1001\r\n") {
			return fmt.Errorf("%s: shared call %d: %q, %v", own, j, shared, err)
		}
	}
	return nil
}

// TestRawCommandIntrospection checks rows 15, 15b and 15c: what COMMAND
// tells about CL.THROTTLE, as Redis with redis-cell 0.5 loaded tells it.
func TestRawCommandIntrospection(t *testing.T) {
	t.Parallel()
	c := dialRaw(t, startServer(t).addr)
	keySpec := "*6\r\n" +
		"$5\r\nflags\r\n*3\r\n+RW\r\n+access\r\n+update\r\n" +
		"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n" +
		"*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n"
	info := "*10\r\n$11\r\ncl.throttle\r\n:-1\r\n*2\r\n+write\r\n+module\r\n:1\r\n:1\r\n:1\r\n" +
		"*0\r\n" + // ACL categories
		"*0\r\n" + // tips
		"*1\r\n" + keySpec +
		"*0\r\n" // subcommands
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"COMMAND", "INFO", "cl.throttle"}, "*1\r\n" + info},
		{[]string{"COMMAND", "INFO", "CL.THROTTLE"}, "*1\r\n" + info},
		{[]string{"COMMAND", "GETKEYS", "CL.THROTTLE", "user123", "15", "30", "60"}, "*1\r\n$7\r\nuser123\r\n"},
		{[]string{"COMMAND", "DOCS", "cl.throttle"},
			"*2\r\n$11\r\ncl.throttle\r\n*4\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n$6\r\nmodule\r\n$10\r\nredis-cell\r\n"},
	}
	for _, tt := range tests {
		if got := c.do(tt.args...); got != tt.want {
			t.Errorf("%q:\n got  %q\n want %q", tt.args, got, tt.want)
		}
	}
}

// TestRawProtocolErrorsCounted: a protocol error is an error reply like
// any other in INFO errorstats and total_error_replies, as in Redis 7.0
// (`*1\r\n$abc\r\n` and an unbalanced quote there give
// errorstat_ERR:count=2).
func TestRawProtocolErrorsCounted(t *testing.T) {
	t.Parallel()
	addr := startServer(t).addr
	for _, raw := range []string{"*1\r\n$abc\r\n", "SET \"a\r\n"} {
		c := dialRaw(t, addr)
		c.send(raw)
		if got := c.reply(); !strings.HasPrefix(got, "-ERR Protocol error: ") {
			t.Fatalf("%q: got %q, want a protocol error", raw, got)
		}
		c.expectClosed()
	}
	info := dialRaw(t, addr)
	if got := info.do("INFO", "errorstats"); !strings.Contains(got, "errorstat_ERR:count=2\r\n") {
		t.Errorf("INFO errorstats = %q, want errorstat_ERR:count=2", got)
	}
	if got := info.do("INFO", "stats"); !strings.Contains(got, "total_error_replies:2\r\n") {
		t.Errorf("INFO stats has no total_error_replies:2: %q", got)
	}
}
