package commands

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestClientSubcommands(t *testing.T) {
	const badName = "ERR Client names cannot contain spaces, newlines or special characters."
	cases := []struct {
		name  string
		steps []replyStep
	}{
		{"id", []replyStep{
			{[]string{"CLIENT", "ID"}, wantInt(1)},
			{[]string{"client", "id", "x"}, wantErr("ERR wrong number of arguments for 'client|id' command")},
		}},
		{"setname getname", []replyStep{
			{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
			{[]string{"CLIENT", "SETNAME", "worker-1"}, wantStatus("OK")},
			{[]string{"CLIENT", "GETNAME"}, wantBulk("worker-1")},
			{[]string{"CLIENT", "SETNAME", "a b"}, wantErr(badName)},
			{[]string{"CLIENT", "SETNAME", "a\nb"}, wantErr(badName)},
			{[]string{"CLIENT", "SETNAME", "caf\xc3\xa9"}, wantErr(badName)},
			{[]string{"CLIENT", "GETNAME"}, wantBulk("worker-1")},
			{[]string{"CLIENT", "SETNAME", ""}, wantStatus("OK")},
			{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
			{[]string{"CLIENT", "SETNAME"}, wantErr("ERR wrong number of arguments for 'client|setname' command")},
		}},
		{"setinfo", []replyStep{
			{[]string{"CLIENT", "SETINFO", "LIB-NAME", "go-redis(,go1.26.8)"}, wantStatus("OK")},
			{[]string{"CLIENT", "SETINFO", "lib-ver", "9.7.0"}, wantStatus("OK")},
			{[]string{"CLIENT", "SETINFO", "LIB-NAME", "a b"},
				wantErr("ERR LIB-NAME cannot contain spaces, newlines or special characters.")},
			{[]string{"CLIENT", "SETINFO", "color", "red"}, wantErr("ERR Unrecognized option 'color'")},
			{[]string{"CLIENT", "SETINFO", "LIB-NAME"},
				wantErr("ERR wrong number of arguments for 'client|setinfo' command")},
		}},
		{"modes", []replyStep{
			{[]string{"CLIENT", "NO-EVICT", "on"}, wantStatus("OK")},
			{[]string{"CLIENT", "NO-EVICT", "OFF"}, wantStatus("OK")},
			{[]string{"CLIENT", "NO-EVICT", "maybe"}, wantErr("ERR syntax error")},
			{[]string{"CLIENT", "NO-TOUCH", "on"}, wantStatus("OK")},
			{[]string{"CLIENT", "REPLY", "ON"}, wantStatus("OK")},
			{[]string{"CLIENT", "REPLY", "off"}, wantErr("ERR CLIENT REPLY OFF and SKIP are not supported; only ON is")},
			{[]string{"CLIENT", "REPLY", "SKIP"}, wantErr("ERR CLIENT REPLY OFF and SKIP are not supported; only ON is")},
			{[]string{"CLIENT", "REPLY", "x"}, wantErr("ERR syntax error")},
		}},
		{"unknown and arity", []replyStep{
			{[]string{"CLIENT"}, wantErr("ERR wrong number of arguments for 'client' command")},
			{[]string{"CLIENT", "kill", "x"}, wantErr("ERR unknown subcommand 'kill'. Try CLIENT HELP.")},
			{[]string{"client", "a\r\nb"}, wantErr("ERR unknown subcommand 'a  b'. Try CLIENT HELP.")},
			{[]string{"CLIENT", strings.Repeat("x", 200)},
				wantErr("ERR unknown subcommand '" + strings.Repeat("x", 128) + "'. Try CLIENT HELP.")},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newHarness(t).runSteps(c.steps)
		})
	}
}

func TestClientSetInfoShowsInList(t *testing.T) {
	h := newHarness(t)
	h.do("CLIENT", "SETINFO", "LIB-NAME", "redis-py")
	h.do("CLIENT", "SETINFO", "LIB-VER", "5.0.1")
	got := h.do("CLIENT", "INFO")
	if !strings.Contains(got, " lib-name=redis-py lib-ver=5.0.1\n") {
		t.Fatalf("CLIENT INFO = %q, want lib-name and lib-ver", got)
	}
}

func TestClientHelp(t *testing.T) {
	got := newHarness(t).do("CLIENT", "HELP")
	if !strings.HasPrefix(got, "*27\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GETNAME\r\n") ||
		!strings.HasSuffix(got, "+HELP\r\n+    Prints this help.\r\n") {
		t.Fatalf("CLIENT HELP = %q", got)
	}
}

// clientLine spells the CLIENT LIST line of a client that was accepted at
// the harness's start.
func clientLine(id, addr, name string, age, idle int, flags, multi, cmd string, resp int) string {
	return "id=" + id + " addr=" + addr + " laddr=127.0.0.1:6379 fd=-1 name=" + name +
		" age=" + strconv.Itoa(age) + " idle=" + strconv.Itoa(idle) + " flags=" + flags + " db=0 sub=0 psub=0 ssub=0 multi=" + multi +
		" qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=" + cmd +
		" user=default redir=-1 resp=" + strconv.Itoa(resp) + " lib-name= lib-ver=\n"
}

func TestClientInfo(t *testing.T) {
	h := newHarness(t)
	h.do("CLIENT", "SETNAME", "me")
	h.clock.Advance(7 * time.Second)
	want := clientLine("1", "127.0.0.1:50000", "me", 7, 0, "N", "-1", "client|info", 2)
	if got := h.do("CLIENT", "INFO"); got != wantBulk(want) {
		t.Fatalf("CLIENT INFO\n got %q\nwant %q", got, wantBulk(want))
	}
	h.do("MULTI")
	h.do("PING")
	h.do("CLIENT", "INFO") // queued
	if got := h.do("EXEC"); !strings.Contains(got, " flags=N ") {
		t.Fatalf("CLIENT INFO inside EXEC = %q, want out of MULTI", got)
	}
	h.doLive("HELLO", "3")
	want = clientLine("1", "127.0.0.1:50000", "me", 7, 0, "N", "-1", "client|info", 3)
	if got := h.do("CLIENT", "INFO"); got != wantVerbatim(want) {
		t.Fatalf("CLIENT INFO in RESP3\n got %q\nwant %q", got, wantVerbatim(want))
	}
}

func TestClientList(t *testing.T) {
	h := newHarness(t)
	start := h.clock.Now()
	other := NewClient(5, "10.0.0.2:4000", "127.0.0.1:6379", start)
	other.Name, other.LastCommand, other.Proto = "peer", "cl.throttle", 3
	other.LastActive = start.Add(2 * time.Second)
	queued := NewClient(3, "10.0.0.3:4000", "127.0.0.1:6379", start)
	queued.multi = &multiState{queued: [][][]byte{{[]byte("ping")}}}
	stale := h.client.Info() // the host's snapshot of the caller is older than the caller
	stale.Name = "old"
	h.withOpts(Options{Host: &stubHost{clients: []ClientInfo{other.Info(), stale, queued.Info()}}})
	h.do("CLIENT", "SETNAME", "me")
	h.clock.Advance(10 * time.Second)

	self := clientLine("1", "127.0.0.1:50000", "me", 10, 0, "N", "-1", "client|list", 2)
	three := clientLine("3", "10.0.0.3:4000", "", 10, 10, "x", "0", "NULL", 2)
	five := clientLine("5", "10.0.0.2:4000", "peer", 10, 8, "N", "-1", "cl.throttle", 3)
	h.runSteps([]replyStep{
		{[]string{"CLIENT", "LIST"}, wantBulk(self + three + five)},
		{[]string{"CLIENT", "LIST", "TYPE", "normal"}, wantBulk(self + three + five)},
		{[]string{"CLIENT", "LIST", "type", "replica"}, wantBulk("")},
		{[]string{"CLIENT", "LIST", "TYPE", "pubsub"}, wantBulk("")},
		{[]string{"CLIENT", "LIST", "ID", "5", "9", "1", "5"}, wantBulk(five + self + five)},
		{[]string{"CLIENT", "LIST", "ID", "x"}, wantErr("ERR Invalid client ID")},
		{[]string{"CLIENT", "LIST", "TYPE", "bogus"}, wantErr("ERR Unknown client type 'bogus'")},
		{[]string{"CLIENT", "LIST", "TYPE"}, wantErr("ERR syntax error")},
		{[]string{"CLIENT", "LIST", "ID"}, wantErr("ERR syntax error")},
		{[]string{"CLIENT", "LIST", "TYPE", "normal", "x"}, wantErr("ERR syntax error")},
	})

	h.do("MULTI")
	h.do("PING")
	h.do("PING")
	if got := h.do("CLIENT", "LIST", "ID", "1"); got != "+QUEUED\r\n" {
		t.Fatalf("CLIENT LIST inside MULTI = %q", got)
	}
	got := h.do("EXEC")
	// The list runs inside EXEC, after MULTI has ended: the caller is no
	// longer queueing.
	if !strings.Contains(got, "id=1 ") || !strings.Contains(got, " flags=N ") {
		t.Fatalf("EXEC reply = %q", got)
	}
}

// TestClientLineShowsOwnQueue checks the caller's own MULTI queue length.
func TestClientLineShowsOwnQueue(t *testing.T) {
	h := newHarness(t)
	h.client.multi = &multiState{queued: [][][]byte{{[]byte("ping")}, {[]byte("ping")}}}
	var b strings.Builder
	appendClientLine(&b, h.client.Info(), h.client, h.clock.Now())
	if !strings.Contains(b.String(), " flags=x db=0 sub=0 psub=0 ssub=0 multi=2 ") {
		t.Fatalf("line = %q", b.String())
	}
}
