package server

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// guardListener hands redcon guarded connections, retries failed accepts
// with a backoff instead of letting redcon spin, and once the server stops
// accepting, holds redcon's accept loop until every connection is done:
// redcon closes all its connections when that loop ends, which would cut
// off the batches a graceful shutdown lets finish.
type guardListener struct {
	net.Listener
	lim limits
	log *slog.Logger

	stop      chan struct{} // closed when the server stops accepting
	release   chan struct{} // closed when Accept may report the end
	stopOnce  sync.Once
	closeErr  error // from closing the listener, set under stopOnce
	relOnce   sync.Once
	failedMu  sync.Mutex
	failedErr error // the accept error that ended serving, if not a shutdown
}

// newGuardListener wraps ln.
func newGuardListener(ln net.Listener, lim limits, log *slog.Logger) *guardListener {
	return &guardListener{
		Listener: ln, lim: lim, log: log,
		stop: make(chan struct{}), release: make(chan struct{}),
	}
}

// Accept returns the next connection, guarded.
func (l *guardListener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		nc, err := l.Listener.Accept()
		if err == nil {
			return newGuardConn(nc, l.lim), nil
		}
		select {
		case <-l.stop:
			<-l.release
			return nil, net.ErrClosed
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

// Close stops accepting; redcon calls it when its accept loop ends.
func (l *guardListener) Close() error {
	return l.stopAccepting()
}

// stopAccepting closes the listener once; Accept then waits for
// releaseAccept.
func (l *guardListener) stopAccepting() error {
	l.stopOnce.Do(func() {
		close(l.stop)
		l.closeErr = l.Listener.Close()
	})
	return l.closeErr
}

// releaseAccept lets a held Accept report the listener closed, which ends
// redcon's accept loop.
func (l *guardListener) releaseAccept() {
	l.relOnce.Do(func() { close(l.release) })
}

// failed returns the accept error that ended serving without a shutdown.
func (l *guardListener) failed() error {
	l.failedMu.Lock()
	defer l.failedMu.Unlock()
	return l.failedErr
}
