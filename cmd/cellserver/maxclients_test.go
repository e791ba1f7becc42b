package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
)

func TestFitMaxClients(t *testing.T) {
	tests := []struct {
		want  int
		limit uint64
		fit   int
	}{
		{10000, 1 << 20, 10000},
		{10000, 10032, 10000},
		{10000, 10031, 9999},
		{10000, 1024, 992},
		{20, 64, 20},
		{100, 64, 32},
		{1, 33, 1},
		{1, 32, 0},
		{10, 0, 0},
		{10000, ^uint64(0), 10000}, // RLIM_INFINITY
	}
	for _, tt := range tests {
		if got := fitMaxClients(tt.want, tt.limit); got != tt.fit {
			t.Errorf("fitMaxClients(%d, %d) = %d, want %d", tt.want, tt.limit, got, tt.fit)
		}
	}
}

// pingConn sends PING on a new connection and returns the connection and
// the first line of the reply.
func pingConn(t *testing.T, addr string) (net.Conn, string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(nc, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return nc, err.Error()
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		return nc, err.Error()
	}
	return nc, strings.TrimRight(line, "\r\n")
}

// TestRunMaxClients: with --maxclients 20, 20 of 25 clients are served;
// the other 5 get Redis's error and are closed at once; once a client
// leaves, a new one is served.
func TestRunMaxClients(t *testing.T) {
	r := startRun(t, []string{"--addr", "127.0.0.1:0", "--maxclients", "20"}, nil)
	var served []net.Conn
	for i := range 25 {
		nc, reply := pingConn(t, r.addr)
		if i < 20 {
			if reply != "+PONG" {
				t.Fatalf("client %d: %q, want +PONG", i+1, reply)
			}
			served = append(served, nc)
			continue
		}
		if reply != "-ERR max number of clients reached" {
			t.Errorf("client %d: %q, want Redis's error", i+1, reply)
		}
		// Closed, not left hanging: the next read ends at once, with EOF
		// or, since the PING went unread, a reset.
		nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := nc.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("client %d after the error: read %d bytes, %v; want the connection closed", i+1, n, err)
		}
	}
	extra, reply := pingConn(t, r.addr)
	extra.Close()
	if reply != "-ERR max number of clients reached" {
		t.Errorf("a 26th client: %q", reply)
	}

	served[0].Close()
	// The server learns of the close when it reads it: retry until then.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		nc, reply := pingConn(t, r.addr)
		if reply == "+PONG" {
			fmt.Fprintf(nc, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$10\r\nmaxclients\r\n")
			rd := bufio.NewReader(nc)
			var got []string
			for range 5 { // *2, $10, maxclients, $2, 20
				line, _ := rd.ReadString('\n')
				got = append(got, strings.TrimRight(line, "\r\n"))
			}
			if got[4] != "20" {
				t.Errorf("CONFIG GET maxclients = %q", got)
			}
			break
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no client served 5s after one left: %q", reply)
		}
	}
}

// TestMaxClientsOpenFileLimit runs the real process under `ulimit -n`:
// maxclients is lowered to the limit less Redis's 32 reserved descriptors,
// logged and reported; a limit with no room for a client stops the start.
func TestMaxClientsOpenFileLimit(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("cannot find the test binary: %v", err))
	}
	sh := testenv.NeedTool(t, "sh", "a POSIX shell")
	// underLimit runs the test binary's main with args under ulimit -n
	// (which sets the hard limit too, so that it cannot be raised).
	underLimit := func(limit int, args ...string) *exec.Cmd {
		script := fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, limit)
		cmd := exec.Command(sh, append([]string{"-c", script, exe, "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		return cmd
	}

	cmd := underLimit(64, "--maxclients", "100")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	logs := bufio.NewReader(stderr)
	var lowered bool
	var line struct{ Msg, Addr string }
	for line.Msg != "cellserver started" {
		b, err := logs.ReadBytes('\n')
		if err != nil {
			t.Fatalf("no start line before %v", err)
		}
		line.Msg = ""
		json.Unmarshal(b, &line)
		if strings.HasPrefix(line.Msg, "maxclients lowered") {
			lowered = true
			if !strings.Contains(string(b), `"maxclients":32,"asked":100,"open_file_limit":64,"reserved":32`) {
				t.Errorf("log line: %s", b)
			}
		}
	}
	if !lowered {
		t.Error("no log line says maxclients was lowered")
	}
	rdb := newClient(t, line.Addr)
	got, err := rdb.ConfigGet(context.Background(), "maxclients").Result()
	if err != nil || got["maxclients"] != "32" {
		t.Errorf("CONFIG GET maxclients = %v, %v; want 32 (64 - 32 reserved)", got, err)
	}

	out, err := underLimit(32).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitError {
		t.Fatalf("under ulimit -n 32: %v, want exit status 1\n%s", err, out)
	}
	if !strings.Contains(string(out), `"msg":"cannot serve any client","err":"the open-file limit (ulimit -n) of 32 leaves no room for a client; raise it to at least 10032"`) {
		t.Errorf("log:\n%s", out)
	}
}
