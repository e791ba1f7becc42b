package server

import (
	"context"
	"log/slog"
	"net"

	"github.com/tidwall/redcon"
)

// serveConn registers a new connection's session and hands it to an event
// loop or starts a goroutine driving it, or refuses it while shutting down, at MaxClients
// or in protected mode.
func (s *Server) serveConn(nc net.Conn, loops *loopGroup) {
	d := newGoDriver(nc)
	if c := s.accept(nc, d); c != nil && !loops.take(nc, c) {
		d.s = c
		go d.serve()
	}
}

// accept registers the new connection, or refuses it: while shutting down
// it is closed, at MaxClients or in protected mode the client is told why
// first.
func (s *Server) accept(nc net.Conn, drv driver) *session {
	now := s.cfg.Now()
	addr := nc.RemoteAddr().String()
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		_ = nc.Close()
		return nil
	}
	if len(s.conns) >= s.cfg.MaxClients {
		s.rejected++
		s.mu.Unlock()
		s.refuse(nc, "ERR max number of clients reached", "max number of clients reached")
		return nil
	}
	if s.cfg.ProtectedMode && !s.cfg.PasswordSet && protectedModeDenies(s.ln.Addr(), nc.RemoteAddr()) {
		s.rejected++
		s.mu.Unlock()
		s.refuse(nc, msgDenied, "protected mode")
		return nil
	}
	id := s.nextID.Add(1)
	cs := s.cfg.Handler.NewSession(id, addr, nc.LocalAddr().String(), now)
	c := newSession(s, id, addr, cs, drv, now)
	s.conns[c] = struct{}{}
	s.total++
	s.mu.Unlock()

	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("server: connection accepted", "id", id, "addr", addr)
	}
	return c
}

// refuse answers a connection that is not let in with the error msg and
// closes it.
func (s *Server) refuse(nc net.Conn, msg, why string) {
	_, _ = nc.Write(redcon.AppendError(nil, msg)) // a fresh socket's buffer takes it at once
	_ = nc.Close()
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("server: connection rejected: "+why, "addr", nc.RemoteAddr().String())
	}
}

// closed unregisters a connection that has ended.
func (s *Server) closed(c *session, err error) {
	s.mu.Lock()
	delete(s.conns, c)
	s.checkDrainedLocked()
	s.mu.Unlock()
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		if err != nil {
			s.log.Debug("server: connection closed", "id", c.id, "addr", c.addr, "err", err)
		} else {
			s.log.Debug("server: connection closed", "id", c.id, "addr", c.addr)
		}
	}
}
