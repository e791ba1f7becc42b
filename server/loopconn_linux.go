//go:build linux

package server

import (
	"fmt"
	"io"
	"syscall"
	"time"
)

// serve handles an event on c's socket: it reads the requests that have
// arrived and runs them, or sends the replies waiting for the socket to
// take them, and then does whatever has become possible.
func (l *evloop) serve(c *conn, events uint32) {
	defer func() {
		if p := recover(); p != nil { // a bug here must not take the server down
			l.end(c, c.panicked(p))
		}
	}()
	c.mu.Lock()
	if c.closed {
		err := c.closeErr
		c.mu.Unlock()
		l.end(c, err)
		return
	}
	c.idle = false
	c.mu.Unlock()

	if c.ls.interest == syscall.EPOLLIN {
		c.rd.shrink()
		n, err := syscall.Read(c.ls.fd, c.rd.room())
		switch {
		case n > 0:
			c.rd.filled(n)
			l.runBatch(c)
		case err == syscall.EAGAIN || err == syscall.EINTR:
		case err == nil:
			l.end(c, io.EOF)
			return
		default:
			l.end(c, err)
			return
		}
	}
	l.advance(c)
}

// runBatch runs the requests in c's buffer, noting whether the batch
// stopped for its replies to be sent or the connection is to end.
func (l *evloop) runBatch(c *conn) {
	switch err := c.runBatch(); err {
	case nil:
	case errWouldBlock:
		c.ls.paused = true
	default:
		c.ls.end = err
	}
}

// advance sends c's replies, goes on with a paused batch once they are
// sent, ends the connection if it is to end, and otherwise waits for c's
// next requests, marking it idle: a Shutdown asked meanwhile closes it now.
func (l *evloop) advance(c *conn) {
	for {
		switch err := l.send(c); err {
		case nil:
		case errWouldBlock:
			l.watch(c, syscall.EPOLLOUT)
			return
		default:
			l.end(c, err)
			return
		}
		if c.ls.end != nil {
			l.end(c, c.ls.end)
			return
		}
		if !c.ls.paused {
			break
		}
		c.ls.paused = false
		l.runBatch(c)
	}
	if !l.watch(c, syscall.EPOLLIN) {
		return
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		l.end(c, errShutdown)
		return
	}
	c.idle = true
	if l.srv.cfg.IdleTimeout > 0 {
		// Now, not when epoll_wait returned: a slow command of another
		// client in the same wake-up is not this client's idle time.
		c.idleSince = time.Now()
	}
	c.mu.Unlock()
}

// send writes c's buffered replies. It returns errWouldBlock if the socket
// cannot take them all now; the rest is sent when it becomes writable.
func (l *evloop) send(c *conn) error {
	for c.ls.sent < len(c.w.out) {
		n, err := l.write(c.ls.fd, c.w.out[c.ls.sent:])
		if n > 0 {
			c.ls.sent += n
		}
		switch {
		case err == nil:
		case err == syscall.EAGAIN:
			return errWouldBlock
		case err != syscall.EINTR:
			return err
		}
	}
	c.ls.sent = 0
	c.w.reset()
	return nil
}

// watch makes the loop wait for c's socket to become readable (EPOLLIN) or
// writable (EPOLLOUT). If it cannot, it ends c and returns false.
func (l *evloop) watch(c *conn, interest uint32) bool {
	if c.ls.interest == interest {
		return true
	}
	c.ls.interest = interest
	ev := syscall.EpollEvent{Events: interest, Fd: int32(c.ls.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.ls.fd, &ev); err != nil {
		l.end(c, fmt.Errorf("epoll_ctl: %w", err))
		return false
	}
	return true
}

// end closes c's descriptor, which takes it out of the epoll set, and
// unregisters it with err as the reason.
func (l *evloop) end(c *conn, err error) {
	fd := c.ls.fd
	if fd < 0 {
		return // ended already
	}
	c.mu.Lock()
	c.closed, c.idle = true, false
	c.mu.Unlock()
	// No other goroutine uses the descriptor once closed is set.
	_ = syscall.Close(fd)
	c.ls.fd = -1
	l.conns[fd] = nil
	l.count--
	c.srv.closed(c, err)
}
