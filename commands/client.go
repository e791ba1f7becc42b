package commands

import (
	"time"

	"github.com/cellserver/cellserver/engine"
)

// Client is the state of one connection that commands read and change.
// Commands.NewSession makes one per connection, behind the Session the
// server holds; it is used by one goroutine at a time: the connection's
// driver, its own goroutine or an event loop serving many connections. Other connections see it only as the ClientInfo copies the
// server publishes.
type Client struct {
	// ID is the connection's unique, increasing id (CLIENT ID).
	ID int64
	// Addr and LocalAddr are the remote and local addresses, "ip:port".
	Addr, LocalAddr string
	// Created is when the connection was accepted.
	Created time.Time
	// Name is set by CLIENT SETNAME or HELLO ... SETNAME.
	Name string
	// LibName and LibVer are set by CLIENT SETINFO.
	LibName, LibVer string
	// Proto is the RESP version the client speaks: 2 (the default) or 3.
	Proto int
	// LastCommand is the lower-case name of the last command run (CLIENT LIST's cmd=).
	LastCommand string
	// LastActive is when the last command ran.
	LastActive time.Time
	// Close is set by QUIT: the server flushes the reply and closes.
	Close bool
	// User is the user the connection runs as (CLIENT LIST's user=):
	// "default" until AUTH or HELLO ... AUTH succeeds as another user, and
	// again after RESET.
	User string
	// Authenticated is set once AUTH or HELLO ... AUTH has succeeded, and
	// cleared by RESET. A connection that has not authenticated may still
	// run every command when the default user needs no password.
	Authenticated bool

	// monitoring is set by MONITOR and cleared by RESET: the connection
	// receives every command's line and may run no command that touches a
	// key.
	monitoring bool
	// monitorLine is the buffer this client's commands' MONITOR lines are
	// built in, while some connection monitors.
	monitorLine []byte

	// multi holds the MULTI state: queued commands and whether one failed
	// to queue (which makes EXEC abort).
	multi *multiState

	// cx and errs are reused by every command, so dispatch allocates nothing.
	cx   Context
	errs errorCounter
	// last is the command the client sent last (a top-level command, not a
	// subcommand): a client usually sends the same command again, and
	// comparing its name is cheaper than a table lookup.
	last *Command
	// batch says the server started a batch of commands (StartBatch), and
	// mark is when the client's last command in it ended: the next one's
	// start, so that a command costs one clock reading.
	batch bool
	mark  time.Time
	// rules is THROTTLE.ALL's buffer of parsed rules, kept between calls so
	// that parsing allocates nothing; empty when not in use.
	rules []engine.Rule
	// laters[lhead:] are the connection's paused decisions whose replies
	// are yet to be written, in order (pauseDecision, WriteReply).
	laters []*decisionLater
	lhead  int
	// effects are what the running command changed that the server must
	// act on; Session.Dispatch clears and returns them.
	effects Effect
}

// changed records that the running command had effect e.
func (cl *Client) changed(e Effect) { cl.effects |= e }

// NewClient returns the state of a connection that has just been accepted.
func NewClient(id int64, addr, localAddr string, now time.Time) *Client {
	return &Client{ID: id, Addr: addr, LocalAddr: localAddr, Created: now, LastActive: now, Proto: 2, User: defaultUser}
}

// Info returns a copy of the client's state for CLIENT LIST and INFO.
func (c *Client) Info() ClientInfo {
	return ClientInfo{
		ID: c.ID, Addr: c.Addr, LocalAddr: c.LocalAddr, Name: c.Name, LibName: c.LibName, LibVer: c.LibVer,
		User: c.userName(), Proto: c.Proto, LastCommand: c.LastCommand, Created: c.Created,
		LastActive: c.LastActive, InMulti: c.multi != nil, Authenticated: c.Authenticated,
		Monitor: c.monitoring,
	}
}

// InMulti reports whether the client is queueing commands after MULTI.
func (c *Client) InMulti() bool { return c.multi != nil }

// multiState is the queue between MULTI and EXEC.
type multiState struct {
	queued [][][]byte
	failed bool // a command failed to queue: EXEC answers EXECABORT
}

// reset brings the client back to a new connection's state (RESET). As in
// Redis, that makes it the default user again, not authenticated: when the
// default user needs a password, the client must authenticate anew.
func (c *Client) reset() {
	c.Name, c.Proto, c.multi, c.monitoring = "", 2, nil, false
	c.User, c.Authenticated = defaultUser, false
	c.changed(EffectProto | EffectAuth | EffectInfo)
}

// userName is the client's user for CLIENT LIST.
func (c *Client) userName() string {
	if c.User == "" {
		return defaultUser
	}
	return c.User
}

// maxKeptRules is the most parsed rules a client keeps a buffer for between
// THROTTLE.ALL calls; a bigger request's buffer is left to the GC.
const maxKeptRules = 64

// keepRules keeps rules' array for the client's next THROTTLE.ALL, emptied
// so that it holds no request's bytes.
func (cl *Client) keepRules(rules []engine.Rule) {
	clear(rules)
	if cap(rules) > maxKeptRules {
		rules = nil
	}
	cl.rules = rules[:0]
}

// StartBatch tells the client that the server is about to run the commands
// of one read from the connection, one after the other, the first at now:
// from then on each command starts when the one before it ended, and timing
// a command costs one clock reading instead of two. The server calls it
// after each read.
func (cl *Client) StartBatch(now time.Time) {
	cl.batch, cl.mark = true, now
}

// commandStart returns when the next command starts.
func (cl *Client) commandStart() time.Time {
	if cl.batch {
		return cl.mark
	}
	return time.Now()
}

// commandEnd returns how long the command that started at start took, and
// makes its end the next command's start.
func (cl *Client) commandEnd(start time.Time) time.Duration {
	d := time.Since(start)
	if cl.batch {
		cl.mark = start.Add(d)
	}
	return d
}
