package server

import (
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// readBufSize is how much a guardConn reads from its socket at a time; it
// matches the buffer redcon reads into.
const readBufSize = 4096

// errShutdown ends a connection that Shutdown closed between two batches.
var errShutdown = errors.New("server: shutting down")

// errIdleTimeout ends a connection that sent nothing for Config.IdleTimeout.
var errIdleTimeout = errors.New("server: idle timeout")

// protocolError ends a connection that broke the protocol; the client has
// already been sent "-ERR Protocol error: ...".
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "Protocol error: " + e.msg }

// guardConn is an accepted connection as redcon sees it. Its Read passes on
// only what its framer lets through, so redcon never meets a request it
// would reject, overflow on or mis-frame: on a violation, Read first returns
// the valid requests before it (which run and whose replies are flushed),
// then writes Redis's error line to the client and fails, and redcon closes
// the connection. It also tells a graceful shutdown when the connection is
// between batches, applies Redis's tighter limits to a client that has yet
// to authenticate, and fails a read that waits longer than the idle timeout.
// With TLS it wraps the *tls.Conn, so it sees the decrypted bytes.
type guardConn struct {
	net.Conn

	// Used by the connection's goroutine only.
	f          framer
	buf        []byte // bytes read from the socket; buf[bufR:bufW] not yet framed
	bufR, bufW int
	readErr    error // the socket's read error, returned once buf is used up
	failure    error // the protocol error, once reported to the client

	// Set before the connection's goroutine starts, then read-only.
	idleTimeout  time.Duration // Config.IdleTimeout; 0 for none
	authRequired func() bool   // whether the client must still authenticate; nil: never

	mu      sync.Mutex // guards the fields below
	idle    bool       // blocked reading the socket, every reply flushed
	closing bool       // Shutdown asked to close between two batches
	closed  bool
}

// newGuardConn wraps an accepted connection.
func newGuardConn(nc net.Conn, lim limits) *guardConn {
	return &guardConn{Conn: nc, f: framer{lim: lim}}
}

// Read fills p with framed requests. It returns as soon as p holds a
// complete request, with every request that has arrived (redcon runs what
// one Read returns as one batch and flushes its replies once), or when p is
// full. It never returns a request's first part alone: redcon parses a
// request again from its start after every Read, so handing it a long
// request in pieces as they trickle in would cost time quadratic in the
// request's length; filled reads grow with redcon's buffer instead. redcon
// calls Read only once it has run every complete request it was given and
// flushed the replies. While the client must still authenticate, Read
// returns one request at a time, so that each is framed under the limits
// that hold once the one before it (an AUTH, perhaps) has run.
func (g *guardConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := g.checkClosing(); err != nil {
		return 0, err
	}
	g.f.unauth = g.authRequired != nil && g.authRequired()
	n, start := 0, g.f.completed
	g.f.frameStart = 0 // a request begun in an earlier Read starts here
	for n < len(p) {
		switch {
		case len(g.f.pend) > 0:
			k := copy(p[n:], g.f.pend)
			g.f.pend = g.f.pend[k:]
			n += k
			if len(g.f.pend) == 0 {
				g.f.completed++
			}
		case g.f.unauth && g.f.completed != start:
			return n, nil // one request at a time until authenticated
		case g.f.violation != "":
			if n > 0 {
				return n, nil // the valid requests first
			}
			return 0, g.fail()
		case g.bufR < g.bufW:
			w, r := g.f.transduce(p, n, g.buf[g.bufR:g.bufW])
			g.bufR += r
			n = w
		case n > 0 && g.f.completed != start:
			return n, nil // never wait for more with a request in hand
		case g.readErr != nil:
			if n > 0 {
				return n, nil
			}
			return 0, g.readErr
		case g.f.state == stArgData && g.f.dataLeft >= readBufSize:
			// The middle of a long argument needs no framing: read it
			// straight into p.
			m, err := g.readSocket(p[n:min(int64(len(p)), int64(n)+g.f.dataLeft)])
			g.f.passed(m)
			n += m
			g.readErr = err
		default:
			if g.buf == nil {
				g.buf = make([]byte, readBufSize)
			}
			m, err := g.readSocket(g.buf)
			g.bufR, g.bufW = 0, m
			g.readErr = err
		}
	}
	return n, nil
}

// readSocket reads from the socket, marking the connection idle meanwhile
// so that Shutdown may close it at once.
func (g *guardConn) readSocket(b []byte) (int, error) {
	g.mu.Lock()
	if g.closing {
		_ = g.closeLocked()
		g.mu.Unlock()
		return 0, errShutdown
	}
	g.idle = true
	g.mu.Unlock()

	if g.idleTimeout > 0 {
		// Redis's timeout counts from the client's last bytes: any read
		// restarts it.
		_ = g.Conn.SetReadDeadline(time.Now().Add(g.idleTimeout))
	}
	n, err := g.Conn.Read(b)
	if g.idleTimeout > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		err = errIdleTimeout
	}

	g.mu.Lock()
	g.idle = false
	closed, closing := g.closed, g.closing
	g.mu.Unlock()
	switch {
	case closed && closing:
		// Shutdown closed the connection while it was idle: whatever
		// arrived meanwhile is not run, since its reply could not be sent.
		return 0, errShutdown
	case closed:
		return 0, net.ErrClosed
	}
	return n, err
}

// checkClosing closes the connection if Shutdown asked for it: a Read
// call means the previous batch has been run and flushed.
func (g *guardConn) checkClosing() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		_ = g.closeLocked()
		return errShutdown
	}
	return nil
}

// fail reports the framer's violation: it writes Redis's error line once
// and returns the error that makes redcon close the connection.
func (g *guardConn) fail() error {
	if g.failure == nil {
		g.failure = &protocolError{msg: g.f.violation}
		line := "-ERR Protocol error: " + strings.NewReplacer("\r", " ", "\n", " ").Replace(g.f.violation) + "\r\n"
		_, _ = g.Conn.Write([]byte(line)) // the connection closes anyway
	}
	return g.failure
}

// shutdown closes the connection now if it is idle, or else as soon as its
// current batch has been run and its replies flushed.
func (g *guardConn) shutdown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closing = true
	if g.idle {
		_ = g.closeLocked()
	}
}

// Close closes the connection at once; closing it again does nothing.
func (g *guardConn) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closeLocked()
}

// closeLocked closes the socket once. g.mu is held.
func (g *guardConn) closeLocked() error {
	if g.closed {
		return nil
	}
	g.closed = true
	return g.Conn.Close()
}
