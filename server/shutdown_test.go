package server

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestShutdownLetsRunningBatchFinish(t *testing.T) {
	forEachPath(t, testShutdownLetsRunningBatchFinish)
}

func testShutdownLetsRunningBatchFinish(t *testing.T, cfg Config) {
	h := start(t, cfg)
	busy, idle := h.dial(), h.dial()
	idle.send("PING\r\n")
	idle.expect("+PONG\r\n")
	busy.send("SLOW\r\nPING\r\n") // one batch: both commands run
	h.waitSlow()

	done := make(chan error, 1)
	go func() { done <- h.srv.Shutdown(context.Background()) }()
	h.ln.waitClosed(t)
	if c, err := net.Dial("tcp", h.addr); err == nil {
		c.Close()
		t.Error("a new connection was accepted during Shutdown")
	}
	idle.expectClosed() // idle connections close at once
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while a command was running", err)
	default:
	}

	h.releaseSlow()
	busy.expect("+DONE\r\n+PONG\r\n")
	busy.expectClosed()
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := h.serveResult(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve = %v, want ErrServerClosed", err)
	}
	if n := h.srv.Stats().ConnectedClients; n != 0 {
		t.Errorf("%d clients connected after Shutdown", n)
	}
}

func TestShutdownContextEndsFirst(t *testing.T) { forEachPath(t, testShutdownContextEndsFirst) }

func testShutdownContextEndsFirst(t *testing.T, cfg Config) {
	h := start(t, cfg)
	busy := h.dial()
	busy.send("SLOW\r\n")
	h.waitSlow()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.Shutdown(ctx) }()
	h.ln.waitClosed(t)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown = %v, want context.Canceled", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Shutdown did not return when its context ended")
	}
	busy.expectClosed() // force-closed: the reply is lost
	if err := h.serveResult(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve = %v, want ErrServerClosed", err)
	}
	h.releaseSlow() // the handler finishes on its own
}

func TestShutdownWithoutServe(t *testing.T) {
	s := New(Config{Handler: newFakeHandler()})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := s.ListenAndServe(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("ListenAndServe after Shutdown = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after Shutdown = %v", err)
	}
}

func TestCloseDropsConnections(t *testing.T) { forEachPath(t, testCloseDropsConnections) }

func testCloseDropsConnections(t *testing.T, cfg Config) {
	h := start(t, cfg)
	c := h.dial()
	c.send("PING\r\n")
	c.expect("+PONG\r\n")
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	if err := h.serveResult(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve = %v", err)
	}
}

// TestShutdownKeepsIdleTimeout: while Shutdown waits for a client's
// replies to be sent, a client that takes none of them is still closed
// after Config.IdleTimeout, so Shutdown ends without its context ending.
func TestShutdownKeepsIdleTimeout(t *testing.T) { forEachPath(t, testShutdownKeepsIdleTimeout) }

func testShutdownKeepsIdleTimeout(t *testing.T, cfg Config) {
	cfg.IdleTimeout = 100 * time.Millisecond
	h := start(t, cfg)
	c := h.dial()
	if err := c.Conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	c.send("BIG 16000000\r\n") // more than the sockets hold
	c.expect("$16000000\r\n")  // and nothing more: the rest waits for the client

	done := make(chan error, 1)
	go func() { done <- h.srv.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("Shutdown still waits for a client that took nothing for %v, past its idle timeout", testTimeout)
	}
	h.logs.wait(t, "server: connection closed")
	if !strings.Contains(h.logs.String(), errIdleTimeout.Error()) {
		t.Errorf("the client was not closed for the idle timeout:\n%s", h.logs)
	}
}
