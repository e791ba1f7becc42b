package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/cellserver/cellserver/commands"
	"github.com/tidwall/redcon"
)

// maxNameInError is how much of a command name an error reply repeats.
const maxNameInError = 128

// conn is one client connection: its state, its reply writer and the
// snapshot of its state that other goroutines read.
type conn struct {
	srv    *Server
	guard  *guardConn
	client *commands.Client // used by the connection's goroutine only
	w      replyWriter
	quit   bool // QUIT ran: the rest of the batch is dropped

	mu   sync.Mutex // guards snap
	snap commands.ClientInfo
}

// accept is redcon's accept callback: it registers the new connection, or
// refuses it while shutting down or at MaxClients.
func (s *Server) accept(rc redcon.Conn) bool {
	g, ok := rc.NetConn().(*guardConn)
	if !ok { // cannot happen: every connection comes from guardListener
		return false
	}
	now := s.cfg.Now()
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return false
	}
	if len(s.conns) >= s.cfg.MaxClients {
		s.rejected++
		s.mu.Unlock()
		rc.WriteError("ERR max number of clients reached") // flushed as redcon closes
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("server: connection rejected: max number of clients reached", "addr", rc.RemoteAddr())
		}
		return false
	}
	if s.cfg.ProtectedMode && !s.cfg.PasswordSet && protectedModeDenies(s.ln.Addr(), g.RemoteAddr()) {
		s.rejected++
		s.mu.Unlock()
		rc.WriteError(msgDenied) // flushed as redcon closes
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("server: connection rejected: protected mode", "addr", rc.RemoteAddr())
		}
		return false
	}
	id := s.nextID.Add(1)
	client := commands.NewClient(id, rc.RemoteAddr(), g.LocalAddr().String(), now)
	c := &conn{srv: s, guard: g, client: client}
	if auth, ok := s.cfg.Handler.(Authenticator); ok {
		g.authRequired = func() bool { return auth.AuthRequired(client) }
	}
	c.w = replyWriter{out: redcon.BaseWriter(rc), client: client}
	c.snap = commands.ClientInfo{Client: *client}
	s.conns[c] = struct{}{}
	s.total++
	s.mu.Unlock()

	rc.SetContext(c)
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("server: connection accepted", "id", id, "addr", client.Addr)
	}
	return true
}

// closed is redcon's callback for a connection that has ended.
func (s *Server) closed(rc redcon.Conn, err error) {
	c, ok := rc.Context().(*conn)
	if !ok {
		return
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.checkDrainedLocked()
	s.mu.Unlock()
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		if err != nil {
			s.log.Debug("server: connection closed", "id", c.client.ID, "addr", c.client.Addr, "err", err)
		} else {
			s.log.Debug("server: connection closed", "id", c.client.ID, "addr", c.client.Addr)
		}
	}
}

// serveCommand is redcon's handler: it runs one command of a batch.
func (s *Server) serveCommand(rc redcon.Conn, cmd redcon.Command) {
	c, ok := rc.Context().(*conn)
	if !ok || c.quit {
		return
	}
	c.run(cmd.Args)
	c.publish()
	if c.client.Close {
		// QUIT: its reply is flushed, the rest of the batch dropped.
		c.quit = true
		rc.ReadPipeline()
		_ = rc.Close()
	}
}

// run dispatches one command, recovering from a panic in it.
func (c *conn) run(args [][]byte) {
	c.w.begin()
	defer func() {
		if p := recover(); p != nil {
			c.recovered(p, args)
		}
	}()
	c.srv.cfg.Handler.Dispatch(&c.w, c.client, args)
}

// recovered handles a panic in a command: it logs it with its stack, takes
// back the partial reply and answers with an error instead.
func (c *conn) recovered(p any, args [][]byte) {
	name := commandName(args)
	c.srv.log.Error("server: command panicked; the client got an error and the server keeps serving",
		"cmd", name, "id", c.client.ID, "addr", c.client.Addr,
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	c.w.discard()
	c.w.WriteError(fmt.Sprintf(commands.MsgInternal, name))
}

// commandName is the lower-case command name in args, cut to a length fit
// for an error reply.
func commandName(args [][]byte) string {
	if len(args) == 0 {
		return ""
	}
	name := args[0]
	if len(name) > maxNameInError {
		name = name[:maxNameInError]
	}
	return strings.ToLower(string(name))
}

// publish copies the client's state for Host.Clients.
func (c *conn) publish() {
	c.mu.Lock()
	c.snap.Client = *c.client
	c.mu.Unlock()
}

// info returns the last published copy of the client's state.
func (c *conn) info() commands.ClientInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}
