package server

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// aLongTimeAgo is a deadline in the past: setting it makes a blocked Read
// return at once.
var aLongTimeAgo = time.Unix(1, 0)

// goDriver runs a session on a goroutine of its own, with blocking reads
// and writes on its socket: TLS connections, systems without event loops,
// and Config.EventLoops 0 or less. While the socket takes no more output it
// blocks in the write and reads nothing, where an event loop reads on up to
// maxUnsent: that would take a second goroutine.
type goDriver struct {
	s     *session
	nc    net.Conn      // with TLS, the *tls.Conn: the bytes here are decrypted
	woken chan struct{} // a paused command completed, a line was pushed, or the session closed

	mu          sync.Mutex // guards reading, interrupted, deadline
	reading     bool       // serve is in (or about to enter) a Read of the socket
	interrupted bool       // wake cut that Read short with aLongTimeAgo
	deadline    bool       // the socket has a read deadline set, to clear before a Read without one

	writeDeadline bool // the socket has a write deadline set; serve's goroutine only
}

func newGoDriver(nc net.Conn) *goDriver {
	return &goDriver{nc: nc, woken: make(chan struct{}, 1)}
}

// wake also cuts short a Read the driver is blocked in, which only a
// pushed line (MONITOR) can find: a paused command is waited for without
// reading.
func (d *goDriver) wake() {
	select {
	case d.woken <- struct{}{}:
	default: // a wake-up is pending already
	}
	d.mu.Lock()
	if d.reading && !d.interrupted {
		d.interrupted, d.deadline = true, true
		_ = d.nc.SetReadDeadline(aLongTimeAgo)
	}
	d.mu.Unlock()
}

// shutSocket closes the socket. For TLS it closes the connection under
// it: tls.Conn's Close first sends a close_notify alert, which can block
// (for seconds, on a client that reads nothing) while the session's lock
// is held.
func (d *goDriver) shutSocket() {
	if tc, ok := d.nc.(*tls.Conn); ok {
		_ = tc.NetConn().Close()
		return
	}
	_ = d.nc.Close()
}

// ready implements driver: never, as the goroutine's own command is the
// only one that holds it, and while that runs the session neither waits
// for bytes nor for the socket to take output. The goroutine reads bytes
// as they arrive and bounds its writes with a deadline of its own.
func (d *goDriver) ready(bool, bool) bool { return false }

// serve runs the session until it ends. Each read from the socket brings a
// batch of requests, run at once, their replies sent with one write before
// the next read, as Redis does. While a command is paused it does not read:
// it waits for the command to complete.
func (d *goDriver) serve() {
	s := d.s
	var err error
	defer func() {
		if p := recover(); p != nil { // a bug here must not take the server down
			s.fail(s.panicked(p))
		}
		_ = d.nc.Close()
		err = s.finish()
		s.srv.closed(s, err)
	}()
	for {
		now := time.Now()
		s.run(now)
		switch s.next(now) {
		case stepWrite:
			n, err := d.write(s.output())
			s.sent(n)
			if err != nil {
				s.fail(err)
			}
		case stepClose:
			return
		case stepWait:
			<-d.woken
		case stepRead:
			if s.pending() {
				<-d.woken
				continue
			}
			if n, err := d.read(); err != errWoken {
				s.received(n, err)
			}
		}
	}
}

// tlsRecordLen is the most plaintext one TLS record carries.
const tlsRecordLen = 16 << 10

// write sends b, or its start. With an idle timeout, a client that takes
// none of it for that long is closed (errIdleTimeout), as Redis's timeout
// closes a client that neither sends nor reads; one that took some goes
// round again, its time counted anew. A TLS connection cannot go on after
// a write times out, so it is given a record at a time: a client is closed
// only if it takes less than a record for the whole timeout.
func (d *goDriver) write(b []byte) (int, error) {
	dl := d.s.sendDeadline()
	if !dl.IsZero() || d.writeDeadline {
		_ = d.nc.SetWriteDeadline(dl) // the zero time for none
		d.writeDeadline = !dl.IsZero()
	}
	if _, isTLS := d.nc.(*tls.Conn); isTLS && !dl.IsZero() && len(b) > tlsRecordLen {
		b = b[:tlsRecordLen]
	}
	n, err := d.nc.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if n > 0 {
			return n, nil
		}
		err = errIdleTimeout
	}
	return n, err
}

// errWoken is read's report that it read nothing because of a wake-up.
var errWoken = errors.New("server: woken before reading")

// read reads from the socket into the session's room, unless a wake-up is
// pending: then, or when wake cuts the Read short before any byte came, it
// returns errWoken and serve goes round again. A wake-up sent before the
// check is seen by it; one sent after it finds reading set and interrupts
// the Read.
func (d *goDriver) read() (n int, err error) {
	s := d.s
	// Redis's timeout counts from the client's last bytes: any read
	// restarts it.
	dl := s.idleDeadline()
	d.mu.Lock()
	select {
	case <-d.woken:
		d.mu.Unlock()
		return 0, errWoken
	default:
	}
	d.reading = true
	if !dl.IsZero() || d.deadline {
		_ = d.nc.SetReadDeadline(dl) // the zero time for none, clearing an interruption's
		d.deadline = !dl.IsZero()
	}
	d.mu.Unlock()

	n, err = d.nc.Read(s.room())

	d.mu.Lock()
	interrupted := d.interrupted
	d.reading, d.interrupted = false, false
	d.mu.Unlock()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		switch {
		case interrupted && n > 0:
			return n, nil
		case interrupted:
			return 0, errWoken
		}
		err = errIdleTimeout
	}
	return n, err
}
