package compat_test

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
)

// TestRedisCLI drives the server with redis-cli, the client people type
// commands into.
func TestRedisCLI(t *testing.T) {
	t.Parallel()
	cli := needTool(t, "redis-cli")
	s := startServer(t)
	port := strconv.Itoa(s.port)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"PING", []string{"-p", port, "PING"}, "PONG\n"},
		{"CL.THROTTLE", []string{"--no-raw", "-p", port, "CL.THROTTLE", "user123", "15", "30", "60"},
			"1) (integer) 0\n2) (integer) 16\n3) (integer) 15\n4) (integer) -1\n5) (integer) 2\n"},
		{"CL.THROTTLE raw", []string{"-h", "127.0.0.1", "-p", port, "CL.THROTTLE", "hourly", "15", "30", "3600"},
			"0\n16\n15\n-1\n120\n"},
		{"CL.THROTTLE error", []string{"--no-raw", "-p", port, "CL.THROTTLE", "user123"},
			"(error) Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]\n"},
		{"COMMAND DOCS", []string{"--no-raw", "-p", port, "COMMAND", "DOCS", "cl.throttle"},
			"1) \"cl.throttle\"\n2) 1) \"group\"\n   2) \"module\"\n   3) \"module\"\n   4) \"redis-cell\"\n"},
		{"GETKEYS", []string{"--no-raw", "-p", port, "COMMAND", "GETKEYS", "CL.THROTTLE", "user123", "15", "30", "60"},
			"1) \"user123\"\n"},
		{"TYPE", []string{"-p", port, "TYPE", "hourly"}, "string\n"}, // 120s to live: no race with the clock
		{"RESP3", []string{"-3", "--no-raw", "-p", port, "CL.THROTTLE", "other", "15", "30", "60"},
			"1) (integer) 0\n2) (integer) 16\n3) (integer) 15\n4) (integer) -1\n5) (integer) 2\n"},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		out, err := exec.CommandContext(ctx, cli, tt.args...).CombinedOutput()
		cancel()
		if err != nil || string(out) != tt.want {
			t.Errorf("%s: redis-cli %q: %v\n got  %q\n want %q", tt.name, tt.args, err, out, tt.want)
		}
	}
}
