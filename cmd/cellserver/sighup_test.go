package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
	"github.com/cellserver/cellserver/persist/redistest"
)

// TestSignalsSIGHUPWhileLoading runs the real process with --rls-config,
// whose reload signal is SIGHUP, and sends it one while the backing store
// loads: the process goes on and starts once the store answers. SIGHUP's
// default action, which killed it (status 129), held until the rate limit
// service started serving after the load.
func TestSignalsSIGHUPWhileLoading(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("cannot find the test binary: %v", err))
	}
	store := redistest.Start(t)
	path := t.TempDir() + "/d.yaml"
	if err := os.WriteFile(path, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store.Pause()
	cmd := exec.Command(exe, "--addr", "127.0.0.1:0", "--log-format", "json", "--backing-redis", store.URL(),
		"--rls-addr", "127.0.0.1:0", "--rls-config", path)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		store.Resume()
	}()
	logs := bufio.NewReader(stderr)
	// next reads the log until msg, and fails the test if it ends first.
	next := func(msg string) {
		t.Helper()
		for {
			b, err := logs.ReadBytes('\n')
			if err != nil {
				t.Fatalf("log ended before %q: %v; exit: %v", msg, err, cmd.Wait())
			}
			var line struct{ Msg string }
			json.Unmarshal(b, &line)
			if line.Msg == msg {
				return
			}
		}
	}
	next("loading the backing store")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a signal's default action is not waited for
	store.Resume()
	next("cellserver started")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(logs)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v, want status 0; log:\n%s", err, rest)
	}
}

// TestSignalsSIGHUPIgnored runs the real process without --rls-config and
// sends it SIGHUP: it goes on serving, as Redis does, and a SIGTERM then
// ends it with status 0. SIGHUP's default action ended it (status 129).
func TestSignalsSIGHUPIgnored(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("cannot find the test binary: %v", err))
	}
	cmd := exec.Command(exe, "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	logs := bufio.NewReader(stderr)
	for {
		b, err := logs.ReadBytes('\n')
		if err != nil {
			t.Fatalf("log ended before the start: %v; exit: %v", err, cmd.Wait())
		}
		var line struct{ Msg string }
		json.Unmarshal(b, &line)
		if line.Msg == "cellserver started" {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a signal's default action is not waited for
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(logs)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v, want status 0; log:\n%s", err, rest)
	}
}
