package server

import (
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/cellserver/cellserver/commands"
)

// maxNameInError is how much of a command name an error reply repeats.
const maxNameInError = 128

// maxBatchReply is how many reply bytes a batch may buffer before they are
// flushed in the middle of it, so that a pipeline of commands with big
// replies does not make the server hold all of them at once.
const maxBatchReply = 64 << 10

// publishEvery is how stale the LastActive that other clients see (CLIENT
// LIST's idle=, in whole seconds) may be, so that a client running command
// after command does not copy its state for them after each one.
const publishEvery = 100 * time.Millisecond

// errQuit ends a connection that ran QUIT.
var errQuit = errors.New("server: client quit")

// conn is one client connection: its socket, the requests it has sent, its
// state, its reply writer and the snapshot of its state that other
// goroutines read. Its goroutine runs serve.
type conn struct {
	srv *Server
	nc  net.Conn // with TLS, the *tls.Conn: the bytes here are decrypted

	// Used by the connection's goroutine only.
	client  *commands.Client
	rd      requestReader
	w       replyWriter
	readErr error // the socket's read error, returned once the bytes before it have run

	// Set before the connection's goroutine starts, then read-only.
	idleTimeout  time.Duration // Config.IdleTimeout; 0 for none
	authRequired func() bool   // whether the client must still authenticate; nil: never

	// On an event loop (Linux, plain TCP): the socket and the state of its
	// batch, used by the loop's goroutine only; lp is nil otherwise.
	lp *evloop
	ls loopState

	mu      sync.Mutex // guards the fields below
	snap    commands.ClientInfo
	idle    bool // blocked reading the socket, every reply flushed
	closing bool // Shutdown asked to close between two batches
	closed  bool
	// On an event loop: why another goroutine closed the connection, and
	// since when it has been idle.
	closeErr  error
	idleSince time.Time
}

// serve runs the connection until it ends. Each read from the socket
// brings a batch of requests: every complete one is parsed in place, run,
// and the replies are flushed with one write before the next read, as
// Redis does. A request cut by the end of a read waits in the buffer for
// the rest.
func (c *conn) serve() {
	var err error
	defer func() {
		if p := recover(); p != nil { // a bug here must not take the server down
			err = c.panicked(p)
		}
		_ = c.close()
		c.srv.closed(c, err)
	}()
	for err == nil {
		err = c.runBatch()
		if ferr := c.w.flush(); err == nil {
			err = ferr
		}
		if err == nil {
			err = c.read()
		}
	}
}

// panicked logs a panic that escaped the connection's own code (not a
// command's: run recovers those) and returns the error that ends it.
func (c *conn) panicked(p any) error {
	c.srv.log.Error("server: connection panicked; it is closed and the server keeps serving",
		"id", c.client.ID, "addr", c.client.Addr, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return fmt.Errorf("server: panic: %v", p)
}

// runBatch runs every complete request in the buffer. It returns an error
// when the connection is to end once the replies are flushed: after QUIT,
// or after a protocol error, whose reply it has written.
func (c *conn) runBatch() error {
	defer c.publish()
	c.client.StartBatch() // the batch's commands share clock readings
	for {
		unauth := c.authRequired != nil && c.authRequired()
		args, st, msg := c.rd.parse(unauth)
		switch st {
		case needMore:
			return nil
		case violation:
			c.w.WriteError("ERR Protocol error: " + msg) // CR and LF become spaces
			return &protocolError{msg: msg}
		}
		c.run(args)
		if c.client.Close {
			return errQuit // its reply is flushed, the rest dropped
		}
		if c.w.buffered() > maxBatchReply {
			if err := c.flushMidBatch(); err != nil {
				return err
			}
		}
	}
}

// flushMidBatch sends the replies of a batch that has buffered more than
// maxBatchReply. On an event loop, it returns errWouldBlock when the socket
// cannot take them all now: the batch stops there and goes on once they
// are sent.
func (c *conn) flushMidBatch() error {
	if c.lp != nil {
		return c.lp.send(c)
	}
	return c.w.flush()
}

// read reads the next bytes from the socket into the buffer. A read error
// is returned once the bytes read with it have run.
func (c *conn) read() error {
	if c.readErr != nil {
		return c.readErr
	}
	c.rd.shrink()
	n, err := c.readSocket(c.rd.room())
	c.rd.filled(n)
	if err != nil {
		if n == 0 {
			return err
		}
		c.readErr = err
	}
	return nil
}

// protocolError ends a connection that broke the protocol; the client has
// been sent "-ERR Protocol error: ...".
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "Protocol error: " + e.msg }

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

// publish copies the client's state for Host.Clients when a field that
// CLIENT LIST or INFO shows has changed, or LastActive has moved on by
// publishEvery; a client running the same command again and again copies
// it at most that often. Only this goroutine writes snap, so it reads it
// without the lock.
func (c *conn) publish() {
	cl, s := c.client, &c.snap.Client
	if cl.LastCommand == s.LastCommand && cl.Name == s.Name && cl.Proto == s.Proto &&
		cl.User == s.User && cl.Authenticated == s.Authenticated && cl.InMulti() == s.InMulti() &&
		cl.LibName == s.LibName && cl.LibVer == s.LibVer && cl.Close == s.Close &&
		cl.LastActive.Sub(s.LastActive) < publishEvery {
		return
	}
	c.mu.Lock()
	c.snap.Client = *cl
	c.mu.Unlock()
}

// info returns the last published copy of the client's state.
func (c *conn) info() commands.ClientInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}
