package server

import (
	"context"
	"testing"
	"time"
)

// TestPausedCommandLetsOthersRun: a command that pauses holds neither its
// driver nor, on an event loop, the other clients of the loop; its reply,
// and the replies after it, go out in order once it completes on another
// goroutine.
func TestPausedCommandLetsOthersRun(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		h := start(t, cfg) // the default path: one loop, so both clients share it
		paused, other := h.dial(), h.dial()
		paused.send("DEFER\r\nPING\r\n")
		h.waitSlow()
		for range 3 {
			other.send("PING\r\n")
			other.expect("+PONG\r\n")
		}
		// Nothing of paused's yet: its PING's reply waits behind DEFER's.
		paused.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if n, _ := paused.Read(make([]byte, 1)); n != 0 {
			t.Fatal("a reply arrived before the paused command completed")
		}
		h.releaseSlow() // the other goroutine completes DEFER
		paused.expect("+LATE\r\n+PONG\r\n")
		paused.send("PING\r\n")
		paused.expect("+PONG\r\n")
	})
}

// TestShutdownWaitsForPausedCommand: Shutdown lets a paused command
// complete and its reply go out before it closes the connection.
func TestShutdownWaitsForPausedCommand(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		h := start(t, cfg)
		c := h.dial()
		c.send("DEFER\r\n")
		h.waitSlow()
		done := make(chan error, 1)
		go func() { done <- h.srv.Shutdown(context.Background()) }()
		select {
		case err := <-done:
			t.Fatalf("Shutdown returned %v with a command paused", err)
		case <-time.After(20 * time.Millisecond):
		}
		h.releaseSlow()
		c.expect("+LATE\r\n")
		c.expectClosed()
		if err := <-done; err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	})
}

// TestClosePausedCommand: Close drops a paused command; its completion,
// arriving after the connection is gone, is dropped.
func TestClosePausedCommand(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		h := start(t, cfg)
		c := h.dial()
		c.send("DEFER\r\n")
		h.waitSlow()
		if err := h.srv.Close(); err != nil {
			t.Fatal(err)
		}
		c.expectClosed()
		h.releaseSlow() // completes on a closed connection
	})
}
