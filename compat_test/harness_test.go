// Package compat_test runs the real cellserver in-process on 127.0.0.1:0 and
// drives it with real clients: go-redis, raw TCP, redis-cli, and side by
// side with a real redis-server where one is installed.
package compat_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/internal/testenv"
	"github.com/cellserver/cellserver/server"
	"github.com/redis/go-redis/v9"
)

// ioTimeout bounds every network wait, so a broken server fails a test
// instead of hanging it.
const ioTimeout = 10 * time.Second

// testServer is one cellserver, wired as cmd/cellserver wires it.
type testServer struct {
	addr string // "127.0.0.1:port"
	port int
}

// startServer starts a cellserver on a free loopback port; the test's
// cleanup shuts it down and waits for it.
func startServer(t *testing.T) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	logger := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	eng := engine.New(engine.Options{})
	cmds := commands.New(commands.Options{
		Engine:  eng,
		Version: "compat-test",
		Settings: []commands.Setting{
			{Name: "bind", Value: "127.0.0.1"},
			{Name: "port", Value: strconv.Itoa(port)},
			{Name: "proto-max-bulk-len", Value: "536870912"},
			{Name: "timeout", Value: "0"},
			{Name: "maxclients", Value: "10000"},
		},
		Logger: logger,
	})
	serve(t, ln, cmds, logger, func(context.Context) { eng.Close() })
	return &testServer{addr: ln.Addr().String(), port: port}
}

// serve serves cmds on ln until the test's cleanup shuts the server down,
// checks that it stopped cleanly, and then calls closing (to stop what the
// server ran on).
func serve(t *testing.T, ln net.Listener, cmds *commands.Commands, logger *slog.Logger, closing func(context.Context)) {
	t.Helper()
	srv := server.New(server.Config{Addr: ln.Addr().String(), Handler: cmds, Logger: logger, MaxClients: 10000,
		EventLoops: server.DefaultEventLoops}) // as cellserver serves by default
	cmds.SetHost(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, server.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		closing(ctx)
	})
}

// testLogWriter sends the server's log to the test's log, shown on failure
// or with -v.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// goRedis returns a go-redis client of the server; opts may change the
// defaults (RESP3, retries off).
func (s *testServer) goRedis(t *testing.T, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: ioTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// rawConn is a plain TCP connection that reads replies as bytes, to compare
// them exactly.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

// withT returns the connection for use by test t (a subtest), so failures
// are reported where they happen.
func (c *rawConn) withT(t *testing.T) *rawConn {
	return &rawConn{t: t, c: c.c, r: c.r}
}

// send writes raw bytes.
func (c *rawConn) send(raw string) {
	c.t.Helper()
	c.c.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := io.WriteString(c.c, raw); err != nil {
		c.t.Fatalf("write %q: %v", raw, err)
	}
}

// reply reads one whole reply and returns its bytes.
func (c *rawConn) reply() string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(ioTimeout))
	b, err := readReply(c.r)
	if err != nil {
		c.t.Fatalf("read reply: %v (read so far %q)", err, b)
	}
	return string(b)
}

// do sends one command as a multibulk and returns its reply's bytes.
func (c *rawConn) do(args ...string) string {
	c.t.Helper()
	c.send(resp(args...))
	return c.reply()
}

// expectClosed checks that the server closes the connection without sending
// anything more.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(ioTimeout))
	b, err := c.r.ReadByte()
	if err == nil {
		rest, _ := c.r.Peek(c.r.Buffered())
		c.t.Fatalf("connection still open, got %q", append([]byte{b}, rest...))
	}
	if !isClosed(err) {
		c.t.Fatalf("want the connection closed, got %v", err)
	}
}

// isClosed reports whether err means the peer closed the connection.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// resp encodes a command as a RESP multibulk.
func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// ints is the RESP2 bytes of an array of integers (CL.THROTTLE's reply).
func ints(n ...int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(n))
	for _, v := range n {
		fmt.Fprintf(&b, ":%d\r\n", v)
	}
	return b.String()
}

// readReply reads one RESP2 or RESP3 reply and returns its exact bytes.
func readReply(r *bufio.Reader) ([]byte, error) {
	var out []byte
	err := readReplyInto(r, &out)
	return out, err
}

func readReplyInto(r *bufio.Reader, out *[]byte) error {
	line, err := r.ReadBytes('\n')
	*out = append(*out, line...)
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("malformed reply line %q", line)
	}
	head := string(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!': // blob, verbatim, blob error
		n, err := strconv.Atoi(head)
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			return nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		*out = append(*out, body...)
		return nil
	case '*', '~', '>', '%', '|': // array, set, push, map, attribute
		n, err := strconv.Atoi(head)
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readReplyInto(r, out); err != nil {
				return err
			}
		}
		if line[0] == '|' { // an attribute precedes the reply it describes
			return readReplyInto(r, out)
		}
		return nil
	}
	return fmt.Errorf("unknown reply type in %q", line)
}

// needTool returns the path of a program the test needs (redis-server,
// redis-cli), skipping the test where it is missing, or failing it in CI.
func needTool(t *testing.T, name string) string {
	t.Helper()
	return testenv.NeedTool(t, name, "apt-get install redis-server redis-tools")
}
