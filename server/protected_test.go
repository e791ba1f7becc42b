package server

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
)

func TestProtectedModeDenies(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 6379} }
	cases := []struct {
		listen, remote net.Addr
		want           bool
	}{
		{tcp("0.0.0.0"), tcp("192.0.2.7"), true},
		{tcp("0.0.0.0"), tcp("127.0.0.1"), false},
		{tcp("0.0.0.0"), tcp("127.9.9.9"), false},
		{tcp("::"), tcp("::1"), false},
		{tcp("::"), tcp("::ffff:127.0.0.1"), false},
		{tcp("::"), tcp("fd00::2"), true},
		{tcp("::"), tcp("::ffff:10.0.0.1"), true},
		{tcp("192.0.2.2"), tcp("192.0.2.7"), true},
		{tcp("127.0.0.1"), tcp("192.0.2.7"), false}, // cannot happen; bound to loopback
		{tcp("::1"), tcp("fd00::2"), false},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, &net.UnixAddr{Net: "unix"}, false},
		{tcp("0.0.0.0"), &net.UnixAddr{Net: "unix"}, false},
		{tcp("0.0.0.0"), &net.IPAddr{IP: net.ParseIP("8.8.8.8")}, true},
	}
	for _, c := range cases {
		if got := protectedModeDenies(c.listen, c.remote); got != c.want {
			t.Errorf("protectedModeDenies(%v, %v) = %v, want %v", c.listen, c.remote, got, c.want)
		}
	}
}

func TestDeniedText(t *testing.T) {
	for _, want := range []string{
		"DENIED cellserver is running in protected mode because protected mode is enabled and no password is set for the default user.",
		"'--requirepass'", "'--users-file'", "'--protected-mode no'", "'--addr 127.0.0.1:6379'",
	} {
		if !strings.Contains(msgDenied, want) {
			t.Errorf("the DENIED text lacks %q", want)
		}
	}
	if strings.ContainsAny(msgDenied, "\r\n") {
		t.Error("the DENIED text has a line break")
	}
}

// nonLoopbackIP returns an address of this machine that is not loopback,
// or skips the test.
func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("no interface addresses: %v", err))
	}
	var v6 net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() || n.IP.IsMulticast() {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP
		}
		if v6 == nil {
			v6 = n.IP
		}
	}
	if v6 == nil {
		testenv.SkipOrFail(t, "this machine has no non-loopback address to connect from")
	}
	return v6
}

// TestProtectedModeOverTCP listens on every interface and connects from
// this machine's own non-loopback address, which the server sees as a
// remote client.
func TestProtectedModeOverTCP(t *testing.T) {
	ip := nonLoopbackIP(t)
	network, everywhere, loopback := "tcp4", "0.0.0.0:0", "127.0.0.1"
	if ip.To4() == nil {
		network, everywhere, loopback = "tcp6", "[::]:0", "::1"
	}
	cases := []struct {
		name                   string
		protected, passwordSet bool
		remoteDenied           bool
	}{
		{"on without password", true, false, true},
		{"on with password", true, true, false},
		{"off", false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen(network, everywhere)
			if err != nil {
				testenv.SkipOrFail(t, fmt.Sprintf("cannot listen on every interface: %v", err))
			}
			h := startOn(t, ln, Config{ProtectedMode: c.protected, PasswordSet: c.passwordSet})
			port := ln.Addr().(*net.TCPAddr).Port
			dial := func(host string) *client {
				nc, err := net.DialTimeout(network, net.JoinHostPort(host, strconv.Itoa(port)), testTimeout)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { nc.Close() })
				return &client{t: t, Conn: nc}
			}

			remote := dial(ip.String())
			if c.remoteDenied {
				remote.expect("-" + msgDenied + "\r\n")
				remote.expectClosed()
				h.logs.wait(t, "server: connection rejected: protected mode")
				if n := h.srv.Stats().RejectedConnections; n != 1 {
					t.Errorf("RejectedConnections = %d, want 1", n)
				}
			} else {
				remote.send("PING\r\n")
				remote.expect("+PONG\r\n")
			}
			local := dial(loopback)
			local.send("PING\r\n")
			local.expect("+PONG\r\n")
		})
	}
}

func TestIdleTimeout(t *testing.T) { forEachPath(t, testIdleTimeout) }

func testIdleTimeout(t *testing.T, cfg Config) {
	const idle = 400 * time.Millisecond // long beside a PING round trip on a loaded machine
	cases := []struct {
		name string
		run  func(h *harness)
	}{
		{"idle after a command", func(h *harness) {
			c := h.dial()
			c.send("PING\r\n")
			c.expect("+PONG\r\n")
			c.expectClosed()
		}},
		{"in the middle of a request", func(h *harness) {
			c := h.dial()
			c.send("*2\r\n$4\r\nECHO\r\n$3\r\nab")
			c.expectClosed()
		}},
		{"never sent anything", func(h *harness) {
			h.dial().expectClosed()
		}},
		{"active client stays", func(h *harness) {
			c := h.dial()
			for start := time.Now(); time.Since(start) < 3*idle; {
				c.send("PING\r\n")
				c.expect("+PONG\r\n")
			}
			c.expectClosed()
		}},
		{"a long command is not idleness", func(h *harness) {
			busy := h.dial()
			busy.send("SLOW\r\n")
			h.waitSlow()
			// Another client, connected after SLOW started, timing out
			// shows that the timeout has passed while SLOW ran.
			h.dial().expectClosed()
			h.releaseSlow()
			busy.expect("+DONE\r\n")
			busy.send("PING\r\n")
			busy.expect("+PONG\r\n")
		}},
		{"input waiting behind a long command is not idleness", func(h *harness) {
			busy, waiting := h.dial(), h.dial()
			waiting.send("PING\r\n")
			waiting.expect("+PONG\r\n")
			busy.send("SLOW\r\n")
			h.waitSlow()
			// Sent within the timeout; on a loop, SLOW holds it unread.
			waiting.send("PING\r\n")
			// A client connected later timing out shows that the
			// timeout has passed for the waiting one too.
			h.dial().expectClosed()
			h.releaseSlow()
			busy.expect("+DONE\r\n")
			waiting.expect("+PONG\r\n")
		}},
		{"a reader taking its reply behind a long command is not idle", func(h *harness) {
			busy, reader := h.dial(), h.dial()
			// A small window: the sockets hold a small part of the reply.
			if err := reader.Conn.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
				h.t.Fatal(err)
			}
			const size = 16000000
			reader.send("BIG 16000000\r\n")
			reader.expect("$16000000\r\n")
			// SLOW running shows the loop is done with the reader for now:
			// it waits for the socket to take more.
			busy.send("SLOW\r\n")
			h.waitSlow()
			read := make(chan error, 1)
			go func() {
				_, err := io.CopyN(io.Discard, reader, size+2)
				read <- err
			}()
			h.dial().expectClosed()
			h.releaseSlow()
			busy.expect("+DONE\r\n")
			if err := <-read; err != nil {
				h.t.Errorf("the reader, taking its reply, was closed: %v", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := cfg
			cfg.IdleTimeout = idle
			h := start(t, cfg)
			c.run(h)
			h.logs.wait(t, "server: connection closed")
			if !strings.Contains(h.logs.String(), "err=server: idle timeout") {
				t.Errorf("idle close not logged:\n%s", h.logs)
			}
		})
	}
}
