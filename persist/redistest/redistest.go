// Package redistest starts a real redis-server (or valkey-server, with
// StartValkey) for a test: from PATH, on a free loopback port, without
// persistence, stopped by the test's cleanup. Where the server is missing
// the test is skipped, except under CI=true, where that fails it.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// readyTimeout bounds the wait for redis-server to accept connections.
const readyTimeout = 10 * time.Second

// Server is one redis-server, which the test may kill and start again on
// the same port.
type Server struct {
	// Addr is where it listens, 127.0.0.1:port.
	Addr string

	t    testing.TB
	path string
	dir  string
	args []string // more arguments for redis-server

	mu   sync.Mutex // guards proc
	proc *process   // nil while killed
}

// process is a running redis-server and the goroutine draining its log.
type process struct {
	cmd     *exec.Cmd
	drained chan struct{}
}

// Path returns the path of redis-server, skipping the test (failing it
// under CI=true) when there is none.
func Path(t testing.TB) string {
	t.Helper()
	return testenv.NeedTool(t, "redis-server", "apt-get install redis-server")
}

// Start starts redis-server on a free port and waits until it accepts
// connections. The test's cleanup stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, Path(t), nil)
}

// ValkeyPath returns the path of valkey-server (8.1 or later: SET IFEQ),
// skipping the test (failing it under CI=true) when there is none.
func ValkeyPath(t testing.TB) string {
	t.Helper()
	return testenv.NeedTool(t, "valkey-server", ".ci/valkey builds it from Debian's source")
}

// StartValkey is Start with valkey-server, a store with a compare-and-set
// of its own.
func StartValkey(t testing.TB) *Server {
	t.Helper()
	return start(t, ValkeyPath(t), nil)
}

// StartWith is Start with more redis-server arguments (such as
// "--databases", "1").
func StartWith(t testing.TB, args ...string) *Server {
	t.Helper()
	return start(t, Path(t), func() []string { return args })
}

// start starts the server at path with more arguments; args may add
// ports, which it calls for each attempt.
func start(t testing.TB, path string, args func() []string) *Server {
	t.Helper()
	s := &Server{t: t, path: path, dir: t.TempDir()}
	// The free port is found by listening and closing; another process may
	// take it in between, so try a few.
	var lastErr error
	for range 3 {
		s.Addr = freeAddr(t)
		if args != nil {
			s.args = args()
		}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.stop)
			return s
		}
	}
	t.Fatalf("%s did not start: %v", filepath.Base(path), lastErr)
	return nil
}

// Kill kills redis-server at once (SIGKILL), as a crash would, and waits
// until it has exited. Its data is gone.
func (s *Server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	s.proc.cmd.Process.Kill()
	s.proc.wait()
	s.proc = nil
}

// Pause stops redis-server with SIGSTOP, as a hung or partitioned store
// would be: connections stay open and nothing answers. Resume continues it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues redis-server after Pause (SIGCONT); it then runs what
// arrived meanwhile.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		s.t.Fatal("redistest: signal while killed")
	}
	if err := s.proc.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: %v: %v", sig, err)
	}
}

// PID is the running redis-server's process id, 0 while killed.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Restart starts a new, empty redis-server on the same port after Kill.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	running := s.proc != nil
	s.mu.Unlock()
	if running {
		s.t.Fatal("redistest: Restart while running")
	}
	// A client dialing the stopped server may meanwhile hold its port: a
	// dial from an ephemeral port equal to it connects to itself (TCP's
	// simultaneous open), until the client gives the odd connection up.
	// The port is tried again for a while.
	deadline := time.Now().Add(readyTimeout)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Address already in use") || time.Now().After(deadline) {
			s.t.Fatalf("%s did not start again on %s: %v", filepath.Base(s.path), s.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Client returns a go-redis client of the server, closed by the test's
// cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: readyTimeout, ReadTimeout: readyTimeout})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// URL is the server's address as a redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr }

// start runs redis-server on s.Addr and waits until it says it is ready.
func (s *Server) start() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(s.path,
		"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--logfile", "",
	)
	cmd.Args = append(cmd.Args, s.args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{cmd: cmd, drained: make(chan struct{})}
	// Read the log until Redis is ready, then drain it until Redis exits.
	ready := make(chan bool, 1)
	var log strings.Builder
	go func() {
		defer close(p.drained)
		sc := bufio.NewScanner(out)
		announced := false
		for sc.Scan() {
			if !announced {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "Ready to accept connections") {
					announced = true
					ready <- true
				}
			}
		}
		if !announced {
			ready <- false
		}
	}()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case ok := <-ready:
		if !ok {
			p.wait()
			return errors.New(filepath.Base(s.path) + " exited before it was ready:\n" + log.String())
		}
	case <-timer.C:
		cmd.Process.Kill()
		p.wait()
		return errors.New(filepath.Base(s.path) + " not ready within " + readyTimeout.String())
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// stop ends redis-server, if running, with SIGTERM.
func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	s.proc.cmd.Process.Signal(syscall.SIGCONT) // after a Pause
	s.proc.cmd.Process.Signal(syscall.SIGTERM)
	s.proc.wait()
	s.proc = nil
}

func (p *process) wait() {
	<-p.drained
	p.cmd.Wait()
}

// CommandCalls returns how many times the server has run cmd (a lower-case
// name such as "set") without an error reply, from INFO commandstats
// (calls less failed_calls); 0 if never.
func CommandCalls(ctx context.Context, rdb *redis.Client, cmd string) (int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	prefix := "cmdstat_" + cmd + ":"
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok {
			continue
		}
		var calls, failed int64
		for _, field := range strings.Split(rest, ",") {
			name, v, _ := strings.Cut(field, "=")
			switch name {
			case "calls":
				calls, err = strconv.ParseInt(v, 10, 64)
			case "failed_calls":
				failed, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil {
				return 0, err
			}
		}
		return calls - failed, nil
	}
	return 0, nil
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// StartCluster starts a Redis Cluster of n masters (no replicas), the hash
// slots split evenly between them, and waits until every node says the
// cluster is ok. The test's cleanup stops it.
func StartCluster(t testing.TB, n int) []*Server {
	t.Helper()
	nodes := make([]*Server, n)
	buses := make([]string, n) // the cluster bus ports, which CLUSTER MEET needs
	for i := range nodes {
		nodes[i] = start(t, Path(t), func() []string {
			_, buses[i], _ = net.SplitHostPort(freeAddr(t))
			return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-port", buses[i], "--cluster-node-timeout", "5000"}
		})
	}
	ctx := context.Background()
	clients := make([]*redis.Client, n)
	for i, s := range nodes {
		clients[i] = s.Client(t)
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTSRANGE on %s: %v", s.Addr, err)
		}
	}
	// A MEET's handshake that does not finish within the node timeout (a
	// loaded machine) is dropped, never retried: the nodes are introduced
	// again until every one knows them all.
	meet := func() {
		for i, s := range nodes[1:] {
			host, port, _ := net.SplitHostPort(s.Addr)
			if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port, buses[i+1]).Err(); err != nil {
				t.Fatalf("CLUSTER MEET %s: %v", s.Addr, err)
			}
		}
	}
	meet()
	const clusterReady = 3 * readyTimeout
	start := time.Now()
	deadline, again := start.Add(clusterReady), start.Add(2*time.Second)
	for i := 0; i < n; {
		info, err := clients[i].ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") &&
			strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r") {
			i++
			continue
		}
		if now := time.Now(); now.After(deadline) {
			t.Fatalf("the cluster is not ok within %v: %v\n%s", clusterReady, err, info)
		} else if now.After(again) {
			meet()
			again = now.Add(2 * time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nodes
}
