package server

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
)

// pausePanicSession is scriptSession with commands that pause and then
// panic, as a handler with a bug might (an EXEC whose later command
// panics after an earlier one paused):
//
//	PP    pauses, then panics
//	WPP   writes part of a reply, pauses, then panics
type pausePanicSession struct {
	scriptSession
	late []commands.Paused // the pauses of the commands that panicked
}

func (c *pausePanicSession) Dispatch(w commands.Writer, args [][]byte) commands.Effect {
	switch strings.ToUpper(string(args[0])) {
	case "PP":
		c.late = append(c.late, commands.AsPauser(w).Pause())
		panic("after pause")
	case "WPP":
		w.WriteArray(2)
		w.WriteInt(1)
		c.late = append(c.late, commands.AsPauser(w).Pause())
		panic("after pause")
	}
	return c.scriptSession.Dispatch(w, args)
}

// TestPanicAfterPause: a command that pauses and then panics gets
// one reply, the internal error, and the commands after it run at once;
// its pause, completed later or never, writes nothing.
func TestPanicAfterPause(t *testing.T) {
	for _, name := range []string{"PP", "WPP"} {
		t.Run(name, func(t *testing.T) {
			r := newSessionRig(t, 0)
			cs := &pausePanicSession{}
			r.s = newSession(r.s.srv, 1, "127.0.0.1:1", cs, r.drv, r.now)
			r.feed(name + "\r\nPING\r\n")
			want := "-ERR internal error while running '" + strings.ToLower(name) +
				"'; the server logged it and keeps serving\r\n+PONG\r\n"
			if st := r.drive(); st != stepRead {
				t.Fatalf("next = %d, want stepRead: the panicked command holds the connection", st)
			}
			if got := strings.Join(r.writes, ""); got != want {
				t.Fatalf("sent %q, want %q", got, want)
			}
			cs.late[0].Complete(commands.ReplyFunc(func(w commands.Writer) { w.WriteString("LATE") }))
			r.drive()
			if got := strings.Join(r.writes, ""); got != want {
				t.Fatalf("after the late completion, sent %q, want %q", got, want)
			}
		})
	}
}

// TestMonitorQuitGetsNoLineAfterOK: a monitor that sends QUIT gets
// +OK and the connection ends, as in Redis; the monitor line of its own
// QUIT is not sent after the reply.
func TestMonitorQuitGetsNoLineAfterOK(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		_, addr := startMonitored(t, cfg, 0)
		nc, r := dialMonitor(t, addr)
		_, _ = nc.Write([]byte(cmd("QUIT")))
		_ = nc.SetReadDeadline(time.Now().Add(testTimeout))
		rest, err := io.ReadAll(r)
		if err != nil || string(rest) != "+OK\r\n" {
			t.Fatalf("after QUIT: %q %v, want +OK and the end", rest, err)
		}
	})
}

// TestIdleTimeoutClosesClientNotReading: as Redis's timeout does, a
// client that sends nothing and takes none of its replies for
// Config.IdleTimeout is closed; it does not hold its connection forever.
func TestIdleTimeoutClosesClientNotReading(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		cfg.IdleTimeout = 100 * time.Millisecond
		h := start(t, cfg)
		nc, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if err := nc.(*net.TCPConn).SetReadBuffer(4096); err != nil {
			t.Fatal(err)
		}
		_, _ = nc.Write([]byte("BIG 16000000\r\n")) // more than the sockets hold; never read
		timeout := time.After(testTimeout)
		for {
			select {
			case m := <-h.logs.events:
				if m != "server: connection closed" {
					continue
				}
				if !strings.Contains(h.logs.String(), errIdleTimeout.Error()) {
					t.Fatalf("closed, but not for the idle timeout:\n%s", h.logs)
				}
				return
			case <-timeout:
				t.Fatalf("a client reading nothing for %v was not closed", testTimeout)
			}
		}
	})
}

// readSlowly reads want bytes from c a little at a time, pausing between
// reads, and reports what it read.
func readSlowly(c net.Conn, want int, pause time.Duration) (int, error) {
	buf := make([]byte, 32<<10)
	got := 0
	for got < want {
		_ = c.SetReadDeadline(time.Now().Add(testTimeout))
		n, err := c.Read(buf[:min(len(buf), want-got)])
		got += n
		if err != nil {
			return got, err
		}
		time.Sleep(pause)
	}
	return got, nil
}

// TestIdleTimeoutSparesSlowReader: a client that takes its replies
// slowly, but takes some within every IdleTimeout, is not idle, as in
// Redis: it gets its whole reply, over plain TCP and over TLS, though
// that takes longer than the timeout.
func TestIdleTimeoutSparesSlowReader(t *testing.T) {
	const size = 8 << 20 // read a step at a time, 1 ms apart: over 200 ms
	want := len("$8388608\r\n") + size + 2
	const idle = 200 * time.Millisecond
	forEachPath(t, func(t *testing.T, cfg Config) {
		cfg.IdleTimeout = idle
		h := start(t, cfg)
		c := h.dial()
		c.send("BIG 8388608\r\n")
		if got, err := readSlowly(c, want, time.Millisecond); got != want {
			t.Fatalf("read %d of %d bytes: %v\n%s", got, want, err, h.logs)
		}
	})
	t.Run("tls", func(t *testing.T) {
		p := newTestPKI(t)
		h := startTLS(t, p, false, Config{IdleTimeout: idle})
		c := h.dialTLS(p.clientTLS())
		c.send(cmd("ECHO", strings.Repeat("x", size)))
		if got, err := readSlowly(c, want, time.Millisecond); got != want {
			t.Fatalf("read %d of %d bytes: %v\n%s", got, want, err, h.logs)
		}
	})
}
