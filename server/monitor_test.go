package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
)

// startMonitored serves the real commands with cfg and a push limit of
// limit bytes, and returns the server and its address.
func startMonitored(t *testing.T, cfg Config, limit int) (*Server, string) {
	t.Helper()
	eng := engine.New(engine.Options{SweepInterval: -1})
	t.Cleanup(eng.Close)
	cmds := commands.New(commands.Options{Engine: eng, Logger: newTestLogger()})
	cfg.Handler, cfg.Logger = cmds, newTestLogger()
	srv := New(cfg)
	srv.pushLimit = limit
	cmds.SetHost(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Error(err)
		}
	})
	return srv, ln.Addr().String()
}

// dialMonitor connects, sends MONITOR and reads its OK.
func dialMonitor(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if err := nc.(*net.TCPConn).SetReadBuffer(4096); err != nil { // a slow reader fills up sooner
		t.Fatal(err)
	}
	r := bufio.NewReader(nc)
	_, _ = nc.Write([]byte(cmd("MONITOR")))
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r.ReadString('\n'); line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", line, err)
	}
	return nc, r
}

// TestMonitorSlowReaderIsClosed: a monitor that reads nothing holds no
// other client back: the commands it should see go on at full speed, and
// once its backlog passes the limit it is closed, as Redis closes a client
// past its client-output-buffer-limit.
func TestMonitorSlowReaderIsClosed(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		srv, addr := startMonitored(t, cfg, 256<<10)
		dialMonitor(t, addr) // and never read again
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		r := bufio.NewReader(nc)
		_, _ = nc.Write([]byte(cmd("PING"))) // registered once it has answered
		if line, err := r.ReadString('\n'); line != "+PONG\r\n" {
			t.Fatalf("PING: %q %v", line, err)
		}
		batch := strings.Repeat(cmd("ECHO", strings.Repeat("x", 1000)), 100) // about 100 KiB of lines
		deadline := time.Now().Add(20 * time.Second)
		for srv.Stats().ConnectedClients > 1 {
			if time.Now().After(deadline) {
				t.Fatal("the monitor that reads nothing was never closed")
			}
			start := time.Now()
			_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := nc.Write([]byte(batch)); err != nil {
				t.Fatal(err)
			}
			for range 100 {
				if _, err := r.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Discard(1000 + 2); err != nil {
					t.Fatal(err)
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("a batch took %v while a monitor did not read", d)
			}
		}
		// The one left is the writer: the monitor is the one closed. (What
		// its peer sees then depends on TCP: the kernel may reset a
		// connection whose peer's window stays shut.)
		if cls := srv.Clients(); len(cls) != 1 || cls[0].Monitor {
			t.Fatalf("clients left: %+v", cls)
		}
	})
}

// TestMonitorIdleNeverTimesOut: as in Redis, the idle timeout spares a
// monitor, which sends nothing by nature.
func TestMonitorIdleNeverTimesOut(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		cfg.IdleTimeout = 50 * time.Millisecond
		_, addr := startMonitored(t, cfg, 0)
		_, r := dialMonitor(t, addr)
		time.Sleep(300 * time.Millisecond) // six idle timeouts
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_, _ = nc.Write([]byte(cmd("PING")))
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasSuffix(line, "] \"PING\"\r\n") {
			t.Fatalf("monitor after idling: %q %v", line, err)
		}
	})
}

// TestMonitorBehindGetsLaterLines: a monitor that falls behind, so that
// its backlog goes to its socket as one write larger than a batch's
// replies, and that then reads on, gets the lines pushed while that write
// is under way, and every line after them.
func TestMonitorBehindGetsLaterLines(t *testing.T) {
	forEachPath(t, func(t *testing.T, cfg Config) {
		_, addr := startMonitored(t, cfg, 256<<20)
		mon, err := net.Dial("tcp", addr) // reads nothing for now
		if err != nil {
			t.Fatal(err)
		}
		defer mon.Close()
		mr := bufio.NewReader(mon)
		_, _ = mon.Write([]byte(cmd("MONITOR")))
		_ = mon.SetReadDeadline(time.Now().Add(testTimeout))
		if line, err := mr.ReadString('\n'); line != "+OK\r\n" {
			t.Fatalf("MONITOR: %q %v", line, err)
		}
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		r := bufio.NewReader(nc)
		call := func(req string, replyLen int) {
			t.Helper()
			_ = nc.SetDeadline(time.Now().Add(testTimeout))
			if _, err := nc.Write([]byte(req)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(r, make([]byte, replyLen)); err != nil {
				t.Fatal(err)
			}
		}
		echo := cmd("ECHO", strings.Repeat("x", 1000))
		for range 300 { // about 30 MB of lines, far more than the sockets hold
			call(strings.Repeat(echo, 100), 100*len("$1000\r\n"+strings.Repeat("x", 1000)+"\r\n"))
		}
		time.Sleep(100 * time.Millisecond)
		for range 100 { // the monitor takes some: its backlog goes to the socket
			if _, err := mr.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
		for range 3 { // lines pushed while that write is under way
			call(cmd("ECHO", "later"), len("$5\r\nlater\r\n"))
			time.Sleep(50 * time.Millisecond)
		}
		call(cmd("ECHO", "marker"), len("$6\r\nmarker\r\n"))
		_ = mon.SetReadDeadline(time.Now().Add(testTimeout))
		for lines := 0; ; lines++ {
			line, err := mr.ReadString('\n')
			if err != nil {
				t.Fatalf("monitor after %d more lines: %v (the marker's never came)", lines, err)
			}
			if strings.Contains(line, `"marker"`) {
				return
			}
		}
	})
}
