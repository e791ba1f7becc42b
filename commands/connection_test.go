package commands

import "testing"

func TestConnectionCommands(t *testing.T) {
	cases := []struct {
		name  string
		steps []replyStep
	}{
		{"ping", []replyStep{
			{[]string{"PING"}, wantStatus("PONG")},
			{[]string{"ping", "hello world"}, wantBulk("hello world")},
			{[]string{"PING", ""}, wantBulk("")},
			{[]string{"PING", "a", "b"}, wantErr("ERR wrong number of arguments for 'ping' command")},
		}},
		{"echo", []replyStep{
			{[]string{"ECHO", "x\r\ny"}, wantBulk("x\r\ny")},
			{[]string{"ECHO"}, wantErr("ERR wrong number of arguments for 'echo' command")},
			{[]string{"ECHO", "a", "b"}, wantErr("ERR wrong number of arguments for 'echo' command")},
		}},
		{"select", []replyStep{
			{[]string{"SELECT", "0"}, wantStatus("OK")},
			{[]string{"SELECT", "1"}, wantErr("ERR DB index is out of range")},
			{[]string{"SELECT", "-1"}, wantErr("ERR DB index is out of range")},
			{[]string{"SELECT", "2147483647"}, wantErr("ERR DB index is out of range")},
			{[]string{"SELECT", "2147483648"}, wantErr("ERR value is out of range, value must between -2147483648 and 2147483647")},
			{[]string{"SELECT", "00"}, wantErr("ERR value is not an integer or out of range")},
			{[]string{"SELECT", "x"}, wantErr("ERR value is not an integer or out of range")},
			{[]string{"SELECT"}, wantErr("ERR wrong number of arguments for 'select' command")},
		}},
		{"quit", []replyStep{
			{[]string{"QUIT"}, wantStatus("OK")},
		}},
		{"reset", []replyStep{
			{[]string{"CLIENT", "SETNAME", "worker"}, wantStatus("OK")},
			{[]string{"MULTI"}, wantStatus("OK")},
			{[]string{"RESET"}, wantStatus("RESET")},
			{[]string{"EXEC"}, wantErr("ERR EXEC without MULTI")},
			{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
			{[]string{"RESET", "x"}, wantErr("ERR wrong number of arguments for 'reset' command")},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newHarness(t).runSteps(c.steps)
		})
	}
}

func TestQuitClosesAfterReply(t *testing.T) {
	h := newHarness(t)
	h.do("MULTI")
	if got := h.do("QUIT"); got != wantStatus("OK") {
		t.Fatalf("QUIT inside MULTI = %q, want +OK at once", got)
	}
	if !h.client.Close {
		t.Fatal("QUIT did not set Client.Close")
	}
}

func TestResetGoesBackToRESP2(t *testing.T) {
	h := newHarness(t)
	h.doLive("HELLO", "3")
	if got := h.do("CLIENT", "GETNAME"); got != "_\r\n" {
		t.Fatalf("GETNAME in RESP3 = %q", got)
	}
	if got := h.doLive("RESET"); got != wantStatus("RESET") {
		t.Fatalf("RESET = %q", got)
	}
	if h.client.Proto != 2 {
		t.Fatalf("after RESET Proto = %d, want 2", h.client.Proto)
	}
	if got := h.do("CLIENT", "GETNAME"); got != "$-1\r\n" {
		t.Fatalf("GETNAME after RESET = %q", got)
	}
}
