package commands

import "time"

// Effect is a set of changes a command made to its connection that the
// server must act on. Session.Dispatch reports them, so that the server
// keeps its own copy of what it needs (the RESP version, whether the client
// must still authenticate) instead of asking after every command.
type Effect uint8

const (
	// EffectQuit: the client asked to close (QUIT); the server sends the
	// replies so far and closes.
	EffectQuit Effect = 1 << iota
	// EffectProto: the RESP version changed; Session.Proto has the new one.
	EffectProto
	// EffectAuth: the authentication state changed; Session.AuthRequired
	// has the new one.
	EffectAuth
	// EffectInfo: something ClientInfo shows, other than LastActive,
	// changed; the server publishes a new snapshot for Host.Clients.
	EffectInfo
	// EffectPushed: the command pushed output to its own connection (a
	// monitor's line for its own command, see Pusher), which the server
	// sends right after the reply, as Redis does.
	EffectPushed
)

// Session is one connection's command state, as the server sees it. The
// server makes one per connection with Commands.NewSession and calls it
// from one goroutine at a time, the connection's driver; it is not safe for
// concurrent use. The driver may be an event loop serving many connections,
// where one slow Dispatch holds every client of that loop: a command that
// waits (on the shared Store) pauses instead (Pauser) and completes later.
type Session interface {
	// StartBatch says the commands of one read from the socket are about
	// to run, one after the other, the first at now.
	StartBatch(now time.Time)
	// Dispatch runs the command args (args[0] is its name, as sent) and
	// writes its reply to w. args and the bytes they point to are valid
	// only until Dispatch returns.
	Dispatch(w Writer, args [][]byte) Effect
	// Overlaps reports whether the command args may run while an earlier
	// command of this connection is paused (see Pauser and FlagOverlap).
	Overlaps(args [][]byte) bool
	// Proto is the RESP version the client speaks, 2 or 3.
	Proto() int
	// AuthRequired reports whether the client must still authenticate, in
	// which case the server frames its requests under Redis's tighter
	// limits for unauthenticated clients, one request at a time.
	AuthRequired() bool
	// Info returns a copy of the client's state for CLIENT LIST and INFO.
	Info() ClientInfo
	// Errored counts an error reply the server wrote itself, not a
	// command (a protocol error, a command's panic), among INFO
	// errorstats' replies, as Redis counts every error reply.
	Errored(msg string)
}

// NewSession returns the command state of a connection just accepted: id
// is its unique, increasing id, addr and laddr its remote and local
// addresses, created when it was accepted.
func (c *Commands) NewSession(id int64, addr, laddr string, created time.Time) Session {
	return &session{cmds: c, cl: NewClient(id, addr, laddr, created)}
}

// session is the Session of Commands: a Client and the table it runs on.
type session struct {
	cmds *Commands
	cl   *Client
}

func (s *session) StartBatch(now time.Time) { s.cl.StartBatch(now) }

func (s *session) Errored(msg string) { s.cmds.replyErrors.count(msg) }

func (s *session) Dispatch(w Writer, args [][]byte) Effect {
	s.cl.effects = 0
	s.cmds.Dispatch(w, s.cl, args)
	return s.cl.effects
}

func (s *session) Overlaps(args [][]byte) bool {
	if len(args) == 0 || s.cl.multi != nil || s.cmds.AuthRequired(s.cl) {
		return false
	}
	cmd, _ := s.cmds.resolveFor(s.cl, args) // the last command's row, for a pipeline of one command
	return cmd != nil && cmd.Flags&FlagOverlap != 0
}

func (s *session) Proto() int         { return s.cl.Proto }
func (s *session) AuthRequired() bool { return s.cmds.AuthRequired(s.cl) }
func (s *session) Info() ClientInfo   { return s.cl.Info() }
