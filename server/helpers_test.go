package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
)

// testTimeout bounds every wait in these tests; nothing sleeps.
const testTimeout = 10 * time.Second

// fakeHandler is the command set the tests run against.
type fakeHandler struct {
	host    commands.Host // set once the server exists
	entered chan string   // SLOW and DEFER signal they are running
	release chan struct{} // SLOW waits for it, and DEFER's completion
	errored chan string   // the error replies the server wrote itself (Errored)
}

func newFakeHandler() *fakeHandler {
	return &fakeHandler{entered: make(chan string, 16), release: make(chan struct{}), errored: make(chan string, 16)}
}

// NewSession implements Handler.
func (h *fakeHandler) NewSession(id int64, addr, laddr string, created time.Time) commands.Session {
	return &fakeSession{h: h, info: commands.ClientInfo{ID: id, Addr: addr, LocalAddr: laddr, Created: created, Proto: 2}}
}

// fakeSession is one connection's fakeHandler state.
type fakeSession struct {
	h    *fakeHandler
	info commands.ClientInfo
}

func (c *fakeSession) StartBatch(time.Time)        {}
func (c *fakeSession) Proto() int                  { return c.info.Proto }
func (c *fakeSession) AuthRequired() bool          { return false }
func (c *fakeSession) Info() commands.ClientInfo   { return c.info }
func (c *fakeSession) Overlaps(args [][]byte) bool { return strings.EqualFold(string(args[0]), "ping") }

// Errored implements commands.Session: the first 16 are kept for the test
// to look at.
func (c *fakeSession) Errored(msg string) {
	select {
	case c.h.errored <- msg:
	default:
	}
}

// Dispatch implements commands.Session.
func (c *fakeSession) Dispatch(w commands.Writer, args [][]byte) commands.Effect {
	h := c.h
	name := strings.ToLower(string(args[0]))
	switch {
	case name == "ping":
		w.WriteString("PONG")
	case name == "echo" && len(args) == 2:
		w.WriteBulk(args[1])
	case strings.HasPrefix(name, "panic"):
		w.WriteArray(2) // a partial reply, to be taken back
		w.WriteInt(1)
		panic("boom")
	case name == "slow":
		h.entered <- name
		<-h.release
		w.WriteString("DONE")
	case name == "defer": // pauses; another goroutine completes it once SLOWs are released
		paused := commands.AsPauser(w).Pause()
		h.entered <- name
		go func() {
			<-h.release
			paused.Complete(commands.ReplyFunc(func(w commands.Writer) { w.WriteString("LATE") }))
		}()
	case name == "quit":
		w.WriteString("OK")
		return commands.EffectQuit
	case name == "hello" && len(args) == 2:
		c.info.Proto, _ = strconv.Atoi(string(args[1]))
		w.(commands.ProtoSwitcher).SwitchProto(c.info.Proto)
		w.WriteString("OK")
		return commands.EffectProto | commands.EffectInfo
	case name == "setname" && len(args) == 2:
		c.info.Name = string(args[1])
		w.WriteString("OK")
		return commands.EffectInfo
	case name == "clients":
		infos := h.host.Clients()
		w.WriteArray(len(infos))
		for _, ci := range infos {
			w.WriteBulkString(fmt.Sprintf("id=%d name=%s", ci.ID, ci.Name))
		}
	case name == "big" && len(args) == 2: // a bulk string of n bytes
		n, _ := strconv.Atoi(string(args[1]))
		w.WriteBulk(bytes.Repeat([]byte{'x'}, n))
	case name == "w" && len(args) == 2:
		writeSample(w, string(args[1]))
	default:
		w.WriteError("ERR unknown command '" + name + "'")
	}
	return 0
}

// writeSample writes the sample reply of one Writer method, as named.
func writeSample(w commands.Writer, method string) {
	switch method {
	case "error":
		w.WriteError("ERR bad\r\nthing")
	case "string":
		w.WriteString("OK")
	case "bulk":
		w.WriteBulk([]byte("a\r\nb"))
	case "bulkstring":
		w.WriteBulkString("")
	case "int":
		w.WriteInt(-42)
	case "array":
		w.WriteArray(2)
		w.WriteInt(1)
		w.WriteInt(2)
	case "map":
		w.WriteMap(1)
		w.WriteBulkString("k")
		w.WriteInt(7)
	case "set":
		w.WriteSet(1)
		w.WriteBulkString("m")
	case "null":
		w.WriteNull()
	case "nullarray":
		w.WriteNullArray()
	case "verbatim":
		w.WriteVerbatim("hi\n")
	}
}

// logSink is a slog.Handler that keeps every record's text and reports
// each message on a channel, so tests wait for events instead of sleeping.
type logSink struct {
	mu     sync.Mutex
	text   bytes.Buffer
	events chan string
}

func newLogSink() *logSink { return &logSink{events: make(chan string, 4096)} }

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logSink) WithGroup(string) slog.Handler            { return l }

func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	fmt.Fprintf(&l.text, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&l.text, " %s=%v", a.Key, a.Value)
		return true
	})
	l.text.WriteByte('\n')
	l.mu.Unlock()
	select {
	case l.events <- r.Message:
	default:
	}
	return nil
}

// String returns every record so far.
func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

// wait waits for a record with message msg.
func (l *logSink) wait(t *testing.T, msg string) {
	t.Helper()
	timeout := time.After(testTimeout)
	for {
		select {
		case m := <-l.events:
			if m == msg {
				return
			}
		case <-timeout:
			t.Fatalf("no log record %q; got:\n%s", msg, l)
		}
	}
}

// newTestLogger returns a logger that drops everything.
func newTestLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// harness is a real server on 127.0.0.1:0.
type harness struct {
	t       *testing.T
	srv     *Server
	fake    *fakeHandler
	logs    *logSink
	ln      *testListener
	addr    string
	served  chan error
	result  error
	getOnce sync.Once
}

// start serves cfg on 127.0.0.1:0 (with the fake handler and a log sink
// unless set).
func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startOn(t, inner, cfg)
}

// startOn serves cfg on inner, which it closes at the end of the test.
// Each of before is called with the server before it starts serving.
func startOn(t *testing.T, inner net.Listener, cfg Config, before ...func(*Server)) *harness {
	t.Helper()
	h := &harness{t: t, fake: newFakeHandler(), logs: newLogSink(), served: make(chan error, 1)}
	h.ln = &testListener{Listener: inner, closed: make(chan struct{})}
	if cfg.Handler == nil {
		cfg.Handler = h.fake
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(h.logs)
	}
	h.srv = New(cfg)
	h.fake.host = h.srv
	for _, f := range before {
		f(h.srv)
	}
	h.addr = inner.Addr().String()
	go func() { h.served <- h.srv.Serve(h.ln) }()
	t.Cleanup(func() {
		h.releaseSlow()
		if err := h.srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
		if err := h.serveResult(); !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return h
}

// releaseSlow lets every SLOW command finish.
func (h *harness) releaseSlow() {
	select {
	case <-h.fake.release:
	default:
		close(h.fake.release)
	}
}

// serveResult waits for Serve to return.
func (h *harness) serveResult() error {
	h.getOnce.Do(func() {
		select {
		case h.result = <-h.served:
		case <-time.After(testTimeout):
			h.result = errors.New("Serve did not return")
		}
	})
	return h.result
}

// waitSlow waits until a SLOW command is running.
func (h *harness) waitSlow() {
	h.t.Helper()
	select {
	case <-h.fake.entered:
	case <-time.After(testTimeout):
		h.t.Fatal("SLOW never started")
	}
}

// testListener reports when the server closes it and counts writes to
// its connections.
type testListener struct {
	net.Listener
	closed    chan struct{}
	closeOnce sync.Once
	writes    atomic.Int64
}

func (l *testListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

func (l *testListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.closed) })
	return err
}

// waitClosed waits until the server has closed the listener.
func (l *testListener) waitClosed(t *testing.T) {
	t.Helper()
	select {
	case <-l.closed:
	case <-time.After(testTimeout):
		t.Fatal("listener not closed")
	}
}

// countingConn counts Write calls: one per flushed batch, whether through
// the connection or on its socket (a goroutine's write that does not
// wait). It hands its socket to an event loop as the connection it wraps
// would.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) SyscallConn() (syscall.RawConn, error) {
	rc, err := c.Conn.(syscall.Conn).SyscallConn()
	return countingRawConn{rc, c.writes}, err
}

// countingRawConn counts the writes on a connection's socket.
type countingRawConn struct {
	syscall.RawConn
	writes *atomic.Int64
}

func (c countingRawConn) Write(f func(fd uintptr) bool) error {
	c.writes.Add(1)
	return c.RawConn.Write(f)
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// client is a raw TCP client.
type client struct {
	t *testing.T
	net.Conn
}

// dial connects a raw client to the harness.
func (h *harness) dial() *client {
	h.t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return &client{t: h.t, Conn: c}
}

// send writes s in one write.
func (c *client) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// sendBytewise writes s one byte per write, stopping if the server has
// closed the connection (after a protocol error, the rest is not read).
func (c *client) sendBytewise(s string) {
	for i := 0; i < len(s); i++ {
		if _, err := c.Write([]byte{s[i]}); err != nil {
			return
		}
	}
}

// expect reads exactly len(want) bytes and compares them.
func (c *client) expect(want string) {
	c.t.Helper()
	c.SetReadDeadline(time.Now().Add(testTimeout))
	got := make([]byte, len(want))
	n, err := io.ReadFull(c, got)
	if err != nil || string(got) != want {
		c.t.Fatalf("read %q (err %v), want %q", got[:n], err, want)
	}
}

// expectClosed reads until the server closes the connection; nothing more
// may arrive.
func (c *client) expectClosed() {
	c.t.Helper()
	c.SetReadDeadline(time.Now().Add(testTimeout))
	rest, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection still open after %q", rest)
	}
	if len(rest) > 0 {
		c.t.Fatalf("unexpected bytes before close: %q", rest)
	}
}

// drain reads until the server closes the connection and returns what
// arrived.
func (c *client) drain() string {
	c.t.Helper()
	c.SetReadDeadline(time.Now().Add(testTimeout))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection still open after %q", b)
	}
	return string(b)
}

// cmd encodes args as a RESP request.
func cmd(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// forEachPath runs test on one event loop (where the system has them) and
// with every connection on a goroutine of its own (the zero Config's).
func forEachPath(t *testing.T, test func(t *testing.T, cfg Config)) {
	t.Run("loop", func(t *testing.T) { test(t, Config{EventLoops: 1}) })
	t.Run("goroutines", func(t *testing.T) { test(t, Config{}) })
}
