package commands

import (
	"strings"
	"testing"
)

// throttleInfo2 and throttleInfo3 are COMMAND INFO cl.throttle's entry as
// Redis 7.0 with redis-cell loaded answers it, in RESP2 and RESP3.
const (
	throttleInfo2 = "*10\r\n$11\r\ncl.throttle\r\n:-1\r\n*2\r\n+write\r\n+module\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n" +
		"*1\r\n*6\r\n" +
		"$5\r\nflags\r\n*3\r\n+RW\r\n+access\r\n+update\r\n" +
		"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n" +
		"*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n" +
		"*0\r\n"
	throttleInfo3 = "*10\r\n$11\r\ncl.throttle\r\n:-1\r\n~2\r\n+write\r\n+module\r\n:1\r\n:1\r\n:1\r\n~0\r\n~0\r\n" +
		"~1\r\n%3\r\n" +
		"$5\r\nflags\r\n~3\r\n+RW\r\n+access\r\n+update\r\n" +
		"$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n" +
		"%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n" +
		"~0\r\n"
)

func TestCommandInfoThrottle(t *testing.T) {
	h := newHarness(t)
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "INFO", "cl.throttle"}, "*1\r\n" + throttleInfo2},
		{[]string{"command", "info", "CL.THROTTLE", "nosuch"}, "*2\r\n" + throttleInfo2 + "$-1\r\n"},
	})
	h.doLive("HELLO", "3")
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "INFO", "cl.throttle", "nosuch"}, "*2\r\n" + throttleInfo3 + "_\r\n"},
	})
}

func TestCommandInfoOfOurRows(t *testing.T) {
	h := newHarness(t)
	ping := "*10\r\n" + wantBulk("ping") + wantInt(-1) + "*1\r\n+fast\r\n" + ":0\r\n:0\r\n:0\r\n" +
		"*2\r\n+@fast\r\n+@connection\r\n" + "*0\r\n*0\r\n*0\r\n"
	setname := "*10\r\n" + wantBulk("client|setname") + wantInt(3) + "*3\r\n+noscript\r\n+loading\r\n+stale\r\n" +
		":0\r\n:0\r\n:0\r\n*2\r\n+@slow\r\n+@connection\r\n*0\r\n*0\r\n*0\r\n"
	// DEL's key spec: from index 1 to the last argument.
	del := "*10\r\n" + wantBulk("del") + wantInt(-2) + "*1\r\n+write\r\n:1\r\n:-1\r\n:1\r\n" +
		"*2\r\n+@write\r\n+@slow\r\n*0\r\n" +
		"*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RM\r\n+delete\r\n" +
		"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n" +
		"*6\r\n$7\r\nlastkey\r\n:-1\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "INFO", "ping"}, "*1\r\n" + ping},
		{[]string{"COMMAND", "INFO", "client|SETNAME"}, "*1\r\n" + setname},
		{[]string{"COMMAND", "INFO", "client|nosuch", "nosuch|x", "ping|x"}, "*3\r\n$-1\r\n$-1\r\n$-1\r\n"},
		{[]string{"COMMAND", "INFO", "del"}, "*1\r\n" + del},
	})

	got := h.do("COMMAND", "INFO", "client")
	head := "*1\r\n*10\r\n" + wantBulk("client") + wantInt(-2) + "*0\r\n:0\r\n:0\r\n:0\r\n*1\r\n+@slow\r\n*0\r\n*0\r\n"
	if !strings.HasPrefix(got, head+"*10\r\n*10\r\n"+wantBulk("client|id")) {
		t.Fatalf("COMMAND INFO client = %q", got)
	}
}

func TestCommandAllAndCount(t *testing.T) {
	h := newHarness(t)
	n := len(h.cmds.table.sorted)
	if got := h.do("COMMAND", "COUNT"); got != wantInt(int64(n)) {
		t.Fatalf("COMMAND COUNT = %q, want %d", got, n)
	}
	all := h.do("COMMAND")
	if !strings.HasPrefix(all, wantArray(n)) || !strings.Contains(all, throttleInfo2) {
		t.Fatalf("COMMAND = %.200q...", all)
	}
	if info := h.do("COMMAND", "INFO"); info != all {
		t.Fatal("COMMAND INFO without names differs from COMMAND")
	}
}

func TestCommandList(t *testing.T) {
	h := newHarness(t)
	all := h.do("COMMAND", "LIST")
	for _, name := range []string{"cl.throttle", "ping", "client", "client|setname", "command|docs", "config|get"} {
		if !strings.Contains(all, wantBulk(name)) {
			t.Errorf("COMMAND LIST lacks %q", name)
		}
	}
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "LIST", "FILTERBY", "MODULE", "redis-cell"}, wantArray(1) + wantBulk("cl.throttle")},
		// Module names are found in any case, as Redis's module table finds them.
		{[]string{"COMMAND", "LIST", "FILTERBY", "MODULE", "Redis-CELL"}, wantArray(1) + wantBulk("cl.throttle")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "module", "nosuch"}, wantArray(0)},
		{[]string{"COMMAND", "LIST", "FILTERBY", "module", ""}, wantArray(0)},
		{[]string{"COMMAND", "LIST", "FILTERBY", "PATTERN", "CONFIG|*S*"},
			wantArray(2) + wantBulks("config|set", "config|resetstat")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "ACLCAT", "ADMIN"},
			wantArray(10) + wantBulks("client|list", "client|no-evict", "config|get", "config|set", "config|resetstat", "config|help",
				"slowlog|get", "slowlog|len", "slowlog|reset", "monitor")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"}, wantArray(0)},
		{[]string{"COMMAND", "LIST", "FILTERBY", "size", "x"}, wantErr("ERR syntax error")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "MODULE"}, wantErr("ERR syntax error")},
		{[]string{"COMMAND", "LIST", "x"}, wantErr("ERR syntax error")},
	})
}

func TestCommandHelpAndUnknown(t *testing.T) {
	h := newHarness(t)
	if got := h.do("COMMAND", "HELP"); !strings.HasPrefix(got, "*21\r\n+COMMAND <subcommand>") {
		t.Fatalf("COMMAND HELP = %q", got)
	}
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "FOO"}, wantErr("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")},
		{[]string{"COMMAND", "COUNT", "x"}, wantErr("ERR wrong number of arguments for 'command|count' command")},
	})
}
