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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Deadlines for the servers' start and stop.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
)

// supervisor owns every server bench starts and stops them all, in the
// reverse order of their start, when bench ends.
type supervisor struct {
	log io.Writer // where a server's last output goes when it fails

	mu    sync.Mutex // guards procs
	procs []*process
}

func newSupervisor(log io.Writer) *supervisor { return &supervisor{log: log} }

// process is one server bench started.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *tail         // the last of its stdout and stderr
	done chan struct{} // closed once it has exited and its output is read
	addr string        // host:port it answers on, once ready
}

// start runs path with args as a server called name, owned by the
// supervisor. lines, if not nil, gets each line the process writes until it
// returns false.
func (s *supervisor) start(name, path string, args, env []string, lines func(string) bool) (*process, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.SysProcAttr = childAttr()
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	p := &process{name: name, cmd: cmd, out: newTail(4096), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.out.add(sc.Text())
			if lines != nil && !lines(sc.Text()) {
				lines = nil
			}
		}
		io.Copy(io.Discard, r) // a line too long for the scanner
	}()
	go func() {
		cmd.Wait()
		w.Close()
		<-read
		close(p.done)
	}()
	return p, nil
}

// pid is p's process id, whose /proc/PID/stat has its CPU time.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether p has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// failure is err with the last lines p wrote.
func (p *process) failure(err error) error {
	return fmt.Errorf("%s: %w; its last output:\n%s", p.name, err, p.out.String())
}

// stop ends p: SIGTERM, then SIGKILL if it has not exited within
// stopTimeout. It waits for the exit.
func (p *process) stop() {
	if p.exited() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// stopOne stops p and forgets it.
func (s *supervisor) stopOne(p *process) {
	p.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.procs {
		if q == p {
			s.procs = append(s.procs[:i], s.procs[i+1:]...)
			break
		}
	}
}

// stopAll stops every process still running, the last started first.
func (s *supervisor) stopAll() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop()
	}
}

// buildCellserver builds ./cmd/cellserver of the module bench is run in
// into dir and returns the binary's path.
func buildCellserver(ctx context.Context, goCmd, dir string) (string, error) {
	bin := filepath.Join(dir, "cellserver")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", bin, "github.com/cellserver/cellserver/cmd/cellserver")
	cmd.SysProcAttr = childAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/cellserver (run bench from the cellserver repository): %v\n%s", err, out)
	}
	return bin, nil
}

// serverEnv is bench's environment without cellserver's variables, so that
// a CELLSERVER_BACKING_REDIS or the like in the user's shell does not change
// what is measured, plus extra.
func serverEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CELLSERVER_") && !strings.HasPrefix(kv, "GOGC=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// startCellserver starts the cellserver binary bin, called name, on a free
// loopback port with extra args, and waits until it answers PING. extraEnv
// is added to its environment.
func (s *supervisor) startCellserver(ctx context.Context, name, bin string, args []string, extraEnv ...string) (*process, error) {
	addrc := make(chan string, 1)
	args = append([]string{"--addr", "127.0.0.1:0", "--log-format", "json"}, args...)
	p, err := s.start(name, bin, args, serverEnv(extraEnv...), func(line string) bool {
		var l struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "cellserver started" && l.Addr != "" {
			addrc <- l.Addr
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	select {
	case p.addr = <-addrc:
	case <-p.done:
		return nil, p.failure(errors.New("exited before it listened"))
	case <-time.After(startTimeout):
		s.stopOne(p)
		return nil, p.failure(fmt.Errorf("did not listen within %v", startTimeout))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := waitPing(ctx, p); err != nil {
		s.stopOne(p)
		return nil, err
	}
	return p, nil
}

// startRedis starts redis-server without persistence on a free loopback
// port, loading module if it is not "", and waits until it answers PING.
// The port is found by listening and closing, so another process may take it
// in between: a start that fails is tried again on another port.
func (s *supervisor) startRedis(ctx context.Context, path, module, dir string) (*process, error) {
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		args := []string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--logfile", "",
		}
		if module != "" {
			args = append(args, "--loadmodule", module)
		}
		p, err := s.start("redis-server", path, args, os.Environ(), nil)
		if err != nil {
			return nil, err
		}
		p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = waitPing(ctx, p); lastErr == nil {
			if lastErr = checkAnswers(ctx, p); lastErr == nil {
				return p, nil
			}
		}
		s.stopOne(p)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, lastErr
}

// checkAnswers checks that the Redis answering at p.addr is p, by the
// process_id of its INFO: a server that took the port between freePort and
// p's start answers PING too, while p fails to bind it and exits, and its
// figures would be taken for p's, its CPU time read from p's exited PID.
func checkAnswers(ctx context.Context, p *process) error {
	rdb := newClient(p.addr, 1)
	defer rdb.Close()
	info, err := readInfo(ctx, rdb, "server")
	if err != nil {
		return p.failure(err)
	}
	if id := info["process_id"]; id != strconv.Itoa(p.pid()) {
		return p.failure(fmt.Errorf("%s is answered by process %s, not by process %d: another server took the port", p.addr, id, p.pid()))
	}
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitPing polls p.addr with PING until it answers +PONG, p exits, ctx ends
// or startTimeout passes.
func waitPing(ctx context.Context, p *process) error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		if lastErr = ping(p.addr); lastErr == nil {
			return nil
		}
		if p.exited() {
			return p.failure(errors.New("exited before it answered PING"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p.failure(fmt.Errorf("no answer to PING at %s within %v: %v", p.addr, startTimeout, lastErr))
}

// ping sends one PING on a new connection and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// tail keeps the last bytes of a process's output, whole lines.
type tail struct {
	limit int // bytes kept

	mu    sync.Mutex // guards lines, size
	lines []string
	size  int
}

func newTail(limit int) *tail { return &tail{limit: limit} }

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for t.size > t.limit && len(t.lines) > 1 {
		t.size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
