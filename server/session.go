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

// maxBatchReply is how many reply bytes a batch may buffer before they are
// sent in the middle of it, so that a pipeline of commands with big
// replies does not make the server hold all of them at once while the
// client takes them.
const maxBatchReply = 64 << 10

// maxUnsent is how many reply bytes may wait for a client's socket, which
// takes no more for now, while its requests are still read and run: a
// client that writes its whole pipeline before it reads a reply
// (go-redis's Pipeline does) must not find the server blocked in a write
// to it while it blocks in its own. Past it the connection is not read
// until the socket takes some, so that a client that never reads costs a
// bounded memory. Redis 7.0 keeps reading a normal client without a limit
// (client-output-buffer-limit normal 0 0 0); 64 MiB is about two million
// CL.THROTTLE replies, and a request may take as much memory
// (proto-max-bulk-len is 512 MiB).
const maxUnsent = 64 << 20

// maxHeldCommands is how many paused commands one connection may have
// before it stops reading: with maxBatchReply bytes held behind a paused
// reply, it bounds what a client pipelining commands that pause makes the
// server hold behind them.
const maxHeldCommands = 1024

// publishEvery is how stale the LastActive that other clients see (CLIENT
// LIST's idle=, in whole seconds) may be, so that a client running command
// after command does not copy its state for them after each one.
const publishEvery = 100 * time.Millisecond

// maxPushBacklog is how many pushed bytes (MONITOR's lines) may wait for
// a client that reads them too slowly, beyond the replies being sent,
// before it is closed: Redis's client-output-buffer-limit for pubsub
// clients, 32 MiB.
const maxPushBacklog = 32 << 20

// Why a connection ends.
var (
	errPushBacklog = errors.New("server: client too slow to read its pushed output")
	errQuit        = errors.New("server: client quit")
	errShutdown    = errors.New("server: shutting down")
	errIdleTimeout = errors.New("server: idle timeout")
)

// protocolError ends a connection that broke the protocol; the client has
// been sent "-ERR Protocol error: ...".
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "Protocol error: " + e.msg }

// step is what a session asks its driver to do next. While output() waits
// for a socket that took no more (waitSending), the driver waits for room
// for it as well, at stepRead and at stepWait.
type step uint8

const (
	stepRead  step = iota // read bytes into room() and report them with received
	stepWrite             // send output() and report with sent how much went
	stepWait              // wait for wake: a paused command is to complete
	stepClose             // close the socket; finish says why
)

// driver is what a session needs of the driver that runs it. Both methods
// may be called from any goroutine and must not block; the session calls
// shutSocket with its mu held, once, when it becomes closed, and the driver
// closes the socket only after finish, so never one reused meanwhile.
type driver interface {
	// wake makes the driver call run and next again soon, on its own
	// goroutine.
	wake()
	// shutSocket makes the socket unusable now, so that a driver blocked
	// reading it (or waiting on it) wakes up and finds the session closed.
	shutSocket()
	// ready reports whether the socket has bytes the driver has yet to
	// read (if input) or room for output it has yet to send (if output):
	// work that a driver held up by another connection's command does
	// once that command returns. Called with the session's mu held, while
	// it is open; it must not block.
	ready(input, output bool) bool
}

// session is one client connection without its socket: the requests it
// has sent and not yet run, the replies waiting to be sent (some perhaps
// held behind a paused command), and whether it is to end. It does no
// system calls and reads no clock: its driver moves the bytes, keeps time
// and calls it in a loop,
//
//	s.run(now); switch s.next(now) { read, write, wait or close }
//
// on one goroutine at a time. Only the methods that say so may be called
// from other goroutines.
type session struct {
	srv  *Server // for the log and the closed connection's unregistration
	id   int64
	addr string
	cs   commands.Session

	// The driver's goroutine only.
	rd       requestReader
	w        replyWriter
	unauth   bool     // the client must still authenticate: tighter framing, one request at a time
	waitArgs [][]byte // a parsed request waiting for the paused commands to complete
	readErr  error    // from the socket, acted on once the bytes read before it have run
	end      error    // the connection ends once the replies before this are sent
	current  [][]byte // the request running, for a paused command's error text
	lastPub  time.Time
	// full: the socket took no more output (waitSending), until the driver
	// finds it writable or reads bytes; meanwhile the driver waits for it
	// to take more, and requests are still read and run.
	full      bool
	fullSince time.Time // when it last took no more

	idleTimeout time.Duration // Config.IdleTimeout; 0 for none

	mu        sync.Mutex // guards the fields below
	drv       driver
	snap      commands.ClientInfo
	completed bool   // some paused reply has completed since run last looked
	pushed    []byte // Push's lines, not yet in w; at most pushLimit bytes
	pushLimit int    // maxPushBacklog, or Server.pushLimit
	// unsentLimit is maxUnsent, or Server.unsentLimit; set once, at the
	// start.
	unsentLimit int
	// dispatching: a command that paused is still being dispatched on the
	// driver's goroutine, which looks at completed when it returns, so a
	// completion meanwhile (a deny-cache hit, a validation error) needs no
	// wake.
	dispatching bool
	closing     bool // Shutdown: end once nothing is left to run or send
	waiting     bool // the driver waits for bytes with nothing pending: Shutdown may close at once
	// sending: the driver waits for the socket to take output (full); the
	// idle clock runs meanwhile, as Redis counts only bytes moved as
	// activity.
	sending bool
	// readingToo: while sending, the driver waits for bytes as well, the
	// replies waiting being no more than unsentLimit.
	readingToo bool
	idleSince  time.Time
	closed     bool
	closeErr   error
}

// newSession returns the session of a connection just accepted, driven by
// drv until another driver takes it.
func newSession(srv *Server, id int64, addr string, cs commands.Session, drv driver, now time.Time) *session {
	s := &session{srv: srv, id: id, addr: addr, cs: cs, drv: drv, rd: newRequestReader(srv.lim),
		idleTimeout: srv.cfg.IdleTimeout, lastPub: now, idleSince: now, pushLimit: srv.pushBacklog(),
		unsentLimit: srv.unsentBacklog(), waiting: true} // for its first bytes, even before a busy loop adopts it
	s.w.sess = s
	s.w.proto = cs.Proto()
	s.unauth = cs.AuthRequired()
	s.snap = cs.Info()
	return s
}

// room returns where the driver reads the next bytes to.
func (s *session) room() []byte {
	s.rd.shrink()
	return s.rd.room()
}

// received records n bytes read into room, and err if the read failed or
// the client closed (io.EOF): the bytes before it run first. Output
// waiting for the socket is tried again, which restarts the idle clock.
// Once the connection is to end (QUIT, a protocol error, Shutdown) it
// drops the bytes, and says so: nothing more runs, and the driver may
// drop whatever else has arrived.
func (s *session) received(n int, err error) (dropped bool) {
	s.mu.Lock()
	s.waiting = false
	closing := s.closing
	s.mu.Unlock()
	s.full = false
	dropped = closing || s.end != nil
	if dropped {
		n = 0
	}
	s.rd.filled(n)
	if err != nil && s.readErr == nil {
		s.readErr = err
	}
	return dropped
}

// output returns the replies ready to be sent: every one up to the first
// still paused.
func (s *session) output() []byte { return s.w.ready() }

// sent records that the driver sent the first n bytes of output.
func (s *session) sent(n int) { s.w.sent(n) }

// writable records that the socket, which took no more output, may take
// some now (or has failed, which sending reports): next asks for a write.
func (s *session) writable() { s.full = false }

// fail ends the session at once with err, dropping whatever is pending: the
// driver could not use the socket.
func (s *session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed, s.closeErr = true, err
	}
}

// run writes the paused replies that have completed and runs every request
// that may run now, stopping early when maxBatchReply bytes are ready to
// send (the driver sends them and calls run again) or when the replies held
// behind paused ones are too many (heldFull: the rest waits, unread, for
// them to complete). While the socket takes no more output (full), replies
// ready are kept up to unsentLimit instead.
func (s *session) run(now time.Time) {
	s.mu.Lock()
	closed, completed := s.closed, s.completed
	s.completed, s.sending = false, false // not idle while it runs
	s.takePushedLocked()
	s.mu.Unlock()
	if closed {
		return
	}
	if completed {
		s.w.applyCompleted()
	}
	if s.end != nil {
		return
	}
	info, started := false, false
	limit := maxBatchReply
	if s.full {
		limit = s.unsentLimit
	}
	for len(s.w.ready()) <= limit && !s.w.heldFull() {
		args := s.waitArgs
		if args == nil {
			var st parseStatus
			var msg string
			args, st, msg = s.rd.parse(s.unauth)
			switch st {
			case needMore:
				s.publish(now, started, info)
				return
			case violation:
				s.w.begin()
				reply := "ERR Protocol error: " + msg
				s.w.WriteError(reply) // CR and LF become spaces
				s.cs.Errored(reply)
				s.end = &protocolError{msg: msg}
				s.publish(now, started, info)
				return
			}
		}
		if s.w.pending() && (!s.w.mayOverlap() || !s.cs.Overlaps(args)) {
			s.waitArgs = args // the buffer stays as it is: nothing is read meanwhile
			break
		}
		s.waitArgs = nil
		if !started {
			s.cs.StartBatch(now) // the batch's commands share clock readings
			started = true
		}
		eff := s.dispatch(args)
		if s.w.paused {
			s.w.paused = false
			s.applyInline()
		}
		// Its own line goes right after its reply; after QUIT's nothing
		// does, as in Redis (the lines wait in pushed, dropped at the end).
		if eff&(commands.EffectPushed|commands.EffectQuit) == commands.EffectPushed {
			s.mu.Lock()
			s.takePushedLocked()
			s.mu.Unlock()
		}
		if eff&commands.EffectProto != 0 {
			s.w.proto = s.cs.Proto()
		}
		if eff&commands.EffectAuth != 0 {
			s.unauth = s.cs.AuthRequired()
		}
		info = info || eff&commands.EffectInfo != 0
		if eff&commands.EffectQuit != 0 {
			s.end = errQuit // its reply is sent, the requests after it dropped
			break
		}
	}
	s.publish(now, started, info)
}

// pausing records that the command being dispatched paused: completions
// from now until applyInline need not wake the driver.
func (s *session) pausing() {
	s.mu.Lock()
	s.dispatching = true
	s.mu.Unlock()
}

// applyInline writes, after a command that paused, the paused replies that
// completed meanwhile (during its dispatch, or on another goroutine),
// within the same batch instead of after a wake-up.
func (s *session) applyInline() {
	s.mu.Lock()
	s.dispatching = false
	completed := s.completed
	s.completed = false
	s.mu.Unlock()
	if completed {
		s.w.applyCompleted()
	}
}

// currentOverlaps reports whether the command running may overlap a paused
// one (commands.FlagOverlap): a command pausing that may not holds back
// every later command until it completes, as if it had not paused.
func (s *session) currentOverlaps() bool {
	return s.current != nil && s.cs.Overlaps(s.current)
}

// dispatch runs one command, recovering from a panic in it.
func (s *session) dispatch(args [][]byte) (eff commands.Effect) {
	s.w.begin()
	s.current = args
	held := len(s.w.held) // a panic takes back the pauses after these too
	defer func() {
		s.current = nil
		if p := recover(); p != nil {
			s.w.dropPaused(held)
			s.recovered(p, commandName(args))
		}
	}()
	return s.cs.Dispatch(&s.w, args)
}

// recovered handles a panic in a command or in a paused command's write:
// it logs it with its stack, takes back the partial reply and answers with
// an error instead.
func (s *session) recovered(p any, name string) {
	s.srv.log.Error("server: command panicked; the client got an error and the server keeps serving",
		"cmd", name, "id", s.id, "addr", s.addr,
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	s.w.discard()
	msg := fmt.Sprintf(commands.MsgInternal, name)
	s.w.WriteError(msg)
	s.cs.Errored(msg)
}

// publish copies the client's state for Host.Clients after a batch that
// ran commands, when one of them changed what CLIENT LIST shows or the
// last copy is publishEvery old: a client running the same command again
// and again copies it at most that often.
func (s *session) publish(now time.Time, ran, changed bool) {
	if !ran || (!changed && now.Sub(s.lastPub) < publishEvery) {
		return
	}
	s.lastPub = now
	info := s.cs.Info()
	s.mu.Lock()
	s.snap = info
	s.mu.Unlock()
}

// next says what the driver must do now that run has run. now stamps the
// start of an idle wait. While output waits for the socket (full), the
// driver waits for the socket to take it, whatever the step, and for
// bytes too if the step is stepRead.
func (s *session) next(now time.Time) step {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sending, s.readingToo = false, false
	unsent := len(s.w.ready())
	switch {
	case s.closed:
		return stepClose
	case unsent > 0 && !s.full:
		return stepWrite
	case s.completed:
		return stepWait // wake is on its way: run will write the completed reply
	}
	pending := s.w.pending()
	if !pending && unsent == 0 {
		switch {
		case s.end != nil:
			return s.closeLocked(s.end)
		case s.readErr != nil && s.waitArgs == nil:
			return s.closeLocked(s.readErr)
		case s.closing:
			return s.closeLocked(errShutdown)
		}
	}
	if unsent > 0 { // the socket is full: idle unless it takes some or bytes are read
		s.sending, s.idleSince = true, s.fullSince
		if (s.end != nil || s.closing) && s.readErr == nil {
			// The connection ends once the socket takes the replies;
			// meanwhile the client's bytes are read and dropped, as
			// Redis reads on after QUIT. Left unread, they would keep
			// a client that writes its whole pipeline before it reads
			// from ever reading, and make the close reset the
			// connection, which drops the replies still on their way.
			s.readingToo = true
			return stepRead
		}
	}
	if s.end != nil || s.waitArgs != nil || s.readErr != nil || s.closing || s.w.heldFull() {
		return stepWait // for the paused commands or the socket, reading nothing meanwhile
	}
	if unsent > 0 { // read on meanwhile, up to the limit
		if unsent > s.unsentLimit {
			if full := s.srv.unsentFull; full != nil {
				full(unsent, cap(s.w.out))
			}
			return stepWait
		}
		s.readingToo = true
		return stepRead
	}
	if !pending && !s.waiting { // idle from now, until bytes arrive
		s.waiting, s.idleSince = true, now
	}
	return stepRead
}

// closeLocked marks the session closed for err and returns stepClose.
// s.mu is held.
func (s *session) closeLocked(err error) step {
	s.closed, s.closeErr = true, err
	return stepClose
}

// afterSending reports what waits for the output to be sent: the end of
// the connection (after QUIT, a protocol error, or with Shutdown under
// way: what is read then is dropped), or pushed lines, which run takes
// once fewer than maxBatchReply bytes are ready.
func (s *session) afterSending() (ending, pushed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end != nil || s.closing, len(s.pushed) > 0
}

// pending reports whether a paused command has yet to complete; a driver
// that cannot wait for bytes and for a wake at once waits for the wake.
func (s *session) pending() bool { return s.w.pending() }

// finish returns why the session ended, once the driver has closed the
// socket; a paused command completing later is dropped. The replies
// completed but not written are dropped now: they still count what they
// answered (commands.Dropper).
func (s *session) finish() error {
	s.mu.Lock()
	s.closed = true
	if s.closeErr == nil {
		s.closeErr = net.ErrClosed
	}
	err := s.closeErr
	var unwritten []commands.Reply
	for _, p := range s.w.held {
		if p.reply != nil && !p.dropped {
			unwritten = append(unwritten, p.reply)
			p.reply = nil
		}
	}
	s.mu.Unlock()
	for _, r := range unwritten {
		dropReply(r)
	}
	return err
}

// dropReply counts what r, which will never be written, answered.
func dropReply(r commands.Reply) {
	if d, ok := r.(commands.Dropper); ok {
		d.Drop()
	}
}

// idleDeadline is when the connection, waiting for bytes, times out; zero
// for never. For next's stepRead.
func (s *session) idleDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idleTimeout <= 0 || !s.waiting || s.snap.Monitor {
		return time.Time{} // as in Redis, a monitor never times out
	}
	return s.idleSince.Add(s.idleTimeout)
}

// waitSending records that the socket, at now, took no more of the
// output: the driver waits for it to take more, and run and next go on
// without it. If it takes none, and the client sends nothing that is read,
// until Config.IdleTimeout, expireIdle closes the connection, as Redis's
// timeout closes a client that neither sends nor reads. writable and
// received end the wait.
func (s *session) waitSending(now time.Time) {
	s.full, s.fullSince = true, now
}

// sendDeadline is when a driver that starts sending output now and blocks
// until it is taken gives up for the idle timeout; zero for never. Without
// a timeout (the default) it reads no clock and takes no lock.
func (s *session) sendDeadline() time.Time {
	if s.idleTimeout <= 0 { // set once, at the session's start
		return time.Time{}
	}
	now := time.Now() // not the batch's start: it may have run long
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap.Monitor {
		return time.Time{} // a monitor is bounded by its push backlog instead
	}
	return now.Add(s.idleTimeout)
}

// expireIdle closes the connection if it has waited for bytes, with
// nothing pending, or for the socket to take its output, for
// Config.IdleTimeout at now. A socket that has bytes to read, or room for
// the output, is not idle: its driver, held up by another connection's
// command, has yet to move them, and Redis, whose timeout check cannot
// run during a command, moves them before it checks. Any goroutine.
func (s *session) expireIdle(now time.Time) {
	s.mu.Lock()
	expired := s.idleTimeout > 0 && (s.waiting || s.sending) && !s.closed && !s.snap.Monitor &&
		now.Sub(s.idleSince) >= s.idleTimeout && !s.drv.ready(s.waiting || s.readingToo, s.sending)
	if expired {
		s.closed, s.closeErr, s.waiting, s.sending = true, errIdleTimeout, false, false
		s.drv.shutSocket() // under s.mu: the driver closes the socket only once closed is set
	}
	s.mu.Unlock()
}

// shutdown closes the connection now if it waits for bytes with nothing
// pending, or else once its requests have run, its paused commands have
// completed and every reply is sent. Any goroutine.
func (s *session) shutdown() {
	s.mu.Lock()
	s.closing = true
	now := s.waiting && !s.closed
	if now {
		s.closed, s.closeErr, s.waiting = true, errShutdown, false
		s.drv.shutSocket()
	}
	drv, later := s.drv, !s.closed
	s.mu.Unlock()
	if later {
		drv.wake() // a driver reading while its last reply is on its way ends once it is sent
	}
}

// close closes the connection at once, dropping whatever is pending;
// closing it again does nothing. Any goroutine.
func (s *session) close() {
	s.mu.Lock()
	first := !s.closed
	if first {
		s.closed, s.closeErr, s.waiting = true, net.ErrClosed, false
		s.drv.shutSocket()
	}
	drv := s.drv
	s.mu.Unlock()
	if first {
		drv.wake() // a driver waiting for a paused command
	}
}

// complete records that the paused reply p can be written, by r, and
// wakes the driver to write it. Any goroutine; after the session closed
// it only counts what r answered (dropReply), and for a reply dropped when
// its command panicked it does nothing.
func (s *session) complete(p *pausedReply, r commands.Reply) {
	s.mu.Lock()
	if s.closed || p.dropped {
		closed, dropped := s.closed, p.dropped
		s.mu.Unlock()
		if closed && !dropped && r != nil {
			dropReply(r)
		}
		return
	}
	if p.reply != nil || !p.held {
		s.mu.Unlock()
		panic("server: a paused command completed twice")
	}
	if r == nil {
		r = noReply{}
	}
	p.reply = r
	s.completed = true
	if s.dispatching { // applyInline writes it
		s.mu.Unlock()
		return
	}
	drv := s.drv
	s.mu.Unlock()
	drv.wake()
}

// takePushedLocked moves the pushed lines to the replies to send, unless
// the connection is ending or maxBatchReply bytes wait to be sent already:
// then they wait in pushed, bounded by pushLimit. s.mu is held.
func (s *session) takePushedLocked() {
	if len(s.pushed) == 0 || s.end != nil || len(s.w.ready()) >= maxBatchReply {
		return
	}
	s.w.raw(s.pushed)
	s.pushed = s.pushed[:0]
	if cap(s.pushed) > maxKeptReplyBuf {
		s.pushed = nil // grown for a backlog
	}
}

// push queues line to be sent after the replies written so far, and wakes
// the driver if it is the first line waiting (the driver takes every line
// waiting when it next runs). A client that leaves more than pushLimit
// bytes waiting is closed. Any goroutine; it reports whether the session is
// still open.
func (s *session) push(line []byte) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	if len(s.pushed)+len(line) > s.pushLimit {
		s.closed, s.closeErr, s.waiting = true, errPushBacklog, false
		s.pushed = nil
		s.drv.shutSocket()
		drv := s.drv
		s.mu.Unlock()
		drv.wake()
		s.srv.log.Warn("server: closed a client that read its pushed output (MONITOR) too slowly",
			"id", s.id, "addr", s.addr, "limit", s.pushLimit)
		return false
	}
	first := len(s.pushed) == 0
	s.pushed = append(s.pushed, line...)
	drv := s.drv
	s.mu.Unlock()
	if first {
		drv.wake()
	}
	return true
}

// setDriver hands the session to drv, unless it was closed meanwhile.
func (s *session) setDriver(drv driver) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.drv = drv
	return true
}

// info returns the last published copy of the client's state.
func (s *session) info() commands.ClientInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}

// panicked logs a panic that escaped the session's own code (not a
// command's: dispatch recovers those) and returns the error that ends it.
func (s *session) panicked(p any) error {
	s.srv.log.Error("server: connection panicked; it is closed and the server keeps serving",
		"id", s.id, "addr", s.addr, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return fmt.Errorf("server: panic: %v", p)
}

// commandName is the lower-case command name in args, cut as the commands
// cut a name they quote in an error (commands.QuoteArg).
func commandName(args [][]byte) string {
	if len(args) == 0 {
		return ""
	}
	return strings.ToLower(commands.QuoteArg(args[0]))
}

// noReply is the Reply of a paused command that writes nothing.
type noReply struct{}

func (noReply) WriteReply(commands.Writer) {}
