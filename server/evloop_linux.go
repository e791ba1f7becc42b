//go:build linux

package server

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// haveEventLoops reports whether this system has event loops.
const haveEventLoops = true

// maxEvents is how many ready sockets one epoll_wait reports at most.
const maxEvents = 256

// loopGroup is the server's event loops, with the goroutine that closes
// their idle connections when Config.IdleTimeout is set.
type loopGroup struct {
	loops   []*evloop
	next    int // the loop the next connection goes to; Serve's goroutine only
	once    sync.Once
	running sync.WaitGroup // every loop
	// loopsEnded is closed once every loop has ended, which ends the idle
	// checker: while Shutdown waits for a connection, its timeout holds.
	loopsEnded chan struct{}
	ended      chan struct{} // closed once the loops and the idle checker have ended
}

// evloop is one event loop: a goroutine that owns an epoll instance and
// the connections registered in it. Level-triggered, as Redis's: a
// readable socket is read once, the requests run and the replies are
// written at once; what the socket cannot take waits for it to become
// writable, and the connection is read and its requests run meanwhile,
// their replies kept, until more than maxUnsent bytes wait; once it is to
// end (QUIT, a protocol error, Shutdown), what it reads is dropped.
type evloop struct {
	srv   *Server
	loops int // the group's, for wait
	epfd  int
	wakeR int // a pipe whose read end is in the epoll set: a byte written
	wakeW int // to wakeW wakes epoll_wait

	write func(fd int, p []byte) (int, error) // write(2) or Server.writeSocket

	mu       sync.Mutex  // guards the fields below, and writes to wakeW
	pending  []*loopConn // handed over, not yet in the epoll set
	woken    []*loopConn // a paused command of theirs completed, or they closed
	spare    []*loopConn // the list adopt ran last, emptied, for woken's next turn
	stopping bool
	fdsShut  bool // epfd and the pipe are closed: wakeW's number may be reused

	// The loop's goroutine only.
	conns   []*loopConn // by descriptor
	count   int         // connections in conns
	events  [maxEvents]syscall.EpollEvent
	drained []byte // drain's buffer, made by the first drain

	// holdP: the server lets the loop wait keeping its P
	// (Config.LoopsHoldP); hold: the next wait keeps it (wait); born is
	// the origin of yielded, when the loop last yielded its P before a
	// held wait.
	holdP, hold bool
	born        time.Time
	yielded     time.Duration
	// heldWaits counts the waits that kept the loop's P, heldEmpty those
	// of them that ended with nothing (wait).
	heldWaits, heldEmpty atomic.Int64
}

// newLoopGroup starts n event loops for s.
func newLoopGroup(s *Server, n int) (*loopGroup, error) {
	g := &loopGroup{loopsEnded: make(chan struct{}), ended: make(chan struct{})}
	for range n {
		l, err := newEvloop(s, n)
		if err != nil {
			for _, l := range g.loops {
				l.closeFDs()
			}
			return nil, err
		}
		g.loops = append(g.loops, l)
	}
	for _, l := range g.loops {
		g.running.Add(1)
		go func() {
			defer g.running.Done()
			l.run()
		}()
	}
	checked := make(chan struct{}) // closed once the idle checker, if any, has ended
	if s.cfg.IdleTimeout > 0 {
		go func() {
			defer close(checked)
			g.closeIdle(s)
		}()
	} else {
		close(checked)
	}
	go func() { // ends with the loops, which stop ends, and then the checker
		g.running.Wait()
		close(g.loopsEnded)
		<-checked
		close(g.ended)
	}()
	return g, nil
}

// newEvloop creates a loop's epoll instance and wake-up pipe.
func newEvloop(s *Server, loops int) (*evloop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		_ = syscall.Close(epfd)
		return nil, fmt.Errorf("pipe2: %w", err)
	}
	l := &evloop{srv: s, loops: loops, holdP: s.cfg.LoopsHoldP, born: time.Now(), epfd: epfd, wakeR: p[0], wakeW: p[1], write: syscall.Write}
	if s.writeSocket != nil {
		l.write = s.writeSocket
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wakeR)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wakeR, &ev); err != nil {
		l.closeFDs()
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	return l, nil
}

// closeFDs closes the loop's epoll instance and pipe.
func (l *evloop) closeFDs() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fdsShut = true
	_ = syscall.Close(l.epfd)
	_ = syscall.Close(l.wakeR)
	_ = syscall.Close(l.wakeW)
}

// take hands the session s of nc, just accepted, to a loop. It returns
// false if s is to be served by a goroutine instead: its socket is not a
// plain one, or it cannot be duplicated, or the loops have stopped, or s
// was closed meanwhile. The loop serves a duplicate of the socket's
// descriptor, and nc is closed, so that Go's poller no longer watches it.
func (g *loopGroup) take(nc net.Conn, s *session) bool {
	if g == nil {
		return false
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	l := g.loops[g.next%len(g.loops)]
	g.next++

	fd, err := dupFD(rc)
	if err != nil {
		return false
	}
	c := &loopConn{s: s, l: l, fd: fd, sock: fd, interest: syscall.EPOLLIN}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping || !s.setDriver(c) {
		_ = syscall.Close(fd)
		return false
	}
	_ = nc.Close() // the duplicate keeps the socket open
	l.pending = append(l.pending, c)
	l.wakeLocked()
	return true
}

// dupFD duplicates the socket's descriptor, close-on-exec; it shares the
// socket's flags, non-blocking among them.
func dupFD(rc syscall.RawConn) (int, error) {
	nfd, derr := -1, error(nil)
	err := rc.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			derr = e
			return
		}
		nfd = int(r)
	})
	if err == nil {
		err = derr
	}
	return nfd, err
}

// stop makes every loop end once its connections are gone, and the idle
// checker with them. Connections handed over afterwards get goroutines.
func (g *loopGroup) stop() {
	if g == nil {
		return
	}
	g.once.Do(func() {
		for _, l := range g.loops {
			l.mu.Lock()
			l.stopping = true
			l.wakeLocked()
			l.mu.Unlock()
		}
	})
}

// wait waits until every loop's goroutine has ended, or ctx has.
func (g *loopGroup) wait(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case <-g.ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wakeLocked makes the loop's epoll_wait return; l.mu is held, so that the
// pipe cannot be closed meanwhile (its number could then belong to another
// file, which would get the byte).
func (l *evloop) wakeLocked() {
	if !l.fdsShut {
		_, _ = syscall.Write(l.wakeW, []byte{1}) // a full pipe is a wake-up already pending
	}
}

// run is the loop's goroutine: it serves its connections until it is
// stopped and has none left.
func (l *evloop) run() {
	defer l.closeFDs()
	stopping := false
	for !stopping || l.count > 0 {
		n, err := l.wait()
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			l.srv.log.Error("server: epoll_wait failed; the event loop closes its connections", "err", err)
			l.closeAll(err)
			return
		}
		for i := range n {
			ev := &l.events[i]
			fd := int(ev.Fd)
			if fd == l.wakeR {
				stopping = l.adopt()
				continue
			}
			if fd < len(l.conns) && l.conns[fd] != nil {
				l.serve(l.conns[fd], ev.Events)
			}
		}
	}
}

// adopt registers the connections handed over since the last call, runs
// those woken, and reports whether the loop is stopping.
func (l *evloop) adopt() bool {
	var b [64]byte
	for {
		if n, _ := syscall.Read(l.wakeR, b[:]); n < len(b) {
			break
		}
	}
	l.mu.Lock()
	pending, woken, stopping := l.pending, l.woken, l.stopping
	l.pending, l.woken = nil, l.spare[:0]
	for _, c := range woken {
		c.queued = false // a wake from now on queues it again
	}
	l.mu.Unlock()
	for _, c := range pending {
		fd := c.fd
		for fd >= len(l.conns) {
			l.conns = append(l.conns, make([]*loopConn, len(l.conns)+64)...)
		}
		l.conns[fd] = c
		l.count++
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			c.s.fail(fmt.Errorf("epoll_ctl: %w", err))
			l.end(c)
			continue
		}
		l.advance(c) // it waits for bytes from now on: idle, as far as Shutdown is concerned
	}
	for i, c := range woken {
		woken[i] = nil
		if c.fd >= 0 { // not ended meanwhile
			l.serveSafely(c)
		}
	}
	l.mu.Lock()
	l.spare = woken[:0] // the two lists take turns: no allocation per wake-up
	l.mu.Unlock()
	return stopping
}

// closeAll ends every connection of the loop with err.
func (l *evloop) closeAll(err error) {
	l.mu.Lock()
	l.stopping = true // connections accepted from now on get goroutines
	l.mu.Unlock()
	l.adopt()
	for _, c := range l.conns {
		if c != nil {
			c.s.fail(err)
			l.end(c)
		}
	}
}

// closeIdle closes connections idle for Config.IdleTimeout, checking
// several times per timeout, until the loops have ended. It runs off the
// loops, so that it closes them even while a long command holds their
// loop, but not one whose bytes or room for output wait for the loop
// (session.expireIdle); a connection on a goroutine gets the same from its
// read deadline.
func (g *loopGroup) closeIdle(s *Server) {
	timeout := s.cfg.IdleTimeout
	t := time.NewTicker(min(max(timeout/10, 10*time.Millisecond), time.Second))
	defer t.Stop()
	for {
		select {
		case <-g.loopsEnded:
			return
		case now := <-t.C:
			for _, c := range s.connList() {
				c.expireIdle(now)
			}
		}
	}
}
