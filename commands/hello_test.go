package commands

import "testing"

// helloReply spells HELLO's reply for client id 1 in RESP2 or RESP3.
func helloReply(proto int) string {
	head := wantArray(14)
	modules := wantArray(0)
	if proto == 3 {
		head = wantMap3(7)
	}
	p := int64(proto)
	return head + wantBulks("server", "redis", "version", "7.0.15", "proto") + wantInt(p) +
		wantBulk("id") + wantInt(1) + wantBulks("mode", "standalone", "role", "master", "modules") + modules
}

func TestHello(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		want      string
		wantProto int
		wantName  string
	}{
		{"no version", []string{"HELLO"}, helloReply(2), 2, ""},
		{"2", []string{"HELLO", "2"}, helloReply(2), 2, ""},
		{"3 replies in RESP3", []string{"HELLO", "3"}, helloReply(3), 3, ""},
		{"setname", []string{"hello", "3", "setname", "app"}, helloReply(3), 3, "app"},
		{"auth default", []string{"HELLO", "3", "AUTH", "default", "anything", "SETNAME", "x"}, helloReply(3), 3, "x"},
		{"auth other user", []string{"HELLO", "3", "AUTH", "bob", "pw"},
			wantErr("WRONGPASS invalid username-password pair or user is disabled."), 2, ""},
		{"version 4", []string{"HELLO", "4"}, wantErr("NOPROTO unsupported protocol version"), 2, ""},
		{"version 1", []string{"HELLO", "1"}, wantErr("NOPROTO unsupported protocol version"), 2, ""},
		{"version not int", []string{"HELLO", "three"},
			wantErr("ERR Protocol version is not an integer or out of range"), 2, ""},
		{"auth first", []string{"HELLO", "AUTH", "default", "pw"},
			wantErr("ERR Protocol version is not an integer or out of range"), 2, ""},
		{"unknown option", []string{"HELLO", "3", "Foo"}, wantErr("ERR Syntax error in HELLO option 'Foo'"), 2, ""},
		{"auth short", []string{"HELLO", "3", "AUTH", "default"},
			wantErr("ERR Syntax error in HELLO option 'AUTH'"), 2, ""},
		{"setname without name", []string{"HELLO", "3", "SETNAME"},
			wantErr("ERR Syntax error in HELLO option 'SETNAME'"), 2, ""},
		{"bad name", []string{"HELLO", "3", "SETNAME", "a b"},
			wantErr("ERR Client names cannot contain spaces, newlines or special characters."), 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			if got := h.doLive(c.args...); got != c.want {
				t.Errorf("reply\n got %q\nwant %q", got, c.want)
			}
			if h.client.Proto != c.wantProto || h.client.Name != c.wantName {
				t.Errorf("proto %d name %q, want %d %q", h.client.Proto, h.client.Name, c.wantProto, c.wantName)
			}
		})
	}
}

func TestHelloSwitchesLaterReplies(t *testing.T) {
	h := newHarness(t)
	h.runSteps([]replyStep{
		{[]string{"CONFIG", "GET", "databases"}, wantArray(2) + wantBulks("databases", "1")},
		{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
	})
	h.doLive("HELLO", "3")
	h.runSteps([]replyStep{
		{[]string{"PING"}, wantStatus("PONG")},
		{[]string{"CONFIG", "GET", "databases"}, wantMap3(1) + wantBulks("databases", "1")},
		{[]string{"CLIENT", "GETNAME"}, "_\r\n"},
	})
	if got := h.doLive("HELLO", "2"); got != helloReply(2) {
		t.Fatalf("HELLO 2 after 3 = %q", got)
	}
	h.runSteps([]replyStep{{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"}})
}

func TestAuth(t *testing.T) {
	newHarness(t).runSteps([]replyStep{
		{[]string{"AUTH", "secret"}, wantErr("ERR AUTH <password> called without any password configured " +
			"for the default user. Are you sure your configuration is correct?")},
		{[]string{"AUTH", "default", "secret"}, wantStatus("OK")},
		{[]string{"AUTH", "Default", "secret"}, wantErr("WRONGPASS invalid username-password pair or user is disabled.")},
		{[]string{"AUTH", "a", "b", "c"}, wantErr("ERR syntax error")},
		{[]string{"AUTH"}, wantErr("ERR wrong number of arguments for 'auth' command")},
	})
}
