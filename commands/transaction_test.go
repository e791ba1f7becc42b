package commands

import "testing"

func TestMultiExec(t *testing.T) {
	h := newHarness(t)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
		{[]string{"EXEC", "x"}, "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"},
		{[]string{"DISCARD"}, "-ERR DISCARD without MULTI\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"MULTI"}, "-ERR MULTI calls can not be nested\r\n"},
		{[]string{"CL.THROTTLE", "k", "15", "30", "60"}, "+QUEUED\r\n"},
		{[]string{"CL.THROTTLE", "k", "15", "30", "60"}, "+QUEUED\r\n"},
		{[]string{"CL.THROTTLE", "k"}, "+QUEUED\r\n"}, // arity -1: the usage error comes from EXEC
		{[]string{"DBSIZE"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*4\r\n" + ints(0, 16, 15, -1, 2) + ints(0, 16, 14, -1, 4) +
			"-" + msgCellUsage + "\r\n" + ":1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"DEL", "k"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"EXISTS", "k"}, ":1\r\n"}, // the aborted DEL did not run
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"NOSUCH", "a"}, "-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n"},
		{[]string{"DISCARD"}, "+OK\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"EXEC"}, "*0\r\n"},
		// A subcommand is resolved and its arity checked when it is queued.
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"CLIENT", "SETNAME"}, "-ERR wrong number of arguments for 'client|setname' command\r\n"},
		{[]string{"CLIENT", "NOSUCH"}, "-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\r\n"},
		{[]string{"CLIENT", "SETNAME", "x"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"EXEC", "x"}, "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"},
		{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"}, // the rejected EXEC discarded it
	}
	for _, s := range steps {
		if got := h.do(s.args...); got != s.want {
			t.Errorf("%q: got %q, want %q", s.args, got, s.want)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	h := newHarness(t)
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'x'
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"foo", "a", "b"}, "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"},
		{[]string{"foo"}, "-ERR unknown command 'foo', with args beginning with: \r\n"},
		{[]string{"foo", string(long), "b"}, "-ERR unknown command 'foo', with args beginning with: '" + string(long[:128]) + "' \r\n"},
	}
	for _, c := range cases {
		if got := h.do(c.args...); got != c.want {
			t.Errorf("%q: got %q, want %q", c.args, got, c.want)
		}
	}
}
