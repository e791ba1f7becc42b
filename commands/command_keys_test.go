package commands

import "testing"

func TestCommandGetKeys(t *testing.T) {
	newHarness(t).runSteps([]replyStep{
		{[]string{"COMMAND", "GETKEYS", "cl.throttle", "user:1", "15", "30", "60"}, wantArray(1) + wantBulk("user:1")},
		{[]string{"COMMAND", "GETKEYS", "DEL", "a", "b", "c"}, wantArray(3) + wantBulks("a", "b", "c")},
		{[]string{"COMMAND", "GETKEYSANDFLAGS", "cl.throttle", "k", "1", "2", "3"},
			wantArray(1) + wantArray(2) + wantBulk("k") + "*3\r\n+RW\r\n+access\r\n+update\r\n"},
		{[]string{"COMMAND", "GETKEYS", "nosuch", "a"}, wantErr("ERR Invalid command specified")},
		{[]string{"COMMAND", "GETKEYS", "client", "nosuch"}, wantErr("ERR Invalid command specified")},
		{[]string{"COMMAND", "GETKEYS", "ping"}, wantErr("ERR wrong number of arguments for 'command|getkeys' command")},
		{[]string{"COMMAND", "GETKEYS", "ping", "x"}, wantErr("ERR The command has no key arguments")},
		{[]string{"COMMAND", "GETKEYS", "client", "list"}, wantErr("ERR The command has no key arguments")},
		{[]string{"COMMAND", "GETKEYS", "get"}, wantErr("ERR wrong number of arguments for 'command|getkeys' command")},
		{[]string{"COMMAND", "GETKEYS", "get", "a", "b"}, wantErr("ERR Invalid number of arguments specified for command")},
		{[]string{"COMMAND", "GETKEYS", "cl.throttle"}, wantErr("ERR wrong number of arguments for 'command|getkeys' command")},
		{[]string{"COMMAND", "GETKEYS"}, wantErr("ERR wrong number of arguments for 'command|getkeys' command")},
	})
}
