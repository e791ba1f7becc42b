//go:build linux

package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/redis/go-redis/v9"
)

// markedPipeline is a pipeline of inline requests, size bytes or a little
// more: PINGs with an ECHO of a running count before every 15 of them, so
// that a reply missing or out of place shows; and the replies it gets,
// about a sixth more than the requests.
func markedPipeline(size int) (req, want []byte) {
	for i := 0; len(req) < size; i++ {
		n := fmt.Sprintf("%07d", i)
		req = append(req, "ECHO "+n+"\r\n"...)
		want = append(want, "$7\r\n"+n+"\r\n"...)
		for range 15 {
			req = append(req, "PING\r\n"...)
			want = append(want, "+PONG\r\n"...)
		}
	}
	return req, want
}

// expectBytes reads len(want) bytes from c and compares them, naming the
// first difference.
func expectBytes(t *testing.T, c *client, want []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	got := make([]byte, len(want))
	n, err := io.ReadFull(c, got)
	if err != nil {
		t.Fatalf("read %d of %d reply bytes: %v", n, len(want), err)
	}
	if i := firstDifference(got, want); i >= 0 {
		t.Fatalf("replies differ at byte %d of %d: got %q, want %q", i, len(want),
			got[i:min(i+40, len(got))], want[i:min(i+40, len(want))])
	}
}

// firstDifference is the index of the first byte where a and b differ, or
// -1 if they are equal.
func firstDifference(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestReadsPipelineWhileRepliesWait: a client that writes its whole
// pipeline before it reads a reply (go-redis's Pipeline does) gets every
// reply, in order, as from Redis 7.0: while the socket takes no more of
// its replies, the server goes on reading and running its requests,
// instead of both sides blocking in their writes. On an event loop, on a
// goroutine, and over TLS (a goroutine, whose writes go on a second one).
func TestReadsPipelineWhileRepliesWait(t *testing.T) {
	test := func(t *testing.T, c *client) {
		req, want := markedPipeline(12 << 20) // replies: 14 MB, far more than the sockets hold
		_ = c.SetWriteDeadline(time.Now().Add(testTimeout))
		if n, err := c.Write(req); err != nil {
			t.Fatalf("wrote %d of %d bytes of the pipeline, reading nothing: %v", n, len(req), err)
		}
		expectBytes(t, c, want)
		c.send("PING\r\n")
		c.expect("+PONG\r\n")
	}
	forEachPath(t, func(t *testing.T, cfg Config) { test(t, startPath(t, cfg).dial()) })
	t.Run("tls", func(t *testing.T) {
		p := newTestPKI(t)
		test(t, startTLS(t, p, false, Config{}).dialTLS(p.clientTLS()))
	})
	t.Run("tls with TCP_NOTSENT_LOWAT", func(t *testing.T) {
		// As net.ipv4.tcp_notsent_lowat would set it: a write blocks once
		// that much is unsent, whatever room the send buffer has.
		p := newTestPKI(t)
		tlsCfg, err := LoadTLS(p.certFile, p.keyFile, "")
		if err != nil {
			t.Fatal(err)
		}
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h := startCommands(t, notsentLowatListener{inner}, Config{TLS: tlsCfg}, commands.Options{})
		test(t, h.dialTLS(p.clientTLS()))
	})
}

// notsentLowatListener sets TCP_NOTSENT_LOWAT to 16 KiB on every
// connection it accepts.
type notsentLowatListener struct{ net.Listener }

func (l notsentLowatListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotsentLowat, 16<<10)
		})
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// startPath serves cfg on one event loop if it asks for event loops
// (startOneLoop), or else on a goroutine a connection, calling each of
// before with the server before it serves.
func startPath(t *testing.T, cfg Config, before ...func(*Server)) *harness {
	t.Helper()
	if cfg.EventLoops > 0 {
		return startOneLoop(t, cfg, before...)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startOn(t, inner, cfg, before...)
}

// markedEchoes is a pipeline of n inline ECHOs, each of a running count
// padded to size bytes, and the replies it gets.
func markedEchoes(n, size int) (req, want []byte) {
	pad := strings.Repeat("x", size-7)
	for i := range n {
		arg := fmt.Sprintf("%07d", i) + pad
		req = append(req, "ECHO "+arg+"\r\n"...)
		want = append(want, "$"+strconv.Itoa(size)+"\r\n"+arg+"\r\n"...)
	}
	return req, want
}

// TestStopsReadingPastUnsentLimit: a client that sends requests and
// reads none of its replies is read until more than the unsent limit of
// replies wait for it, and no further: the server holds that much for it
// (the buffer's capacity within twice as much), while the other clients
// (of its loop) are served. Once it reads, it gets every reply, in order,
// and the rest of its requests are read.
func TestStopsReadingPastUnsentLimit(t *testing.T) { forEachPath(t, testStopsReadingPastUnsentLimit) }

func testStopsReadingPastUnsentLimit(t *testing.T, cfg Config) {
	const limit = 1 << 20
	const n, size = 16000, 1000 // 16 MB each way: far more than the limit and the sockets hold
	type report struct{ unsent, capacity int }
	full := make(chan report, 16)
	h := startPath(t, cfg, func(s *Server) {
		s.unsentLimit = limit
		s.unsentFull = func(unsent, capacity int) {
			select {
			case full <- report{unsent, capacity}:
			default:
			}
		}
	})
	stuck, other := h.dial(), h.dial()
	req, want := markedEchoes(n, size)
	reply := len(want) / n

	wrote := writeInBackground(t, stuck, req)
	var first report
	select {
	case first = <-full:
	case <-time.After(testTimeout):
		t.Fatal("no stop past the unsent limit: a client reading nothing was not read until its replies filled the limit")
	}
	for range 3 {
		other.send("PING\r\n")
		other.expect("+PONG\r\n")
	}
	for r := first; ; r = <-full {
		if r.unsent <= limit || r.unsent > limit+reply {
			t.Errorf("stopped reading with %d bytes unsent, want more than %d and at most one reply more", r.unsent, limit)
		}
		if r.capacity > 2*(limit+reply) {
			t.Errorf("%d unsent bytes held in a buffer of %d", r.unsent, r.capacity)
		}
		if len(full) == 0 {
			break
		}
	}

	expectBytes(t, stuck, want)
	if err := wrote.wait(); err != nil {
		t.Fatal(err)
	}
	stuck.send("PING\r\n")
	stuck.expect("+PONG\r\n")
}

// TestGoRedisPipelineOfThrottles: go-redis's Pipeline writes every
// command before it reads a reply; 300,000 CL.THROTTLE calls in one (19 MB
// of requests, 8 MB of replies) are more than the sockets hold, and all are
// answered, on an event loop, on a goroutine, and over TLS.
func TestGoRedisPipelineOfThrottles(t *testing.T) {
	test := func(t *testing.T, h *harness, tlsCfg *tls.Config) {
		const n = 300000
		ctx := context.Background()
		// The deadlock it guards against never ends: the deadlines are long
		// enough for the whole pipeline under -race on a busy machine.
		rdb := redis.NewClient(&redis.Options{Addr: h.addr, MaxRetries: -1, ReadTimeout: time.Minute,
			WriteTimeout: time.Minute, TLSConfig: tlsCfg})
		t.Cleanup(func() { rdb.Close() })
		pipe := rdb.Pipeline()
		calls := make([]*redis.IntSliceCmd, n)
		for i := range calls {
			calls[i] = redis.NewIntSliceCmd(ctx, "CL.THROTTLE", "user"+strconv.Itoa(i), "15", "30", "60")
			_ = pipe.Process(ctx, calls[i])
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("a pipeline of %d CL.THROTTLE calls: %v", n, err)
		}
		for i, c := range calls {
			if got := c.Val(); len(got) != 5 || got[0] != 0 || got[1] != 16 || got[2] != 15 {
				t.Fatalf("call %d: %v, want [0 16 15 -1 2]", i, got)
			}
		}
	}
	forEachPath(t, func(t *testing.T, cfg Config) {
		test(t, startCommands(t, nil, cfg, commands.Options{}), nil)
	})
	t.Run("tls", func(t *testing.T) {
		p := newTestPKI(t)
		test(t, startTLS(t, p, false, Config{}), p.clientTLS())
	})
}

// TestRunsNothingReadAfterShutdown: a client whose replies wait for its
// socket when Shutdown begins gets them, and then the end of the
// connection: a request it sends meanwhile, which the server still reads
// as it read on before, is not run.
func TestRunsNothingReadAfterShutdown(t *testing.T) { forEachPath(t, testRunsNothingReadAfterShutdown) }

func testRunsNothingReadAfterShutdown(t *testing.T, cfg Config) {
	h := startPath(t, cfg)
	c := h.dial()
	if err := c.Conn.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	const size = 16000000 // more than the sockets hold
	c.send("BIG " + strconv.Itoa(size) + "\r\n")
	c.expect("$" + strconv.Itoa(size) + "\r\n") // and nothing more: the rest waits for the client

	done := make(chan error, 1)
	go func() { done <- h.srv.Shutdown(context.Background()) }()
	waitShutdownBegun(t, h.srv)
	c.send("PING\r\n")
	expectBytes(t, c, []byte(strings.Repeat("x", size)+"\r\n"))
	c.expectClosed()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Shutdown still waits once the client took every reply")
	}
}

// waitShutdownBegun waits until Shutdown has told every open connection of
// s to end, which their clients do not see while replies remain.
func waitShutdownBegun(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for _, c := range s.connList() {
		for {
			c.mu.Lock()
			closing := c.closing
			c.mu.Unlock()
			if closing {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("Shutdown never told a connection to end")
			}
			runtime.Gosched()
		}
	}
}

// TestReadsOnAfterQuit: a client that writes its whole pipeline
// before it reads, with a QUIT or a protocol error within it, gets every
// reply up to that one and then the end of the connection, as from Redis
// 7.0: while those replies wait for its socket, the server reads on and
// drops the rest of the pipeline, instead of both sides blocking in their
// writes, and it reads it all before the last replies are sent, so that
// the close does not reset the connection and drop them.
func TestReadsOnAfterQuit(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		testReadsOnAfterQuit(t, func() *harness { return startPath(t, cfg) }, nil)
	})
	t.Run("tls", func(t *testing.T) {
		p := newTestPKI(t)
		testReadsOnAfterQuit(t, func() *harness { return startTLS(t, p, false, Config{}) }, p.clientTLS())
	})
}

// testReadsOnAfterQuit runs TestReadsOnAfterQuit on servers from start,
// over TLS with tlsCfg if it is not nil.
func testReadsOnAfterQuit(t *testing.T, start func() *harness, tlsCfg *tls.Config) {
	for _, c := range []struct{ name, req, reply string }{
		{"QUIT", "QUIT\r\n", "+OK\r\n"},
		{"protocol error", "*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := start()
			nc, err := net.Dial("tcp", h.addr)
			if err != nil {
				t.Fatal(err)
			}
			// A small window: most of the replies wait in the server's socket.
			if err := nc.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
				t.Fatal(err)
			}
			if tlsCfg != nil {
				cfg := tlsCfg.Clone()
				cfg.ServerName = "127.0.0.1"
				nc = tls.Client(nc, cfg)
			}
			t.Cleanup(func() { nc.Close() })
			cl := &client{t: t, Conn: nc}
			req, want := markedEchoes(8000, 1000) // 8 MB of replies
			rest, _ := markedEchoes(16000, 1000)  // 16 MB of requests: more than the sockets hold
			req = append(append(req, c.req...), rest...)
			want = append(want, c.reply...)

			wrote := writeInBackground(t, cl, req)
			if err := wrote.wait(); err != nil {
				t.Fatalf("%v: the requests after the last reply were not read", err)
			}
			expectBytes(t, cl, want)
			cl.expectClosed()
		})
	}
}

// backgroundWrite is a write of a whole pipeline on a goroutine of its own,
// which a client that reads nothing meanwhile needs.
type backgroundWrite struct {
	done chan struct{}
	err  error
}

// writeInBackground writes req to c on a goroutine that ends when it is
// written, at testTimeout, or when the test closes c.
func writeInBackground(t *testing.T, c net.Conn, req []byte) *backgroundWrite {
	t.Helper()
	w := &backgroundWrite{done: make(chan struct{})}
	_ = c.SetWriteDeadline(time.Now().Add(testTimeout))
	go func() {
		defer close(w.done)
		_, w.err = c.Write(req)
	}()
	t.Cleanup(func() {
		c.Close()
		<-w.done
	})
	return w
}

// wait waits for the write to end and returns its error, or an error if it
// has not ended within testTimeout.
func (w *backgroundWrite) wait() error {
	select {
	case <-w.done:
		if w.err != nil {
			return fmt.Errorf("writing the pipeline: %w", w.err)
		}
		return nil
	case <-time.After(testTimeout):
		return errors.New("the pipeline's write never ended")
	}
}
