package server

import (
	"errors"
	"net"
	"os"
	"time"
)

// errShutdown ends a connection that Shutdown closed between two batches.
var errShutdown = errors.New("server: shutting down")

// errIdleTimeout ends a connection that sent nothing for Config.IdleTimeout.
var errIdleTimeout = errors.New("server: idle timeout")

// readSocket reads from the socket, marking the connection idle meanwhile
// so that Shutdown may close it at once. It is called only once the
// previous batch has run and its replies are flushed, so a Shutdown that
// asked for the connection to close between batches closes it here.
func (c *conn) readSocket(b []byte) (int, error) {
	c.mu.Lock()
	if c.closing {
		_ = c.closeLocked()
		c.mu.Unlock()
		return 0, errShutdown
	}
	c.idle = true
	c.mu.Unlock()

	if c.idleTimeout > 0 {
		// Redis's timeout counts from the client's last bytes: any read
		// restarts it.
		_ = c.nc.SetReadDeadline(time.Now().Add(c.idleTimeout))
	}
	n, err := c.nc.Read(b)
	if c.idleTimeout > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		err = errIdleTimeout
	}

	c.mu.Lock()
	c.idle = false
	closed, closing := c.closed, c.closing
	c.mu.Unlock()
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

// shutdown closes the connection now if it is idle, or else as soon as its
// current batch has been run and its replies flushed.
func (c *conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if c.idle {
		if c.closeErr == nil {
			c.closeErr = errShutdown
		}
		_ = c.closeLocked()
	}
}

// close closes the connection at once; closing it again does nothing.
func (c *conn) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked()
}

// closeLocked closes the socket once. c.mu is held. On an event loop, it
// shuts the socket down, which the peer sees at once, and leaves closing
// the descriptor to the loop, which alone uses it.
func (c *conn) closeLocked() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.lp != nil {
		if c.closeErr == nil {
			c.closeErr = net.ErrClosed
		}
		return c.ls.shutdownSocket()
	}
	return c.nc.Close()
}
