package commands

import (
	"sync"

	"github.com/cellserver/cellserver/engine"
)

// decisionLater is a deciding command paused in shared mode (CL.THROTTLE,
// a window's, LB.THROTTLE, THROTTLE.ALL), from the store's answer (Done
// for CL.THROTTLE, decided for the others, on any goroutine) to its reply
// (WriteReply, on the connection's driver), counted as await counts it: the
// one object that carries the command, without await's closures. Once its
// reply is written, nothing refers to it, and it goes back to its pool,
// keeping done.
type decisionLater struct {
	pool   *sync.Pool
	t      tally
	paused Paused
	millis bool
	// behind: an earlier decision of the connection on one of its keys
	// was still to be written when it paused, so that the store decides it
	// after that one instead of from what it remembers.
	behind bool
	sig    uint64        // keySig of its key, 0 for several (pendingOn)
	client *Client       // whose laters it is in
	cl     bool          // CL.THROTTLE's answer: res, written as redis-cell writes it
	res    engine.Result // cl
	d      engine.Decision
	err    error
	key    [laterKeyRoom]byte // the tally's key, when it fits
	// errs writes an error reply, counting it by code, without an
	// allocation of its own.
	errs errorCounter
	// done is decided as a function value, made once for the object's
	// life, so that handing it to the store costs no allocation.
	done func(engine.Decision, error)
}

// laterKeyRoom is the longest key a paused command keeps without an
// allocation of its own.
const laterKeyRoom = 48

// pauseDecision pauses the command and returns its decisionLater, which
// counts its outcome in t (whose key it copies) and which the store is to
// answer; or nil where the command cannot pause that way (its Writer is
// not a Pauser, or EXEC orders its commands): await serves it then.
func (cx *Context) pauseDecision(w Writer, t tally, millis bool) *decisionLater {
	p := AsPauser(w)
	if p == nil || cx.chain != nil {
		return nil
	}
	cx.later = true
	pool := &cx.cmds.laters
	l, _ := pool.Get().(*decisionLater)
	if l == nil {
		l = new(decisionLater)
		l.done = l.decided
	}
	l.sig = t.keySig()
	l.behind = cx.Client.pendingOn(t, l.sig)
	l.pool, l.paused, l.millis = pool, p.Pause(), millis
	l.t = t.detachInto(l.key[:])
	l.client = cx.Client
	cx.Client.pausedDecision(l)
	return l
}

// maxPendingScan is the most paused decisions pendingOn compares a
// command's keys with: past it (a long pipeline), the command counts as
// behind one on its keys, which costs it only the deny cache.
const maxPendingScan = 64

// pendingOn reports whether a paused decision of the connection whose reply
// is yet to be written is on one of t's keys; sig is t.keySig().
func (cl *Client) pendingOn(t tally, sig uint64) bool {
	pending := cl.laters[cl.lhead:]
	if len(pending) > maxPendingScan {
		return true
	}
	for _, l := range pending {
		if (sig == 0 || l.sig == 0 || l.sig == sig) && l.t.sharesKey(t) {
			return true
		}
	}
	return false
}

// pausedDecision adds l to the connection's paused decisions.
func (cl *Client) pausedDecision(l *decisionLater) {
	if cl.lhead > 0 && len(cl.laters) == cap(cl.laters) {
		n := copy(cl.laters, cl.laters[cl.lhead:])
		clear(cl.laters[n:])
		cl.laters, cl.lhead = cl.laters[:n], 0
	}
	cl.laters = append(cl.laters, l)
}

// written takes l, whose reply is about to be written, off the
// connection's paused decisions. Replies are written in order, so l is
// the first, unless the ones before it will never be written (the server
// dropped them: their command panicked after pausing); those go too.
func (cl *Client) written(l *decisionLater) {
	i := cl.lhead
	for i < len(cl.laters) && cl.laters[i] != l {
		i++
	}
	if i == len(cl.laters) {
		return
	}
	clear(cl.laters[cl.lhead : i+1])
	cl.lhead = i + 1
	if cl.lhead == len(cl.laters) {
		cl.laters, cl.lhead = cl.laters[:0], 0
	}
}

// Done implements engine.ThrottleDone: CL.THROTTLE's answer.
func (l *decisionLater) Done(res engine.Result, err error) {
	l.cl, l.res, l.err = true, res, err
	l.paused.Complete(l)
}

// decided is the answer of the other deciding commands.
func (l *decisionLater) decided(d engine.Decision, err error) {
	l.d, l.err = d, err
	l.paused.Complete(l)
}

// WriteReply implements Reply.
func (l *decisionLater) WriteReply(w Writer) {
	l.client.written(l) // first: the write may panic
	l.write(w)
	pool, done := l.pool, l.done
	*l = decisionLater{done: done}
	pool.Put(l)
}

// Drop implements Dropper: only the outcome is counted. l stays as it is,
// out of its pool: the closed connection's list of paused decisions,
// which its driver may still be reading, keeps it.
func (l *decisionLater) Drop() { l.write(nowhere{}) }

// write writes the reply to w, counting its outcome.
func (l *decisionLater) write(w Writer) {
	if l.err != nil {
		l.t.erred()
		l.errs = errorCounter{Writer: w, stats: l.t.errs}
		w = &l.errs
	}
	if l.cl {
		writeThrottle(l.t, w, l.res, l.err)
	} else {
		writeDecision(l.t, w, l.d, l.err, l.millis)
	}
}
