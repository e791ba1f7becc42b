package server

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// aLongTimeAgo is a deadline in the past: setting it makes a blocked Read
// return at once.
var aLongTimeAgo = time.Unix(1, 0)

// goDriver runs a session on a goroutine of its own, with blocking reads
// on its socket: TLS connections, systems without event loops, and
// Config.EventLoops 0 or less. It writes what the socket takes at once
// itself (writeNow), and hands the rest to a second goroutine, which serve
// starts and stops: while the socket takes no more output, serve goes on
// reading and running requests, up to maxUnsent bytes of replies waiting,
// as an event loop does, so that a client that writes its whole pipeline
// before it reads (go-redis's Pipeline) is not left blocked in its write
// while the server blocks in its own.
type goDriver struct {
	s      *session
	nc     net.Conn        // with TLS, the *tls.Conn: the bytes here are decrypted
	sock   syscall.RawConn // the socket under nc (under TLS too), for writeNow, discard and drain; nil if none
	woken  chan struct{}   // a paused command completed, a line was pushed, a write ended, or the session closed
	writes chan []byte     // to the writer goroutine: output to send
	stop   sync.WaitGroup  // the writer goroutine

	mu          sync.Mutex // guards the fields below
	reading     bool       // serve is in (or about to enter) a Read of the socket
	interrupted bool       // wake cut that Read short with aLongTimeAgo
	deadline    bool       // the socket has a read deadline set, to clear before a Read without one
	writing     bool       // a write is handed to the writer, its end not yet taken by serve; set by serve only
	inFlight    int        // its length, with what writeNow sent of it first
	before      int        // what writeNow sent of it
	wrote       bool       // it has ended: n bytes went, err if it failed
	n           int
	err         error
	// waitsForWrite: serve waits (for a wake-up, or for bytes with more
	// output ready than the write in flight), so the write's end must wake
	// it.
	waitsForWrite bool

	// writeDeadline: the socket has a write deadline set; the goroutine
	// writing (serve's in writeNow, the writer's while handed a write).
	writeDeadline bool

	raw rawSocket // for writeNow, roomFor, discard and drain, where the system has it; serve's goroutine only
}

func newGoDriver(nc net.Conn) *goDriver {
	return &goDriver{nc: nc, sock: socketFor(nc), woken: make(chan struct{}, 1), writes: make(chan []byte, 1)}
}

// wake also cuts short a Read the driver is blocked in, which a pushed
// line (MONITOR), Shutdown or the end of a write serve waits for can
// find: a paused command is waited for without reading.
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

// ready implements driver: output the socket took that serve has yet to
// take note of, while a paused command elsewhere cannot hold it (the
// goroutine's own command is the only one that holds it, and while that
// runs the session neither waits for bytes nor for the socket). The
// goroutine reads bytes as they arrive, and the writer bounds its writes
// with a deadline of its own.
func (d *goDriver) ready(_, output bool) bool {
	if !output {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wrote && d.err == nil
}

// serve runs the session until it ends. Each read from the socket brings a
// batch of requests, run at once, their replies sent as one write: what
// the socket takes at once by serve, the rest by the writer goroutine.
// While a write is under way serve reads on, up to maxUnsent bytes of
// replies waiting (session.next); while a command is paused it does not
// read: it waits for the command to complete.
func (d *goDriver) serve() {
	s := d.s
	var err error
	d.stop.Add(1)
	go d.writeLoop()
	defer func() {
		if p := recover(); p != nil { // a bug here must not take the server down
			s.fail(s.panicked(p))
		}
		d.drain()        // what the client sent last, which would make the close reset the connection
		_ = d.nc.Close() // ends a write under way
		close(d.writes)
		d.stop.Wait()
		err = s.finish()
		s.srv.closed(s, err)
	}()
	for {
		d.takeWrite()
		now := time.Now()
		s.run(now)
		switch s.next(now) {
		case stepWrite:
			b := s.output()
			n, err := d.writeNow(b)
			switch {
			case err != nil:
				s.sent(n)
				s.fail(err)
			case n == len(b):
				s.sent(n)
			default:
				d.startWrite(b, n, time.Now()) // not the batch's start: it may have run long
			}
		case stepClose:
			return
		case stepWait:
			d.waitWoken()
		case stepRead:
			if s.pending() {
				d.waitWoken()
				continue
			}
			if n, err := d.read(); err != errWoken {
				s.received(n, err)
				if d.writing {
					s.waitSending(time.Now()) // the write under way is the try again received asks for
				}
			}
		}
	}
}

// startWrite hands b, the output ready, but for the n bytes of it that
// writeNow sent, to the writer goroutine, which is idle: until takeWrite
// finds the write ended, the session counts the socket as taking no more
// (waitSending), and goes on reading and running. The bytes sent are only
// told to the session then: telling it moves the bytes still to send.
func (d *goDriver) startWrite(b []byte, n int, now time.Time) {
	d.mu.Lock()
	d.writing, d.inFlight, d.before = true, len(b), n
	d.mu.Unlock()
	d.raw.forget()
	d.s.waitSending(now)
	d.writes <- b[n:]
}

// takeWrite tells the session how the write handed to the writer ended,
// if it has.
func (d *goDriver) takeWrite() {
	d.mu.Lock()
	if !d.wrote {
		d.mu.Unlock()
		return
	}
	n, err := d.before+d.n, d.err
	d.writing, d.wrote, d.waitsForWrite, d.n, d.err = false, false, false, 0, nil
	d.mu.Unlock()
	d.s.sent(n)
	if err != nil {
		d.s.fail(err)
		return
	}
	d.s.writable()
}

// waitWoken waits for a wake-up, which the end of a write under way sends
// too; it returns at once if that write has ended already.
func (d *goDriver) waitWoken() {
	d.mu.Lock()
	ended := d.wrote
	d.waitsForWrite = d.writing
	d.mu.Unlock()
	if !ended {
		<-d.woken
	}
}

// writeLoop is the writer goroutine: it sends each output handed to it
// and records how that went. It wakes serve when serve waits for it, when
// the write failed, and, with an idle timeout, always, so that the read
// that follows counts the client idle from its last reply as Redis does;
// otherwise a reply's end needs no wake-up, and serve, blocked reading the
// client's next request, takes note of it when that comes.
func (d *goDriver) writeLoop() {
	defer d.stop.Done()
	for b := range d.writes {
		n, err := d.writeSafely(b)
		d.mu.Lock()
		d.wrote, d.n, d.err = true, n, err
		wake := err != nil || d.waitsForWrite || d.s.idleTimeout > 0 // idleTimeout is set once, at the start
		d.mu.Unlock()
		if wake {
			d.wake()
		}
	}
}

// writeSafely is write, with a panic its error: a bug here must not take
// the server down.
func (d *goDriver) writeSafely(b []byte) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = d.s.panicked(p)
		}
	}()
	return d.write(b)
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
	// The write under way must wake serve when it ends if more output
	// waits behind it, or something else waits for it to be sent.
	unsent := len(s.output())
	ending, pushed := s.afterSending()
	d.mu.Lock()
	select {
	case <-d.woken:
		d.mu.Unlock()
		return 0, errWoken
	default:
	}
	d.waitsForWrite = d.writing && (unsent > d.inFlight || ending || pushed)
	if d.waitsForWrite && d.wrote {
		d.mu.Unlock()
		return 0, errWoken // take note of it first
	}
	d.reading = true
	if !dl.IsZero() || d.deadline {
		_ = d.nc.SetReadDeadline(dl) // the zero time for none, clearing an interruption's
		d.deadline = !dl.IsZero()
	}
	d.mu.Unlock()

	if ending && d.sock != nil {
		n, err = d.discard() // nothing read is used any more
	} else {
		n, err = d.nc.Read(s.room())
	}

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
