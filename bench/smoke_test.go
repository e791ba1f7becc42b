package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestQuickRun runs the whole of bench, -quick: it builds cellserver,
// starts both servers, runs every test and memory measurement once with a
// few requests and keys, prints the report and leaves no process behind.
func TestQuickRun(t *testing.T) {
	needTool(t, "redis-server")
	needTool(t, "redis-benchmark")
	var stdout, stderr bytes.Buffer
	started := time.Now()
	code := run(context.Background(), []string{"-quick"}, os.Getenv, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	t.Logf("-quick took %v", time.Since(started))
	out := stdout.String()
	matchAll(t, out,
		`(?m)^-P  test +server +requests/s +p50 ms +p99 ms +CPU µs/req +store µs/req +decisions/trip +ratios +CPU ratios$`,
		`(?m)^ 1  CL\.THROTTLE +cellserver +[0-9,]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+× SET, [0-9.]+× GCRA\.lua( |$)`,
		`(?m)^16  CL\.THROTTLE +cellserver .*× SET, `,
		`(?m)^ 1  SET +redis `, `(?m)^16  GCRA\.lua +redis `,
		`(?m)^16  SW\.THROTTLE +cellserver .*× ZSET\.lua( |$)`, `(?m)^16  ZSET\.lua +redis `,
		`(?m)^ 1  shared CL\.THROTTLE +cellserver shared +[0-9,]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+ +)?[0-9.]+ +[0-9.]+× GCRA\.lua( |$)`,
		`(?m)^16  shared SW\.THROTTLE +cellserver shared +[0-9,]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+ +)?[0-9.]+ +[0-9.]+× ZSET\.lua( |$)`,
		`(?m)^16  SWC\.THROTTLE +cellserver .*× ZSET\.lua, `, `(?m)^16  FW\.THROTTLE +cellserver .*× ZSET\.lua, [0-9.]+× GCRA\.lua( |$)`,
		`(?m)^ 1  RLS +cellserver +[0-9,]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+ +)?[0-9.]+× RLS FW\.THROTTLE(,| |$)`,
		`(?m)^ 1  RLS FW\.THROTTLE +cellserver +[0-9,]+ `,
		`(?m)^\(-n\), each with one descriptor, waiting for its answer \(gRPC has no pipelining, so RLS runs at -P 1 only\)`,
		`(?m)^CL\.THROTTLE +cellserver +2,000 +1 `,
		// With -quick's 100 keys the memory figures are noise (a collection
		// between two readings can make them negative); the smoke run checks
		// the report's shape, not its figures.
		`(?m)^SW\.THROTTLE +cellserver +100 +100 +-?[0-9,]+ +-?[0-9,]+ +-?[0-9.]+ +[0-9,]+$`,
		`(?m)^ZSET\.lua +redis +100 +100 `,
		`(?m)^machine: [0-9]+ CPUs .*redis-server [0-9.]+;`,
	)
	if strings.Contains(out, "not run:") {
		t.Errorf("some tests did not run:\n%s", out)
	}
	checkNoChildren(t)
}

// TestQuickRunWithBaseline runs CL.THROTTLE on a second cellserver binary
// (-baseline-bin) beside the current one, in memory and in shared mode.
func TestQuickRunWithBaseline(t *testing.T) {
	needTool(t, "redis-server")
	needTool(t, "redis-benchmark")
	base, err := buildCellserver(context.Background(), needTool(t, "go"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := runQuickBaseline(t, base)
	matchAll(t, out,
		`(?m)^ 1  CL\.THROTTLE +cellserver +[0-9,]+ .* [0-9.]+× CL\.THROTTLE@base( |$)`,
		`(?m)^ 1  CL\.THROTTLE@base +cellserver-base +[0-9,]+ `,
		`(?m)^ 1  shared CL\.THROTTLE +cellserver shared +[0-9,]+ .* [0-9.]+× shared CL\.THROTTLE@base( |$)`,
		`(?m)^ 1  shared CL\.THROTTLE@base +cellserver shared-base +[0-9,]+ `,
		`(?m)^cellserver-base: the cellserver built as .*, go[0-9.]+\), tests named <test>@base.*; cellserver shared-base: it in shared mode`)
	if regexp.MustCompile(`(?m)^ 1  (SET|GCRA|shared SW)`).MatchString(out) {
		t.Errorf("-only ^(shared )?CL\\.THROTTLE ran other tests:\n%s", out)
	}
	checkNoChildren(t)
}

// TestQuickRunWithBaselineWithoutSharedMode: a -baseline-bin from before
// shared mode (it rejects --backing-mode, as any binary whose flags lack it
// does) still gets its in-memory rows; only its shared rows are left out,
// as a baseline that lacks a command has that test left out (tryOnce).
func TestQuickRunWithBaselineWithoutSharedMode(t *testing.T) {
	needTool(t, "redis-server")
	needTool(t, "redis-benchmark")
	dir := t.TempDir()
	real, err := buildCellserver(context.Background(), needTool(t, "go"), dir)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "old-cellserver")
	script := "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = --backing-mode ]; then\n" +
		"    echo 'flag provided but not defined: -backing-mode' >&2\n    exit 2\n  fi\ndone\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(base, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	matchAll(t, runQuickBaseline(t, base),
		`(?m)^ 1  CL\.THROTTLE@base +cellserver-base +[0-9,]+ `,
		`(?m)^ 1  shared CL\.THROTTLE +cellserver shared +[0-9,]+ `,
		`(?m)^not run: shared CL\.THROTTLE@base: cellserver shared-base did not start: `)
	checkNoChildren(t)
}

// runQuickBaseline runs a quick bench of CL.THROTTLE, in memory and in
// shared mode, beside the baseline binary base, and returns its report.
func runQuickBaseline(t *testing.T, base string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-skip-memory", "-pipelines", "1", "-only", `^(shared )?CL\.THROTTLE`, "-baseline-bin", base}
	if code := run(context.Background(), args, os.Getenv, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	return stdout.String()
}

// matchAll reports each pattern that no line of the report out matches.
func matchAll(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, want := range patterns {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the report has no line matching %s:\n%s", want, out)
		}
	}
}

// TestInterruptStopsEverything cancels a run, as SIGINT does, once its
// first benchmark has finished: bench must exit 1 and leave no process.
func TestInterruptStopsEverything(t *testing.T) {
	needTool(t, "redis-server")
	needTool(t, "redis-benchmark")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &watchWriter{on: "[1/", then: cancel}
	code := run(ctx, []string{"-quick", "-n", "20000"}, os.Getenv, &bytes.Buffer{}, progress)
	if code != exitFailed {
		t.Errorf("exit %d after an interrupt, want %d", code, exitFailed)
	}
	if !strings.Contains(progress.String(), "bench: interrupted") {
		t.Errorf("stderr says:\n%s\nwant it to say it was interrupted", progress.String())
	}
	checkNoChildren(t)
}

// watchWriter is a progress writer that calls then once on a line
// containing on.
type watchWriter struct {
	on   string
	then func()

	mu   sync.Mutex // guards b, once
	b    bytes.Buffer
	once bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if !w.once && strings.Contains(string(p), w.on) {
		w.once = true
		w.then()
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// checkNoChildren fails if a child of this process is still running (or a
// zombie): bench must stop and wait for everything it starts.
func checkNoChildren(t *testing.T) {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	if len(stats) == 0 {
		return // no /proc to look in
	}
	me := strconv.Itoa(os.Getpid())
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // it has just exited
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) >= 2 && f[1] == me {
			t.Errorf("a child is left behind: %s", strings.TrimSpace(s[:end+1]))
		}
	}
}

// TestStartRedisRefusesAnotherServersPort: the port startRedis picks was
// free a moment before; a server that takes it in between answers PING as
// well, while the redis-server bench started fails to bind it and exits.
// startRedis must not take that server for its own: every Redis row would
// measure it, and read the CPU time of a process that has exited.
func TestStartRedisRefusesAnotherServersPort(t *testing.T) {
	real := needTool(t, "redis-server")
	needTool(t, "redis-cli")
	dir := t.TempDir()
	// The fake redis-server lets another redis-server take its port ($2,
	// --port's value), waits until that one answers, and fails to bind.
	fake := filepath.Join(dir, "redis-server")
	script := "#!/bin/sh\nport=$2\n" +
		real + " --port $port --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --logfile '' --dir " + dir +
		" --pidfile " + dir + "/other-$port.pid\n" +
		"until [ \"$(redis-cli -p $port ping 2>/dev/null)\" = PONG ]; do sleep 0.01; done\n" +
		"echo \"Could not create server TCP listening socket 127.0.0.1:$port: bind: Address already in use\"\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the other servers are not bench's children
		pidFiles, _ := filepath.Glob(filepath.Join(dir, "other-*.pid"))
		for _, f := range pidFiles {
			b, _ := os.ReadFile(f)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				if proc, err := os.FindProcess(pid); err == nil {
					proc.Kill()
				}
			}
		}
	})
	sup := newSupervisor(io.Discard)
	t.Cleanup(sup.stopAll)
	p, err := sup.startRedis(context.Background(), fake, "", dir)
	if err == nil {
		t.Errorf("startRedis took the server at %s for the one it started (exited: %v)", p.addr, p.exited())
	}
}
