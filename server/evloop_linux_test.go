//go:build linux

package server

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bigReplies is a pipeline whose replies (32 MiB) are far more than the
// socket buffers hold and than maxBatchReply, and the replies it gets.
func bigReplies() (req, want string) {
	const n, size = 64, 512 << 10
	reply := "$524288\r\n" + strings.Repeat("x", size) + "\r\n"
	return strings.Repeat("BIG 524288\r\n", n) + "PING\r\n", strings.Repeat(reply, n) + "+PONG\r\n"
}

// startOneLoop serves cfg on a single event loop, calling each of before
// with the server before it serves; the test fails if the loop wrote
// nothing.
func startOneLoop(t *testing.T, cfg Config, before ...func(*Server)) *harness {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	cfg.EventLoops = 1
	before = append(before, func(s *Server) { countLoopWrites(s, &writes) })
	h := startOn(t, inner, cfg, before...)
	t.Cleanup(func() {
		if writes.Load() == 0 {
			t.Error("the event loop wrote nothing: the connections were served elsewhere")
		}
	})
	return h
}

// TestZeroConfigServesOnGoroutines: with the zero Config, as with
// cellserver's --event-loops 0, no event loop serves a client.
func TestZeroConfigServesOnGoroutines(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	h := startOn(t, inner, Config{}, func(s *Server) { countLoopWrites(s, &writes) })
	c := h.dial()
	c.send("PING\r\n")
	c.expect("+PONG\r\n")
	if writes.Load() != 0 {
		t.Error("PONG was written by an event loop")
	}
}

func TestLoopSlowReaderDoesNotHoldOthers(t *testing.T) {
	h := startOneLoop(t, Config{})
	slow, other := h.dial(), h.dial()
	req, want := bigReplies()
	slow.send(req) // and read nothing yet: the loop must not wait for it

	for range 3 {
		other.send("PING\r\n")
		other.expect("+PONG\r\n")
	}
	slow.expect(want)
	slow.send("PING\r\n")
	slow.expect("+PONG\r\n")
}

func TestLoopShutdownWaitsForPendingReplies(t *testing.T) {
	h := startOneLoop(t, Config{})
	slow, idle := h.dial(), h.dial()
	idle.send("PING\r\n")
	idle.expect("+PONG\r\n")
	req, want := bigReplies()
	slow.send(req)
	// The first reply arriving shows the batch has run up to where the
	// socket could take no more.
	slow.expect(want[:1])

	done := make(chan error, 1)
	go func() { done <- h.srv.Shutdown(context.Background()) }()
	idle.expectClosed()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with replies unsent", err)
	default:
	}
	slow.expect(want[1:])
	slow.expectClosed()
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

func TestLoopCloseWhileRepliesPending(t *testing.T) {
	h := startOneLoop(t, Config{})
	slow := h.dial()
	req, want := bigReplies()
	slow.send(req)
	slow.expect(want[:1])
	if err := h.srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	slow.SetReadDeadline(time.Now().Add(testTimeout))
	got, err := io.ReadAll(slow)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection still open after Close")
	}
	if len(got) >= len(want)-1 {
		t.Errorf("every reply arrived (%d bytes) although Close dropped them", len(got))
	}
}

func TestLoopHalfClosedClientGetsReplies(t *testing.T) {
	h := startOneLoop(t, Config{})
	c := h.dial()
	c.send("PING\r\n" + cmd("ECHO", "a"))
	if err := c.Conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.expect("+PONG\r\n$1\r\na\r\n")
	c.expectClosed()
}

// heldWaits is how many waits of s's event loops kept their P, and how
// many of those ended with nothing.
func heldWaits(s *Server) (held, empty int64) {
	s.mu.Lock()
	g := s.loops
	s.mu.Unlock()
	for _, l := range g.loops {
		held += l.heldWaits.Load()
		empty += l.heldEmpty.Load()
	}
	return held, empty
}

// TestLoopKeepsItsPOnlyWithOneToSpare: a loop of a server that allows it
// (LoopsHoldP) waits keeping its P only while the process has more Ps than
// loops; with GOMAXPROCS 1 it never does (everything else would wait for
// its clients), and it follows a change of GOMAXPROCS while it runs. A
// wait that keeps the P ends by itself when nothing comes (so that what
// the P has queued runs elsewhere, and an idle loop holds nothing), and
// the loop holds it again once clients send; the collector stops the world
// while a loop waits holding its P, and the loop serves on. A server that
// does not allow it never holds its P.
func TestLoopKeepsItsPOnlyWithOneToSpare(t *testing.T) {
	if !holdsP(2, 1) || holdsP(1, 1) || holdsP(2, 2) {
		t.Fatal("holdsP: a loop keeps its P only when the process has more Ps than loops")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h, other := startOneLoop(t, Config{LoopsHoldP: true}), startOneLoop(t, Config{})
	c, o := h.dial(), other.dial()
	for range 50 {
		c.send("PING\r\n")
		c.expect("+PONG\r\n")
	}
	if n, _ := heldWaits(h.srv); n != 0 {
		t.Fatalf("with GOMAXPROCS 1, %d waits kept the loop's P", n)
	}

	runtime.GOMAXPROCS(2)
	for range 50 {
		c.send("PING\r\n")
		c.expect("+PONG\r\n")
		runtime.GC() // stops the world while the loop waits
		o.send("PING\r\n")
		o.expect("+PONG\r\n")
	}
	held, _ := heldWaits(h.srv)
	if held == 0 {
		t.Fatal("with GOMAXPROCS 2 and one loop, no wait kept the loop's P")
	}
	if n, _ := heldWaits(other.srv); n != 0 {
		t.Fatalf("a server without LoopsHoldP: %d waits kept its loop's P", n)
	}

	// Idle: the held wait ends with nothing, within heldWaitMs.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, empty := heldWaits(h.srv); empty > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an idle loop's wait keeping its P never ended by itself")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The wait after it gives the P up, until a client sends.
	idle, _ := heldWaits(h.srv)
	for range 5 {
		c.send("PING\r\n")
		c.expect("+PONG\r\n")
	}
	if again, _ := heldWaits(h.srv); again <= idle {
		t.Errorf("after an idle spell the loop no longer keeps its P (%d held waits, as many as when idle)", again)
	}
}
