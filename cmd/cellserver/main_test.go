package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// runMainEnv makes the test binary run main() instead of the tests, so that
// TestSignals can drive the real process.
const runMainEnv = "CELLSERVER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines to write
// while the test reads.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// running is one in-process run of cellserver.
type running struct {
	addr   string
	stdout syncBuffer
	stderr syncBuffer
	cancel context.CancelFunc
	done   chan int // receives run's exit status
}

// startRun runs cellserver in-process with args and env and waits until it
// listens. The test's cleanup stops it if the test did not.
func startRun(t *testing.T, args []string, env map[string]string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan int, 1)}
	ready := make(chan net.Addr, 1)
	go func() { r.done <- run(ctx, args, envMap(env), &r.stdout, &r.stderr, ready) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
			t.Error("cellserver did not stop within 15s")
		}
	})
	select {
	case a := <-ready:
		r.addr = a.String()
	case code := <-r.done:
		r.done <- code
		t.Fatalf("run returned %d before listening; stderr:\n%s", code, r.stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("cellserver not ready within 10s; stderr:\n%s", r.stderr.String())
	}
	return r
}

// stop asks run to shut down, as a signal would, and returns its exit status.
func (r *running) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup
		return code
	case <-time.After(15 * time.Second):
		t.Fatal("cellserver did not stop within 15s")
		return -1
	}
}

func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestRunServesAndShutsDown(t *testing.T) {
	r := startRun(t, []string{"--addr", "127.0.0.1:0", "--shards", "4"}, nil)
	ctx := context.Background()
	rdb := newClient(t, r.addr)

	got, err := rdb.Do(ctx, "CL.THROTTLE", "user123", "15", "30", "60").Int64Slice()
	if err != nil {
		t.Fatalf("CL.THROTTLE: %v", err)
	}
	if want := []int64{0, 16, 15, -1, 2}; !slices.Equal(got, want) {
		t.Errorf("CL.THROTTLE = %v, want %v", got, want)
	}
	_, port, _ := net.SplitHostPort(r.addr)
	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatalf("CONFIG GET *: %v", err)
	}
	for name, want := range map[string]string{
		"bind": "127.0.0.1", "port": port, "proto-max-bulk-len": "536870912", "timeout": "0", "maxclients": "10000",
	} {
		if cfg[name] != want {
			t.Errorf("CONFIG GET %s = %q, want %q", name, cfg[name], want)
		}
	}

	if code := r.stop(t); code != 0 {
		t.Errorf("exit status %d, want 0; stderr:\n%s", code, r.stderr.String())
	}
	logs := r.stderr.String()
	for _, want := range []string{
		"msg=\"cellserver started\" addr=" + r.addr + " shards=4 version=dev",
		"msg=\"shutting down\"",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if r.stdout.String() != "" {
		t.Errorf("stdout = %q, want nothing", r.stdout.String())
	}
	if _, err := net.DialTimeout("tcp", r.addr, time.Second); err == nil {
		t.Errorf("%s still accepts connections after shutdown", r.addr)
	}
}

func TestRunEnvironment(t *testing.T) {
	r := startRun(t, nil, map[string]string{
		"CELLSERVER_ADDR":       "127.0.0.1:0",
		"CELLSERVER_SHARDS":     "3",
		"CELLSERVER_LOG_FORMAT": "json",
		"CELLSERVER_LOG_LEVEL":  "debug",
	})
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, r.stderr.String())
	}
	first, _, _ := strings.Cut(r.stderr.String(), "\n")
	var line struct {
		Level, Msg, Addr, Version string
		Shards                    int
	}
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("first log line is not JSON: %v\n%s", err, first)
	}
	if line.Msg != "cellserver started" || line.Level != "INFO" || line.Addr != r.addr || line.Shards != 4 || line.Version != "dev" {
		t.Errorf("start line = %+v, want msg \"cellserver started\", addr %s, shards 4 (3 rounded up), version dev", line, r.addr)
	}
}

func TestRunLogLevel(t *testing.T) {
	r := startRun(t, []string{"--addr=127.0.0.1:0", "--log-level=warn"}, nil)
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, r.stderr.String())
	}
	if logs := r.stderr.String(); logs != "" {
		t.Errorf("at level warn a clean run logs nothing, got:\n%s", logs)
	}
}

func TestRunVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"--version", "--addr", ":1"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, envMap(map[string]string{"CELLSERVER_LOG_LEVEL": "bogus"}), &stdout, &stderr, nil)
		if code != 0 || stdout.String() != "cellserver dev\n" || stderr.Len() != 0 {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 0, \"cellserver dev\\n\", nothing", args, code, stdout.String(), stderr.String())
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		stderr string
	}{
		{"bad flag", []string{"--shards", "x"}, nil, `invalid value "x" for flag -shards`},
		{"unknown flag", []string{"--bogus"}, nil, "flag provided but not defined: -bogus"},
		{"bad env", nil, map[string]string{"CELLSERVER_LOG_FORMAT": "xml"}, `cellserver: invalid value "xml" for environment variable CELLSERVER_LOG_FORMAT: want text or json`},
		{"bad size env", nil, map[string]string{"CELLSERVER_PROTO_MAX_BULK_LEN": "512 mb"}, "CELLSERVER_PROTO_MAX_BULK_LEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, envMap(tt.env), &stdout, &stderr, nil)
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, envMap(nil), &stdout, &stderr, nil); code != 0 {
		t.Errorf("-h: exit status %d, want 0", code)
	}
	if !strings.Contains(stderr.String(), "Usage: cellserver") {
		t.Errorf("-h: stderr = %q, want the usage", stderr.String())
	}
}

func TestRunAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--addr", ln.Addr().String()}, envMap(nil), &stdout, &stderr, nil)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "cannot listen") {
		t.Errorf("stderr = %q, want \"cannot listen\"", stderr.String())
	}
}

// process is cellserver run as a real process: this test binary running
// main (see TestMain).
type process struct {
	cmd    *exec.Cmd
	logs   *bufio.Reader // its JSON log, after the start line
	addr   string        // where it listens
	exited bool
}

// startProcess runs cellserver with args and reads its log until the start
// line says where it listens. The test's cleanup kills it if the test did
// not wait for it.
func startProcess(t *testing.T, exe string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(exe, args...)}
	p.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.exited {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	p.logs = bufio.NewReader(stderr)
	var start struct{ Msg, Addr string }
	deadline := time.AfterFunc(10*time.Second, func() { p.cmd.Process.Kill() })
	defer deadline.Stop()
	for start.Msg != "cellserver started" {
		line, err := p.logs.ReadBytes('\n')
		if err != nil {
			t.Fatalf("no start line before %v", err)
		}
		start.Msg = ""
		json.Unmarshal(line, &start)
	}
	p.addr = start.Addr
	return p
}

// wait waits for the process to exit.
func (p *process) wait() error {
	err := p.cmd.Wait()
	p.exited = true
	return err
}

// TestSignals runs the real process (this test binary running main) and
// stops it with each signal cellserver handles.
func TestSignals(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("cannot find the test binary: %v", err))
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startProcess(t, exe, "--addr", "127.0.0.1:0", "--log-format", "json")
			cmd, logs := p.cmd, p.logs

			rdb := newClient(t, p.addr)
			if _, err := rdb.Do(context.Background(), "CL.THROTTLE", "k", "1", "1", "1").Result(); err != nil {
				t.Fatalf("CL.THROTTLE: %v", err)
			}

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(logs)
			err = p.wait()
			if err != nil {
				t.Errorf("exit: %v, want status 0; log:\n%s", err, rest)
			}
			if !bytes.Contains(rest, []byte(`"msg":"shutting down"`)) {
				t.Errorf("log lacks \"shutting down\":\n%s", rest)
			}
		})
	}
}

// TestRunProtoMaxBulkLen checks that --proto-max-bulk-len reaches the
// server: one byte more than the limit is Redis's protocol error.
func TestRunProtoMaxBulkLen(t *testing.T) {
	r := startRun(t, []string{"--addr=127.0.0.1:0", "--proto-max-bulk-len=1mb"}, nil)
	c, err := net.DialTimeout("tcp", r.addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "*2\r\n$4\r\nECHO\r\n$1048577\r\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c) // the server answers, then closes
	if want := "-ERR Protocol error: invalid bulk length\r\n"; string(got) != want {
		t.Errorf("a bulk of 1mb+1 bytes: got %q, want %q", got, want)
	}
	cfg, err := newClient(t, r.addr).ConfigGet(context.Background(), "proto-max-bulk-len").Result()
	if err != nil || cfg["proto-max-bulk-len"] != "1048576" {
		t.Errorf("CONFIG GET proto-max-bulk-len = %v, %v; want 1048576", cfg, err)
	}
}
