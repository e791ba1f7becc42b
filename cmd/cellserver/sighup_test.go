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

// mainProcess is cellserver's real process, run by the test binary
// (runMainEnv), with its JSON log read line by line.
type mainProcess struct {
	t    *testing.T
	cmd  *exec.Cmd
	logs *bufio.Reader
}

// startMain starts the process with args; the test's end kills it.
func startMain(t *testing.T, args ...string) *mainProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("cannot find the test binary: %v", err))
	}
	cmd := exec.Command(exe, append([]string{"--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return &mainProcess{t: t, cmd: cmd, logs: bufio.NewReader(stderr)}
}

// next reads the log until msg, and fails the test if it ends first.
func (p *mainProcess) next(msg string) {
	p.t.Helper()
	for {
		b, err := p.logs.ReadBytes('\n')
		if err != nil {
			p.t.Fatalf("log ended before %q: %v; exit: %v", msg, err, p.cmd.Wait())
		}
		var line struct{ Msg string }
		json.Unmarshal(b, &line)
		if line.Msg == msg {
			return
		}
	}
}

// signal sends sig and gives its default action, which nothing waits for,
// time to act.
func (p *mainProcess) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
}

// stop sends SIGTERM and fails the test unless the process exits 0.
func (p *mainProcess) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	rest, _ := io.ReadAll(p.logs)
	if err := p.cmd.Wait(); err != nil {
		p.t.Errorf("exit: %v, want status 0; log:\n%s", err, rest)
	}
}

// TestSignalsSIGHUPWhileLoading runs the real process with --rls-config,
// whose reload signal is SIGHUP, and sends it one while the backing store
// loads, before the rate limit service relays it: the process goes on and
// starts once the store answers. SIGHUP's default action killed it
// (status 129).
func TestSignalsSIGHUPWhileLoading(t *testing.T) {
	store := redistest.Start(t)
	path := hourlyLimitFile(t, 1)
	store.Pause()
	defer store.Resume()
	p := startMain(t, "--addr", "127.0.0.1:0", "--backing-redis", store.URL(), "--rls-addr", "127.0.0.1:0", "--rls-config", path)
	p.next("loading the backing store")
	p.signal(syscall.SIGHUP)
	store.Resume()
	p.next("cellserver started")
	p.stop()
}

// TestSignalsSIGHUPIgnored runs the real process without --rls-config and
// sends it SIGHUP: it goes on serving, as Redis does, and a SIGTERM then
// ends it with status 0. SIGHUP's default action ended it (status 129).
func TestSignalsSIGHUPIgnored(t *testing.T) {
	p := startMain(t, "--addr", "127.0.0.1:0")
	p.next("cellserver started")
	p.signal(syscall.SIGHUP)
	p.stop()
}
