package server

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// errStopped is acceptRaw's report that the server stopped accepting.
var errStopped = errors.New("server: stopped accepting")

// listener hands Serve's accept loop new connections, retrying failed
// accepts with a backoff instead of spinning. With TLS, it runs the
// handshakes on goroutines of their own and hands over only connections
// whose handshake succeeded, so the accept loop never waits on a client.
type listener struct {
	net.Listener
	log *slog.Logger

	stop      chan struct{} // closed when the server stops accepting
	stopOnce  sync.Once
	closeErr  error // from closing the listener, set under stopOnce
	failedMu  sync.Mutex
	failedErr error // the accept error that ended serving, if not a shutdown

	// TLS only: the handshakes.
	tls        *tls.Config           // nil for plain TCP
	hsTimeout  time.Duration         // Config.TLSHandshakeTimeout
	hsSlots    chan struct{}         // one token per handshake in progress
	handshaken chan net.Conn         // connections ready for next
	acceptEnd  chan struct{}         // closed when acceptTLS's loop ends
	hsWG       sync.WaitGroup        // acceptTLS and every handshake
	hsMu       sync.Mutex            // guards hsConns, hsStopped
	hsConns    map[net.Conn]struct{} // connections handshaking, closed at stop
	hsStopped  bool
}

// newListener wraps ln; cfg has its defaults filled in.
func newListener(ln net.Listener, cfg Config, log *slog.Logger) *listener {
	l := &listener{Listener: ln, log: log, stop: make(chan struct{})}
	if cfg.TLS != nil {
		l.tls = cfg.TLS
		l.hsTimeout = cfg.TLSHandshakeTimeout
		l.hsSlots = make(chan struct{}, cfg.MaxClients)
		l.handshaken = make(chan net.Conn)
		l.acceptEnd = make(chan struct{})
		l.hsConns = make(map[net.Conn]struct{})
	}
	return l
}

// start starts the TLS accept loop, if any. Serve calls it once, before
// Shutdown or Close can wait for it.
func (l *listener) start() {
	if l.tls != nil {
		l.hsWG.Add(1)
		go l.acceptTLS()
	}
}

// next returns the next connection (handshaken, with TLS), errStopped
// once the server stops accepting, or the error that ends serving.
func (l *listener) next() (net.Conn, error) {
	if l.tls != nil {
		return l.nextHandshaken()
	}
	return l.acceptRaw()
}

// acceptRaw returns the next connection from the socket, or errStopped once
// the server stops accepting, or the error that ends serving.
func (l *listener) acceptRaw() (net.Conn, error) {
	var delay time.Duration
	for {
		nc, err := l.Listener.Accept()
		if err == nil {
			return nc, nil
		}
		select {
		case <-l.stop:
			return nil, errStopped
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			l.failedMu.Lock()
			l.failedErr = err
			l.failedMu.Unlock()
			return nil, err
		}
		// Like net/http: out of file descriptors and the like pass.
		delay = min(max(2*delay, 5*time.Millisecond), time.Second)
		l.log.Error("server: accept failed; retrying", "err", err, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.stop:
			t.Stop()
		}
	}
}

// stopAccepting closes the listener once, and every connection still
// handshaking; next then reports errStopped.
func (l *listener) stopAccepting() error {
	l.stopOnce.Do(func() {
		close(l.stop)
		l.closeErr = l.Listener.Close()
		if l.tls != nil {
			l.hsMu.Lock()
			l.hsStopped = true
			for nc := range l.hsConns {
				_ = nc.Close()
			}
			l.hsMu.Unlock()
		}
	})
	return l.closeErr
}

// waitHandshakes waits until the TLS accept loop and every handshake have
// ended; call it after stopAccepting.
func (l *listener) waitHandshakes() {
	l.hsWG.Wait()
}

// failed returns the accept error that ended serving without a shutdown.
func (l *listener) failed() error {
	l.failedMu.Lock()
	defer l.failedMu.Unlock()
	return l.failedErr
}

// nextHandshaken returns the next connection whose TLS handshake
// succeeded, or errStopped, or the error that ended accepting.
func (l *listener) nextHandshaken() (net.Conn, error) {
	select {
	case nc := <-l.handshaken:
		return nc, nil
	case <-l.stop:
		return nil, errStopped
	case <-l.acceptEnd:
		select {
		case <-l.stop:
			return nil, errStopped
		default:
			return nil, l.failed()
		}
	}
}

// acceptTLS accepts connections and starts a handshake for each, at most
// cap(hsSlots) at once: beyond that, it waits for one to end, leaving new
// clients in the kernel's backlog.
func (l *listener) acceptTLS() {
	defer l.hsWG.Done()
	defer close(l.acceptEnd)
	for {
		nc, err := l.acceptRaw()
		if err != nil {
			return
		}
		select {
		case l.hsSlots <- struct{}{}:
		case <-l.stop:
			_ = nc.Close()
			return
		}
		l.hsMu.Lock()
		if l.hsStopped {
			l.hsMu.Unlock()
			_ = nc.Close()
			<-l.hsSlots
			return
		}
		l.hsConns[nc] = struct{}{}
		l.hsWG.Add(1)
		l.hsMu.Unlock()
		go l.handshake(nc)
	}
}

// handshake runs one TLS handshake within hsTimeout and hands the
// connection to next, or closes it.
func (l *listener) handshake(nc net.Conn) {
	defer l.hsWG.Done()
	defer func() { <-l.hsSlots }()

	tc := tls.Server(nc, l.tls)
	_ = nc.SetDeadline(time.Now().Add(l.hsTimeout))
	err := tc.Handshake()
	if err == nil {
		err = nc.SetDeadline(time.Time{})
	}

	l.hsMu.Lock()
	delete(l.hsConns, nc)
	stopped := l.hsStopped
	l.hsMu.Unlock()
	switch {
	case stopped:
		_ = nc.Close()
		return
	case err != nil:
		l.log.Debug("server: TLS handshake failed", "addr", nc.RemoteAddr().String(), "err", err)
		_ = nc.Close()
		return
	}
	select {
	case l.handshaken <- tc:
	case <-l.stop:
		_ = nc.Close()
	}
}
