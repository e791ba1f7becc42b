package compat_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/persist/redistest"
)

// startRedis starts redis-server on a free loopback port, without
// persistence and with one database (as cellserver has), and waits until it
// accepts connections. The test's cleanup stops it.
func startRedis(t *testing.T) *redistest.Server {
	t.Helper()
	return redistest.StartWith(t, "--databases", "1")
}

// sideCase is a conversation sent to cellserver and to Redis on a fresh
// connection each; the replies must be the same bytes.
type sideCase struct {
	name  string
	steps []sideStep
	// closes says the server closes the connection after the last step.
	closes bool
}

// sideStep is raw bytes to send and whether to compare the reply (false
// for replies that differ by nature: ids, versions).
type sideStep struct {
	send   string
	ignore bool
}

func cmds(commands ...[]string) []sideStep {
	steps := make([]sideStep, len(commands))
	for i, c := range commands {
		steps[i] = sideStep{send: resp(c...)}
	}
	return steps
}

func c(args ...string) []string { return args }

// sideCases are the commands whose answers must match Redis 7 byte for
// byte. Redis has no CL.THROTTLE, so the keyspace stays empty. Redis runs
// with one database, as cellserver has (Redis's default is 16, so SELECT 1
// answers +OK there: a deliberate difference).
//
// Replies whose order Redis does not fix (CONFIG GET of several parameters,
// KEYS and SCAN of several keys) are not compared here.
var sideCases = []sideCase{
	{name: "PING", steps: cmds(c("PING"), c("ping", "hello"), c("PING", "a", "b"))},
	{name: "ECHO", steps: cmds(c("ECHO", "hi"), c("ECHO", ""), c("ECHO", "\x00\xff\r\n"), c("ECHO"), c("ECHO", "a", "b"))},
	{name: "unknown command", steps: cmds(c("foo", "a", "b"), c("foo"), c("FOO", "x"),
		c("foo", strings.Repeat("x", 200), "y"), c("foo", "a\r\nb"), c(strings.Repeat("n", 200)))},
	{name: "wrong arity", steps: cmds(c("GET"), c("GET", "a", "b"), c("DEL"), c("UNLINK"), c("EXISTS"), c("TTL"),
		c("PTTL", "a", "b"), c("TYPE"), c("KEYS"), c("SCAN"), c("DBSIZE", "x"), c("MULTI", "x"),
		c("DISCARD", "x"), c("SELECT"), c("FLUSHALL", "a", "b"))},
	{name: "EXEC wrong arity", steps: cmds(c("EXEC", "x"), c("MULTI"), c("EXEC", "x"), c("EXEC"))},
	{name: "empty keyspace", steps: cmds(c("DBSIZE"), c("GET", "a"), c("DEL", "a"), c("DEL", "a", "b", "c"), c("UNLINK", "a"),
		c("TTL", "a"), c("PTTL", "a"), c("TYPE", "a"), c("EXISTS", "a"), c("EXISTS", "a", "b", "a"),
		c("KEYS", "*"), c("KEYS", "a*"))},
	{name: "SCAN", steps: cmds(c("SCAN", "0"), c("SCAN", "0", "MATCH", "*", "COUNT", "10"), c("SCAN", "0", "TYPE", "string"),
		c("scan", "0", "match", "a*", "count", "1", "type", "hash"), c("SCAN", "abc"),
		c("SCAN", "18446744073709551615"), c("SCAN", "18446744073709551616"), c("SCAN", "0", "COUNT", "0"),
		c("SCAN", "0", "COUNT", "abc"), c("SCAN", "0", "MATCH"), c("SCAN", "0", "FOO", "bar"),
		c("SCAN", "007"), c("SCAN", " 1"), c("SCAN", "1 "), c("SCAN", "0x1"))},
	{name: "SCAN cursor syntax", steps: cmds(c("SCAN", "-1"), c("SCAN", ""), c("SCAN", "+5"), c("SCAN", "-0"))},
	{name: "SELECT", steps: cmds(c("SELECT", "0"), c("SELECT", "1"), c("SELECT", "abc"), c("SELECT", "-1"))},
	{name: "FLUSH", steps: cmds(c("FLUSHALL"), c("FLUSHDB"), c("FLUSHALL", "ASYNC"), c("flushdb", "sync"), c("FLUSHALL", "foo"))},
	{name: "MULTI EXEC empty", steps: cmds(c("MULTI"), c("EXEC"))},
	{name: "MULTI EXEC", steps: cmds(c("MULTI"), c("DBSIZE"), c("EXISTS", "a"), c("PING"), c("GET", "a"), c("EXEC"))},
	{name: "EXEC DISCARD without MULTI", steps: cmds(c("EXEC"), c("DISCARD"))},
	{name: "MULTI nested", steps: cmds(c("MULTI"), c("MULTI"), c("DISCARD"))},
	{name: "MULTI EXECABORT arity", steps: cmds(c("MULTI"), c("GET"), c("EXEC"))},
	{name: "MULTI EXECABORT unknown", steps: cmds(c("MULTI"), c("nosuch", "x"), c("PING"), c("EXEC"))},
	{name: "HELLO errors", steps: cmds(c("HELLO", "4"), c("HELLO", "1"), c("HELLO", "abc"), c("HELLO", "3", "FOO"))},
	{name: "CLIENT names", steps: cmds(c("CLIENT", "SETNAME", "bad name"), c("CLIENT", "SETNAME", "a\nb"),
		c("CLIENT", "GETNAME"), c("CLIENT", "SETNAME", "ok"), c("CLIENT", "GETNAME"), c("CLIENT", "SETNAME", ""),
		c("CLIENT", "GETNAME"), c("CLIENT", "FOO"), c("CLIENT"))},
	{name: "CONFIG", steps: cmds(c("CONFIG", "SET", "unknown", "1"), c("CONFIG", "GET", "timeout"),
		c("CONFIG", "GET", "nonexistent"), c("CONFIG", "FOO"), c("CONFIG", "GET"), c("CONFIG", "GET", "proto-max-bulk-len"),
		c("CONFIG", "GET", "proto*"), c("config", "get", "TIMEOUT"), c("CONFIG", "RESETSTAT"))},
	{name: "COMMAND", steps: cmds(c("COMMAND", "INFO", "nosuch"), c("COMMAND", "GETKEYS", "GET", "a"),
		c("COMMAND", "GETKEYS", "foo", "bar"), c("COMMAND", "DOCS", "nosuch"), c("COMMAND", "FOO"))},
	{name: "COMMAND GETKEYS arity", steps: cmds(c("COMMAND", "GETKEYS", "foo"), c("COMMAND", "GETKEYS", "GET"))},
	{name: "RESP3", steps: append([]sideStep{{send: resp("HELLO", "3"), ignore: true}}, cmds(
		c("GET", "a"), c("CONFIG", "GET", "timeout"), c("SCAN", "0"), c("EXISTS", "a"), c("PING"), c("ECHO", "x"),
		c("COMMAND", "INFO", "nosuch"), c("KEYS", "*"), c("CLIENT", "GETNAME"), c("foo"))...)},
	{name: "RESET", steps: cmds(c("MULTI"), c("RESET"), c("EXEC"))},
	{name: "QUIT", steps: cmds(c("QUIT")), closes: true},
	{name: "inline", steps: []sideStep{{send: "PING\r\n"}, {send: "ECHO hello\r\n"}, {send: "ECHO \"a b\"\r\n"},
		{send: "\r\nPING\r\n"}, {send: "  PING  \r\n"}, {send: "ping\n"}, {send: "ECHO 'x\\'y'\r\n"}}},
	{name: "empty multibulks", steps: []sideStep{{send: "*0\r\n*-1\r\nPING\r\n"}, {send: "*-5\r\nPING\r\n"}}},
	{name: "bulk length max int64", steps: []sideStep{{send: "*1\r\n$9223372036854775807\r\n"}}, closes: true},
	{name: "bulk length beyond proto-max-bulk-len", steps: []sideStep{{send: "*1\r\n$536870913\r\n"}}, closes: true},
	{name: "bulk length not a number", steps: []sideStep{{send: "*1\r\n$abc\r\n"}}, closes: true},
	{name: "negative bulk length", steps: []sideStep{{send: "*1\r\n$-5\r\n"}}, closes: true},
	{name: "multibulk length not a number", steps: []sideStep{{send: "*abc\r\n"}}, closes: true},
	{name: "multibulk length beyond int32", steps: []sideStep{{send: "*3000000000\r\n"}}, closes: true},
	{name: "$ expected", steps: []sideStep{{send: "*1\r\nfoo\r\n"}}, closes: true},
	{name: "unbalanced quotes", steps: []sideStep{{send: "ECHO \"a b\r\n"}}, closes: true},
}

// TestSideBySideWithRedis sends each of sideCases to cellserver and to a
// real Redis and compares the replies byte for byte.
func TestSideBySideWithRedis(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t).Addr
	cellAddr := startServer(t).addr
	for _, tc := range sideCases {
		t.Run(tc.name, func(t *testing.T) {
			want := converse(t, redisAddr, tc)
			got := converse(t, cellAddr, tc)
			report := t.Errorf
			for i := range max(len(want), len(got)) {
				var w, g string
				if i < len(want) {
					w = want[i]
				}
				if i < len(got) {
					g = got[i]
				}
				if w != g {
					report("reply %d to %q:\n redis      %q\n cellserver %q", i+1, sendOf(tc, i), w, g)
				}
			}
		})
	}
}

// converse runs tc on a fresh connection to addr and returns one entry per
// step (the reply, "<ignored>" or "<closed>"), and for a case that closes,
// a last entry saying whether the connection was closed.
func converse(t *testing.T, addr string, tc sideCase) []string {
	t.Helper()
	c := dialRaw(t, addr)
	var out []string
	for _, st := range tc.steps {
		c.send(st.send)
		c.c.SetReadDeadline(time.Now().Add(ioTimeout))
		b, err := readReply(c.r)
		switch {
		case err != nil && isClosed(err) && len(b) == 0:
			return append(out, "<closed>")
		case err != nil:
			t.Fatalf("%s: reading the reply to %q: %v (got %q)", addr, st.send, err, b)
		case st.ignore:
			out = append(out, "<ignored>")
		default:
			out = append(out, string(b))
		}
	}
	if tc.closes {
		c.c.SetReadDeadline(time.Now().Add(ioTimeout))
		if b, err := readReply(c.r); err != nil && isClosed(err) && len(b) == 0 {
			out = append(out, "<closed>")
		} else {
			out = append(out, "<open> "+string(b))
		}
	}
	return out
}

func sendOf(tc sideCase, i int) string {
	if i < len(tc.steps) {
		return tc.steps[i].send
	}
	return "(end of the conversation)"
}
