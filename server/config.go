package server

import (
	"crypto/tls"
	"log/slog"
	"math"
	"time"

	"github.com/cellserver/cellserver/commands"
)

// Defaults that the zero values of Config stand for.
const (
	// DefaultAddr is where ListenAndServe listens when Config.Addr is empty.
	DefaultAddr = "127.0.0.1:6379"
	// DefaultProtoMaxBulkLen is Redis's default proto-max-bulk-len.
	DefaultProtoMaxBulkLen = 512 << 20
	// DefaultMaxInlineLen is Redis's PROTO_INLINE_MAX_SIZE.
	DefaultMaxInlineLen = 64 << 10
	// DefaultMaxClients is Redis's default maxclients.
	DefaultMaxClients = 10000
	// DefaultTLSHandshakeTimeout bounds a TLS handshake when
	// Config.TLSHandshakeTimeout is 0.
	DefaultTLSHandshakeTimeout = 10 * time.Second
	// DefaultEventLoops is how many event loops cellserver's command line
	// (--event-loops) starts unless told otherwise. Config.EventLoops has
	// no default: its zero value, like the flag's 0, means none.
	DefaultEventLoops = 1
)

// maxProtoBulkLen bounds Config.ProtoMaxBulkLen so that no offset the reader
// computes from a length header can overflow an int.
const maxProtoBulkLen = math.MaxInt / 4

// Handler gives each connection its command state: the server calls
// NewSession once per accepted connection (id is unique and increasing;
// addr and laddr are the remote and local addresses; created is when it was
// accepted, by Config.Now) and then runs the connection's requests through
// the session's Dispatch, one at a time, in order, on the goroutine that
// drives the connection: its own goroutine, or an event loop shared with
// other connections, where a slow Dispatch holds every client of that loop
// (a command waiting on something slow pauses instead: commands.Pauser). A
// panic in Dispatch is recovered: it is logged, the client gets
// commands.MsgInternal and the connection keeps serving. commands.Commands
// is a Handler.
type Handler interface {
	NewSession(id int64, addr, laddr string, created time.Time) commands.Session
}

// Config configures a Server. Every field but Handler has a zero value that
// works.
type Config struct {
	// Addr is the TCP address ListenAndServe listens on. "" means
	// DefaultAddr, "127.0.0.1:6379"; a port of 0 picks a free one (see
	// Server.Addr).
	Addr string
	// Handler runs the commands. Required: New panics without one.
	Handler Handler
	// Logger receives connections accepted and closed (Debug), failed
	// accepts and recovered panics (Error); never one record per command.
	// nil means slog.Default().
	Logger *slog.Logger
	// ProtoMaxBulkLen is the longest argument a client may send, like
	// Redis's proto-max-bulk-len: a longer "$N" header is a protocol error
	// ("invalid bulk length"). 0 or less means DefaultProtoMaxBulkLen
	// (512 MiB); values above MaxInt/4 are lowered to it.
	ProtoMaxBulkLen int64
	// MaxInlineLen is the longest inline request (a command typed as a line
	// of text instead of RESP) that may arrive without its newline; a longer
	// one is a protocol error ("too big inline request"). 0 or less means
	// DefaultMaxInlineLen (64 KiB).
	MaxInlineLen int
	// MaxClients is how many connections may be open at once, like Redis's
	// maxclients: one more is answered "ERR max number of clients reached"
	// and closed, and counts in HostStats.RejectedConnections. 0 or less
	// means DefaultMaxClients (10000).
	MaxClients int
	// Now is the clock that stamps Client.Created. nil means time.Now.
	Now func() time.Time

	// TLS, when set, makes the server speak TLS: every connection is
	// handshaken before it counts as a client, and the request parser and
	// the commands see the decrypted bytes. nil means plain TCP. LoadTLS
	// builds one from certificate files. Handshakes run off the accept
	// loop, at most MaxClients at once, so a slow or silent client delays
	// no other; a failed one is logged at Debug.
	TLS *tls.Config
	// TLSHandshakeTimeout is how long a client may take to complete its
	// TLS handshake before it is closed. 0 or less means
	// DefaultTLSHandshakeTimeout (10 s).
	TLSHandshakeTimeout time.Duration
	// ProtectedMode, like Redis's protected-mode, refuses clients that are
	// not on the loopback interface while no password is set (PasswordSet
	// is false) and the listener is not bound to a loopback address: they
	// get Redis's "-DENIED ..." explanation and are closed, and count in
	// HostStats.RejectedConnections. false (the zero value) turns it off;
	// cellserver's command line turns it on by default, as Redis does.
	ProtectedMode bool
	// PasswordSet tells protected mode that the default user needs a
	// password (commands.Users.PasswordSet), so remote clients may connect.
	PasswordSet bool
	// IdleTimeout closes a client that has sent nothing for this long, like
	// Redis's timeout: the connection is closed without a reply. As in
	// Redis, a client whose replies wait for it counts as idle too unless,
	// within the time, it takes some of them or sends requests that are
	// read. 0 or less means never (Redis's default, timeout 0).
	IdleTimeout time.Duration
	// EventLoops is how many event loops serve plain-TCP connections on
	// Linux: each is a goroutine that waits on an epoll instance for its
	// connections' sockets, runs the requests that arrive, and writes the
	// replies, so that a request costs a read and a write, as in Redis. A
	// loop runs its connections' commands one at a time: a slow command
	// holds every client of its loop (a command waiting on something slow
	// pauses instead, see commands.Pauser). 0 or less means no loops:
	// every connection gets a goroutine of its own, as TLS connections
	// always do and as every connection does on other systems. 0 means
	// what cellserver's --event-loops 0 means; the command line's default
	// is DefaultEventLoops.
	EventLoops int
	// LoopsHoldP lets each event loop keep its P (Go's right to run
	// goroutines on a thread) while it waits for its sockets, when
	// GOMAXPROCS is above EventLoops: it saves the context switches of
	// giving the P up and getting it back around every wait. Only for a
	// process that runs no other server with event loops (cellserver's
	// binary sets it): loops of several servers could hold every P, and the
	// rest of the process would wait for their clients.
	LoopsHoldP bool
}

// withDefaults returns cfg with every zero value replaced by its default.
func (cfg Config) withDefaults() Config {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ProtoMaxBulkLen <= 0 {
		cfg.ProtoMaxBulkLen = DefaultProtoMaxBulkLen
	}
	if cfg.ProtoMaxBulkLen > maxProtoBulkLen {
		cfg.ProtoMaxBulkLen = maxProtoBulkLen
	}
	if cfg.MaxInlineLen <= 0 {
		cfg.MaxInlineLen = DefaultMaxInlineLen
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TLSHandshakeTimeout <= 0 {
		cfg.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	if cfg.IdleTimeout < 0 {
		cfg.IdleTimeout = 0
	}
	return cfg
}

// eventLoops returns how many event loops to start: none with TLS, when
// turned off, or where the system has none.
func (s *Server) eventLoops() int {
	switch {
	case !haveEventLoops || s.cfg.TLS != nil || s.cfg.EventLoops <= 0:
		return 0
	}
	return s.cfg.EventLoops
}

// limits returns the framing limits cfg asks for.
func (cfg Config) limits() limits {
	return limits{
		maxBulk:      cfg.ProtoMaxBulkLen,
		maxInline:    cfg.MaxInlineLen,
		maxHeader:    maxHeaderLen,
		maxMultibulk: maxMultibulkLen,
	}
}
