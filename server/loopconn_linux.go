//go:build linux

package server

import (
	"fmt"
	"io"
	"syscall"
	"time"
	"unsafe"
)

// loopConn runs a session on an event loop: the socket's descriptor and
// what the loop waits for on it. Its fields are the loop goroutine's.
type loopConn struct {
	s        *session
	l        *evloop
	fd       int    // -1 once ended
	sock     int    // the descriptor, for shutSocket on other goroutines
	interest uint32 // EPOLLIN, EPOLLOUT, both, or 0 while waiting for a wake
	queued   bool   // c is in l.woken; guarded by l.mu
}

// wake queues c for its loop, which runs it when epoll_wait returns. The
// pipe is written only when the woken list was empty: a non-empty list
// already has a byte on its way (adopt drains the pipe before it takes the
// list, both after the byte was written), so a batch of completions costs
// one write(2), not one per completion, and a connection woken again
// before the loop ran it is queued once.
func (c *loopConn) wake() {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fdsShut || c.queued {
		return
	}
	c.queued = true
	l.woken = append(l.woken, c)
	if len(l.woken) == 1 {
		l.wakeLocked()
	}
}

// shutSocket shuts the socket down in both directions: the peer sees the
// connection end, and the loop, woken by the hang-up, closes the
// descriptor. Unlike closing it, this is safe while the loop uses it: the
// session is closed by then, so the loop does not touch it again but to
// close it.
func (c *loopConn) shutSocket() {
	_ = syscall.Shutdown(c.sock, syscall.SHUT_RDWR)
}

// ready implements driver: it polls the socket, without waiting, for what
// the loop would wait for. The session is open, so the loop has not
// closed the descriptor (end closes it only after finish).
func (c *loopConn) ready(input, output bool) bool {
	var events int16
	if input {
		events |= syscall.EPOLLIN
	}
	if output {
		events |= syscall.EPOLLOUT
	}
	return events != 0 && pollNow(c.sock, events)
}

// pollFd is poll(2)'s struct pollfd.
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// pollNow reports whether fd is ready for events (poll(2)'s, which are
// epoll's) now: ppoll(2) with a zero timeout.
func pollNow(fd int, events int16) bool {
	p := pollFd{fd: int32(fd), events: events}
	var now syscall.Timespec
	n, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1,
		uintptr(unsafe.Pointer(&now)), 0, 0, 0)
	return e == 0 && n == 1 && p.revents&events != 0
}

// serve handles an event on c's socket: it reads what has arrived, if the
// session asked for bytes, and then does whatever has become possible.
func (l *evloop) serve(c *loopConn, events uint32) {
	defer func() {
		if p := recover(); p != nil { // a bug here must not take the server down
			c.s.fail(c.s.panicked(p))
			l.end(c)
		}
	}()
	if c.interest&syscall.EPOLLOUT != 0 {
		c.s.writable() // or failed: the write says which
	}
	switch {
	case c.interest&syscall.EPOLLIN != 0 && events&^syscall.EPOLLOUT != 0:
		n, err := syscall.Read(c.fd, c.s.room())
		switch {
		case n > 0:
			if c.s.received(n, nil) {
				l.drain(c)
			}
		case err == syscall.EAGAIN || err == syscall.EINTR:
		case err == nil:
			c.s.received(0, io.EOF)
		default:
			c.s.received(0, err)
		}
	case c.interest == 0 && events&(syscall.EPOLLHUP|syscall.EPOLLERR) != 0:
		// The peer is gone while a paused command runs; epoll reports a
		// hang-up whatever the interest, so it ends here.
		c.s.fail(syscall.ECONNRESET)
	}
	l.advance(c)
}

// serveSafely advances c, woken by a paused command's completion.
func (l *evloop) serveSafely(c *loopConn) {
	defer func() {
		if p := recover(); p != nil { // a bug here must not take the server down
			c.s.fail(c.s.panicked(p))
			l.end(c)
		}
	}()
	l.advance(c)
}

// advance runs c's session until it must wait: for its socket to become
// readable or writable, or for a paused command to complete. While the
// socket takes no more output, the session goes on running what it has
// read, and the loop waits for the socket to become writable as well as
// for what the session asks.
func (l *evloop) advance(c *loopConn) {
	s := c.s
	for {
		now := time.Now()
		s.run(now)
		switch s.next(now) {
		case stepWrite:
			switch err := l.send(c); err {
			case nil:
			case syscall.EAGAIN:
				s.waitSending(time.Now()) // not now: the batch may have run long
			default:
				s.fail(err)
			}
		case stepClose:
			l.end(c)
			return
		case stepWait:
			l.watch(c, c.unsent())
			return
		case stepRead:
			l.watch(c, syscall.EPOLLIN|c.unsent())
			return
		}
	}
}

// maxDrainReads bounds the reads of one drain: 16 MiB.
const maxDrainReads = 256

// drain reads and drops what else has arrived from a client whose session
// drops what it reads: its connection ends once its replies are sent. It
// reads 64 KiB at a time until nothing more has arrived, not a request
// buffer's room per event, so that the client's bytes are gone before
// its last replies are, as from Redis, which reads on into its query
// buffer: left unread, they make the close reset the connection, which
// drops the replies still on their way. An end of stream or an error is
// left for the next read, which finds it again.
func (l *evloop) drain(c *loopConn) {
	if l.drained == nil {
		l.drained = make([]byte, 64<<10)
	}
	for range maxDrainReads {
		if n, _ := syscall.Read(c.fd, l.drained); n <= 0 {
			return
		}
	}
}

// unsent is EPOLLOUT if output waits for c's socket to take it, else 0.
func (c *loopConn) unsent() uint32 {
	if len(c.s.output()) > 0 {
		return syscall.EPOLLOUT
	}
	return 0
}

// send writes what c's session has ready; EAGAIN when the socket cannot
// take it all now.
func (l *evloop) send(c *loopConn) error {
	for {
		b := c.s.output()
		if len(b) == 0 {
			return nil
		}
		n, err := l.write(c.fd, b)
		if n > 0 {
			c.s.sent(n)
		}
		if err != nil && err != syscall.EINTR {
			return err
		}
	}
}

// watch makes the loop wait for c's socket to become readable (EPOLLIN),
// writable (EPOLLOUT) or either, or for nothing but a hang-up (0). If it
// cannot, the session fails and the next advance ends it.
func (l *evloop) watch(c *loopConn, interest uint32) {
	if c.interest == interest || c.fd < 0 {
		return
	}
	c.interest = interest
	ev := syscall.EpollEvent{Events: interest, Fd: int32(c.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		c.s.fail(fmt.Errorf("epoll_ctl: %w", err))
		l.end(c)
	}
}

// end closes c's descriptor, which takes it out of the epoll set, and
// unregisters the connection.
func (l *evloop) end(c *loopConn) {
	fd := c.fd
	if fd < 0 {
		return // ended already
	}
	err := c.s.finish() // from now on no other goroutine uses the descriptor
	_ = syscall.Close(fd)
	c.fd = -1
	l.conns[fd] = nil
	l.count--
	c.s.srv.closed(c.s, err)
}
