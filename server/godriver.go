package server

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"time"
)

// goDriver runs a session on a goroutine of its own, with blocking reads
// and writes on its socket: TLS connections, systems without event loops,
// and Config.EventLoops 0 or less.
type goDriver struct {
	s     *session
	nc    net.Conn      // with TLS, the *tls.Conn: the bytes here are decrypted
	woken chan struct{} // a paused command completed, or the session closed
}

func newGoDriver(nc net.Conn) *goDriver {
	return &goDriver{nc: nc, woken: make(chan struct{}, 1)}
}

func (d *goDriver) wake() {
	select {
	case d.woken <- struct{}{}:
	default: // a wake-up is pending already
	}
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
			n, err := d.nc.Write(s.output())
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
			// Redis's timeout counts from the client's last bytes: any
			// read restarts it.
			dl := s.idleDeadline()
			if !dl.IsZero() {
				_ = d.nc.SetReadDeadline(dl)
			}
			n, err := d.nc.Read(s.room())
			if !dl.IsZero() && errors.Is(err, os.ErrDeadlineExceeded) {
				err = errIdleTimeout
			}
			s.received(n, err)
		}
	}
}
