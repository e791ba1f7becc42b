package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
)

func TestPipelineRepliesInOrderInOneFlush(t *testing.T) {
	forEachPath(t, testPipelineRepliesInOrderInOneFlush)
}

func testPipelineRepliesInOrderInOneFlush(t *testing.T, cfg Config) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var loopWrites atomic.Int64 // the event loops' writes
	h := startOn(t, inner, cfg, func(s *Server) { countLoopWrites(s, &loopWrites) })
	writes := func() int64 { return h.ln.writes.Load() + loopWrites.Load() }
	c := h.dial()
	c.send("PING\r\n" + cmd("PING")) // the first batch: connection set up
	c.expect("+PONG\r\n+PONG\r\n")
	before := writes()

	var req, want strings.Builder
	for i := range 100 {
		v := fmt.Sprint(i)
		if i%2 == 0 {
			req.WriteString(cmd("ECHO", v))
		} else {
			req.WriteString("ECHO " + v + "\r\n") // inline, mixed in
		}
		fmt.Fprintf(&want, "$%d\r\n%s\r\n", len(v), v)
	}
	c.send(req.String())
	c.expect(want.String())
	if n := writes() - before; n != 1 {
		t.Errorf("%d writes for one pipelined batch, want 1", n)
	}
}

func TestQuitClosesAfterReply(t *testing.T) { forEachPath(t, testQuitClosesAfterReply) }

func testQuitClosesAfterReply(t *testing.T, cfg Config) {
	h := start(t, cfg)
	c := h.dial()
	c.send("PING\r\nQUIT\r\nPING\r\n")
	c.expect("+PONG\r\n+OK\r\n")
	c.expectClosed()
	h.logs.wait(t, "server: connection closed")
	if n := h.srv.Stats().ConnectedClients; n != 0 {
		t.Errorf("%d clients connected after QUIT", n)
	}
}

func TestPanicIsRecovered(t *testing.T) { forEachPath(t, testPanicIsRecovered) }

func testPanicIsRecovered(t *testing.T, cfg Config) {
	h := start(t, cfg)
	a, b := h.dial(), h.dial()
	internal := func(name string) string {
		return "-" + fmt.Sprintf(commands.MsgInternal, name) + "\r\n"
	}

	a.send("ECHO x\r\n" + cmd("PANIC") + "ECHO y\r\n")
	a.expect("$1\r\nx\r\n" + internal("panic") + "$1\r\ny\r\n")

	// A command name with CR LF in it never breaks the error line.
	a.send(cmd("PANIC\r\nME"))
	a.expect(internal("panic  me"))

	b.send("PING\r\n")
	b.expect("+PONG\r\n")
	a.send("PING\r\n")
	a.expect("+PONG\r\n")

	// Each error reply the server wrote is counted among the commands'.
	for _, name := range []string{"panic", "panic  me"} {
		select {
		case got := <-h.fake.errored:
			if want := fmt.Sprintf(commands.MsgInternal, name); got != want {
				t.Errorf("Errored(%q), want %q", got, want)
			}
		default:
			t.Errorf("the error for %q was not counted", name)
		}
	}

	logs := h.logs.String()
	for _, want := range []string{"ERROR server: command panicked", "panic=boom", "cmd=panic", "fakeSession).Dispatch"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

func TestRESP3AndRESP2Replies(t *testing.T) {
	tests := []struct {
		method     string
		resp2      string
		resp3      string
		resp3Equal bool
	}{
		{"error", "-ERR bad  thing\r\n", "", true},
		{"string", "+OK\r\n", "", true},
		{"bulk", "$4\r\na\r\nb\r\n", "", true},
		{"bulkstring", "$0\r\n\r\n", "", true},
		{"int", ":-42\r\n", "", true},
		{"array", "*2\r\n:1\r\n:2\r\n", "", true},
		{"map", "*2\r\n$1\r\nk\r\n:7\r\n", "%1\r\n$1\r\nk\r\n:7\r\n", false},
		{"set", "*1\r\n$1\r\nm\r\n", "~1\r\n$1\r\nm\r\n", false},
		{"null", "$-1\r\n", "_\r\n", false},
		{"nullarray", "*-1\r\n", "_\r\n", false},
		{"verbatim", "$3\r\nhi\n\r\n", "=7\r\ntxt:hi\n\r\n", false},
	}
	h := start(t, Config{})
	c2, c3 := h.dial(), h.dial()
	c3.send("HELLO 3\r\n")
	c3.expect("+OK\r\n")
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			c2.send(cmd("W", tt.method))
			c2.expect(tt.resp2)
			want3 := tt.resp3
			if tt.resp3Equal {
				want3 = tt.resp2
			}
			c3.send(cmd("W", tt.method))
			c3.expect(want3)
		})
	}
}

func TestClientsAndStats(t *testing.T) {
	h := start(t, Config{})
	a, b := h.dial(), h.dial()
	a.send("SETNAME alice\r\n")
	a.expect("+OK\r\n")
	b.send("PING\r\n")
	b.expect("+PONG\r\n")

	// Called from inside a command on the same connection: no deadlock.
	b.send("CLIENTS\r\n")
	b.expect("*2\r\n$15\r\nid=1 name=alice\r\n$10\r\nid=2 name=\r\n")

	infos := h.srv.Clients()
	if len(infos) != 2 || infos[0].ID != 1 || infos[1].ID != 2 || infos[0].Name != "alice" {
		t.Fatalf("Clients() = %+v", infos)
	}
	if infos[0].Addr != a.LocalAddr().String() || infos[0].LocalAddr != h.addr {
		t.Errorf("client 1 addresses %q %q, want %q %q", infos[0].Addr, infos[0].LocalAddr, a.LocalAddr(), h.addr)
	}
	port := h.ln.Addr().(*net.TCPAddr).Port
	want := commands.HostStats{ConnectedClients: 2, TotalConnections: 2, TCPPort: port}
	if got := h.srv.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}

	a.Close()
	h.logs.wait(t, "server: connection closed")
	want.ConnectedClients = 1
	if got := h.srv.Stats(); got != want {
		t.Errorf("after a close, Stats() = %+v, want %+v", got, want)
	}
	c := h.dial()
	c.send("CLIENTS\r\n")
	c.expect("*2\r\n$10\r\nid=2 name=\r\n$10\r\nid=3 name=\r\n")
}

func TestMaxClients(t *testing.T) {
	h := start(t, Config{MaxClients: 1})
	a := h.dial()
	a.send("PING\r\n")
	a.expect("+PONG\r\n")
	b := h.dial()
	b.expect("-ERR max number of clients reached\r\n")
	b.expectClosed()
	a.send("PING\r\n")
	a.expect("+PONG\r\n")
	st := h.srv.Stats()
	if st.RejectedConnections != 1 || st.TotalConnections != 1 || st.ConnectedClients != 1 {
		t.Errorf("Stats() = %+v", st)
	}
}

func TestTwoServersSideBySide(t *testing.T) {
	h1, h2 := start(t, Config{}), start(t, Config{})
	c1, c2 := h1.dial(), h2.dial()
	c1.send("CLIENTS\r\n")
	c1.expect("*1\r\n$10\r\nid=1 name=\r\n")
	c2.send("CLIENTS\r\n")
	c2.expect("*1\r\n$10\r\nid=1 name=\r\n")
}

func TestNewWithoutHandlerPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New without a Handler did not panic")
		}
	}()
	New(Config{})
}

func TestServeAfterCloseAndTwice(t *testing.T) {
	s := New(Config{Handler: newFakeHandler()})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Close = %v", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("Serve after Close left the listener open")
	}
	if err := s.ListenAndServe(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("ListenAndServe after Close = %v", err)
	}

	h := start(t, Config{})
	c := h.dial()
	c.send("PING\r\n")
	c.expect("+PONG\r\n") // the first Serve is running
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	if err := h.srv.Serve(ln2); err == nil || errors.Is(err, ErrServerClosed) {
		t.Errorf("second Serve = %v, want an error", err)
	}
}

func TestListenAndServe(t *testing.T) {
	bad := New(Config{Handler: newFakeHandler(), Addr: "127.0.0.1:-1"})
	if err := bad.ListenAndServe(); err == nil || errors.Is(err, ErrServerClosed) {
		t.Errorf("ListenAndServe on a bad address = %v", err)
	}

	s := New(Config{Handler: newFakeHandler(), Addr: "127.0.0.1:0", Logger: newTestLogger()})
	served := make(chan error, 1)
	go func() { served <- s.ListenAndServe() }()
	deadline := time.Now().Add(testTimeout)
	for s.Addr() == nil { // no sleep: Addr is set before Serve accepts
		if time.Now().After(deadline) {
			t.Fatal("ListenAndServe never listened")
		}
		runtime.Gosched()
	}
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cl := &client{t: t, Conn: c}
	cl.send("PING\r\n")
	cl.expect("+PONG\r\n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cl.expectClosed()
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Errorf("ListenAndServe = %v, want ErrServerClosed", err)
	}
}

func TestServeReturnsListenerError(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Handler: newFakeHandler(), Logger: newTestLogger()})
	served := make(chan error, 1)
	ln := &testListener{Listener: inner, closed: make(chan struct{})}
	go func() { served <- s.Serve(ln) }()
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cl := &client{t: t, Conn: c}
	cl.send("PING\r\n")
	cl.expect("+PONG\r\n")
	inner.Close() // closed behind the server's back
	if err := <-served; err == nil || errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve = %v, want the listener's error", err)
	}
	cl.expectClosed()
	if err := s.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Errorf("Close = %v", err)
	}
}

// flakyListener fails its first Accept with an error that is not a close.
type flakyListener struct {
	net.Listener
	failed bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, errors.New("too many open files")
	}
	return l.Listener.Accept()
}

func TestAcceptErrorIsRetried(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := newLogSink()
	s := New(Config{Handler: newFakeHandler(), Logger: slog.New(logs)})
	served := make(chan error, 1)
	go func() { served <- s.Serve(&flakyListener{Listener: inner}) }()
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cl := &client{t: t, Conn: c}
	cl.send("PING\r\n")
	cl.expect("+PONG\r\n")
	if !strings.Contains(logs.String(), "ERROR server: accept failed; retrying err=too many open files") {
		t.Errorf("accept error not logged:\n%s", logs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve = %v", err)
	}
}
