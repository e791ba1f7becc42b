package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
)

// ErrServerClosed is returned by Serve and ListenAndServe after Shutdown or
// Close.
var ErrServerClosed = errors.New("server: closed")

// errAlreadyServing is returned by a second Serve.
var errAlreadyServing = errors.New("server: already serving")

// Server serves the Redis protocol on one listener. Create it with New; it
// implements commands.Host.
type Server struct {
	cfg    Config // defaults filled in
	log    *slog.Logger
	lim    limits
	nextID atomic.Int64 // the last client id given out

	// writeSocket, if set before Serve, is what the event loops call for
	// write(2); the server's tests count the replies' writes with it.
	writeSocket func(fd int, p []byte) (int, error)
	// pushLimit, if set before Serve, replaces maxPushBacklog; the tests'
	// slow monitors pass a small one.
	pushLimit int
	// unsentLimit, if set before Serve, replaces maxUnsent; the tests'
	// clients that read nothing pass a small one.
	unsentLimit int
	// unsentFull, if set before Serve, is called on a connection's driver
	// each time the connection stops being read because more than its
	// unsent limit of replies wait for its socket, with those bytes and the
	// capacity of the buffer that holds them. It must not block.
	unsentFull func(unsent, capacity int)

	mu        sync.Mutex // guards the fields below
	ln        *listener
	loops     *loopGroup // nil when every connection has a goroutine
	shutdown  bool       // Shutdown or Close has been called
	conns     map[*session]struct{}
	total     int64         // connections accepted
	rejected  int64         // connections refused for MaxClients or protected mode
	drained   chan struct{} // closed once shutdown is set and conns is empty
	isDrained bool
}

// New returns a server configured by cfg. It panics if cfg.Handler is nil.
func New(cfg Config) *Server {
	if cfg.Handler == nil {
		panic("server: Config.Handler is nil")
	}
	cfg = cfg.withDefaults()
	return &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		lim:     cfg.limits(),
		conns:   make(map[*session]struct{}),
		drained: make(chan struct{}),
	}
}

// pushBacklog is how many pushed bytes may wait for a slow client.
func (s *Server) pushBacklog() int {
	if s.pushLimit > 0 {
		return s.pushLimit
	}
	return maxPushBacklog
}

// unsentBacklog is how many reply bytes may wait for a client's socket
// while the client's requests are still read.
func (s *Server) unsentBacklog() int {
	if s.unsentLimit > 0 {
		return s.unsentLimit
	}
	return maxUnsent
}

// ListenAndServe listens on Config.Addr over TCP and serves. It returns
// ErrServerClosed after Shutdown or Close, or the error that stopped it.
func (s *Server) ListenAndServe() error {
	s.mu.Lock()
	shut := s.shutdown
	s.mu.Unlock()
	if shut {
		return ErrServerClosed
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln, serving them on event loops (see
// Config.EventLoops) or each on its own goroutine, until
// Shutdown or Close, after which it returns ErrServerClosed; it closes ln.
// It returns another error only if ln fails, after closing every
// connection. A Server serves one listener:
// a second Serve fails.
func (s *Server) Serve(ln net.Listener) error {
	l := newListener(ln, s.cfg, s.log)
	s.mu.Lock()
	switch {
	case s.shutdown:
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	case s.ln != nil:
		s.mu.Unlock()
		return errAlreadyServing
	}
	s.ln = l
	if n := s.eventLoops(); n > 0 {
		loops, err := newLoopGroup(s, n)
		if err != nil {
			s.log.Error("server: no event loops; every connection gets a goroutine", "err", err)
		}
		s.loops = loops
	}
	loops := s.loops
	l.start()
	s.mu.Unlock()

	for {
		nc, err := l.next()
		if err == nil {
			s.serveConn(nc, loops)
			continue
		}
		if errors.Is(err, errStopped) {
			return ErrServerClosed // Shutdown or Close stopped accepting
		}
		// The listener failed: serving ends, and so do the connections.
		_ = l.stopAccepting()
		l.waitHandshakes()
		loops.stop()
		for _, c := range s.connList() {
			c.close()
		}
		return err
	}
}

// Addr returns the address the server listens on, or nil before Serve or
// ListenAndServe has started.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops the server gracefully: it stops accepting, closes idle
// connections, lets every connection finish the batch of commands it is
// running, wait for its paused commands to complete and send its replies,
// closes it, and returns once all
// connections are closed. If ctx ends first, Shutdown closes the remaining
// connections at once and returns ctx.Err(); a handler still running then
// finishes on its own. Serve returns ErrServerClosed.
func (s *Server) Shutdown(ctx context.Context) error {
	conns, loops, err := s.beginShutdown()
	for _, c := range conns {
		c.shutdown()
	}
	select {
	case <-s.drained:
		if lerr := loops.wait(ctx); lerr != nil {
			err = lerr
		}
	case <-ctx.Done():
		for _, c := range s.connList() {
			c.close()
		}
		err = ctx.Err()
	}
	return err
}

// Close stops the server at once: it stops accepting and closes every
// connection, dropping replies not yet sent and paused commands (their
// completions, when they come, are dropped too). It returns once every
// connection's driver has let go of it, which waits for handlers that are
// running. Serve returns ErrServerClosed.
func (s *Server) Close() error {
	conns, loops, err := s.beginShutdown()
	for _, c := range conns {
		c.close()
	}
	<-s.drained
	_ = loops.wait(context.Background())
	return err
}

// beginShutdown marks the server as shutting down, tells its event loops
// to end once their connections have, stops accepting and waits for the
// TLS handshakes under way, and returns its connections, its loops and the
// listener's error.
func (s *Server) beginShutdown() ([]*session, *loopGroup, error) {
	s.mu.Lock()
	s.shutdown = true
	s.checkDrainedLocked()
	ln, conns, loops := s.ln, s.connListLocked(), s.loops
	s.mu.Unlock()
	loops.stop()
	var err error
	if ln != nil {
		err = ln.stopAccepting()
		ln.waitHandshakes()
	}
	return conns, loops, err
}

// checkDrainedLocked closes s.drained once the server is shutting down and
// has no connections left. s.mu is held.
func (s *Server) checkDrainedLocked() {
	if s.shutdown && len(s.conns) == 0 && !s.isDrained {
		s.isDrained = true
		close(s.drained)
	}
}

// connList returns the open connections.
func (s *Server) connList() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connListLocked()
}

// connListLocked returns the open connections. s.mu is held.
func (s *Server) connListLocked() []*session {
	conns := make([]*session, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}
