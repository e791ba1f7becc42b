package server

import (
	"strconv"

	"github.com/cellserver/cellserver/commands"
	"github.com/tidwall/redcon"
)

// maxKeptReplyBuf is the largest reply buffer kept after a flush; a bigger
// one, grown for a big reply, is given back.
const maxKeptReplyBuf = 64 << 10

// replyWriter is the commands.Writer of one connection: it appends replies
// to a buffer that the connection's driver sends once per batch of
// requests, in the RESP version the client speaks. It remembers where the
// current command's reply starts so that a panicking command's partial
// reply can be taken back. One lives in each session and is reused for
// every command: writing a reply allocates nothing once the buffer has
// grown to a batch's size.
//
// A command may pause (commands.Pauser): its place in out is reserved, the
// replies after it are held, and out is sent only up to the first reply
// still paused. When a paused reply completes, applyCompleted writes it at
// its place, in request order.
type replyWriter struct {
	sess  *session
	out   []byte // replies not yet sent
	sentN int    // how much of out the socket has taken
	start int    // where the current command's reply starts in out
	proto int    // the client's RESP version
	held  []*pausedReply
	// free are paused replies written, for the next pauses to reuse: a
	// paused command then costs no allocation of its own.
	free []*pausedReply
	// paused: the command being dispatched paused (session.run then
	// applies what completed during it).
	paused bool
	tmp    [64]byte // scratch for headers and text
	// lastName is the name of the last command paused, lastRaw as the
	// client sent it: a pipeline pauses the same command over and over.
	lastRaw, lastName string
}

// pausedReply is the place of a paused command's reply. Once the reply is
// written it is reused for a later pause of the same connection: the
// command completes it exactly once and keeps none after that
// (commands.Paused). A second completion is caught until the reuse, not
// after it.
type pausedReply struct {
	sess  *session
	at    int            // where its reply goes in out
	proto int            // the RESP version when it paused
	name  string         // the command's name, for a panic's error reply
	reply commands.Reply // set once it completes, under the session's mu
	// held: the reply is yet to be written (under the session's mu), so
	// that a completion of one already written is caught while it waits
	// for reuse.
	held bool
	// barrier: its command may not overlap (commands.FlagOverlap): while
	// it is held, no later command runs, whatever its own flags.
	barrier bool
	// dropped: its command panicked after pausing and was answered with
	// an error instead (under the session's mu), so that its completion,
	// whenever it comes, writes nothing.
	dropped bool
}

// Complete implements commands.Paused.
func (p *pausedReply) Complete(r commands.Reply) { p.sess.complete(p, r) }

var (
	_ commands.Writer        = (*replyWriter)(nil)
	_ commands.Pauser        = (*replyWriter)(nil)
	_ commands.ProtoSwitcher = (*replyWriter)(nil)
	_ commands.Pusher        = (*replyWriter)(nil)
)

// begin marks the start of a command's reply.
func (w *replyWriter) begin() { w.start = len(w.out) }

// discard takes back what the current command has written.
func (w *replyWriter) discard() { w.out = w.out[:w.start] }

// ready returns the replies the socket may take now: up to the first one
// still paused.
func (w *replyWriter) ready() []byte {
	end := len(w.out)
	if len(w.held) > 0 {
		end = w.held[0].at
	}
	return w.out[w.sentN:end]
}

// heldFull reports whether the replies held behind the first paused one,
// paused or written, number maxHeldCommands or take more than
// maxBatchReply bytes: the connection runs and reads nothing more until
// some complete.
func (w *replyWriter) heldFull() bool {
	return len(w.held) >= maxHeldCommands || (len(w.held) > 0 && len(w.out)-w.held[0].at > maxBatchReply)
}

// pending reports whether a paused reply has yet to be written.
func (w *replyWriter) pending() bool { return len(w.held) > 0 }

// mayOverlap reports whether a command that may overlap can run now: no
// paused reply is held, or only ones of commands that may overlap too. A
// command that may not overlap runs only when nothing is held, so that if
// one is held it is the first.
func (w *replyWriter) mayOverlap() bool { return len(w.held) == 0 || !w.held[0].barrier }

// sent records that the socket took n more bytes of ready, and empties the
// buffer once all of it is sent. Otherwise the rest moves to the buffer's
// start once the held replies come next, or once the part sent is as big
// as the rest: a client that takes its replies while it sends more
// requests may never have them all sent, and the buffer must not keep
// what it took.
func (w *replyWriter) sent(n int) {
	w.sentN += n
	if len(w.held) == 0 && w.sentN == len(w.out) {
		w.out, w.start, w.sentN = w.out[:0], 0, 0
		if cap(w.out) > maxKeptReplyBuf {
			w.out = nil // given back, grown for a big reply
		}
		return
	}
	if (len(w.held) > 0 && w.sentN == w.held[0].at) || w.sentN >= len(w.out)-w.sentN {
		w.out = w.out[:copy(w.out, w.out[w.sentN:])]
		for _, p := range w.held {
			p.at -= w.sentN
		}
		w.start, w.sentN = max(w.start-w.sentN, 0), 0
	}
}

// SwitchProto makes the replies from now on speak RESP proto (HELLO).
func (w *replyWriter) SwitchProto(proto int) { w.proto = proto }

// Pause implements commands.Pauser.
func (w *replyWriter) Pause() commands.Paused {
	var p *pausedReply
	if n := len(w.free); n > 0 {
		p, w.free[n-1] = w.free[n-1], nil
		w.free = w.free[:n-1]
	} else {
		p = new(pausedReply)
	}
	// The command hands p to whatever completes it only after this.
	*p = pausedReply{sess: w.sess, at: len(w.out), proto: w.proto, name: w.pausedName(), held: true}
	p.barrier = !w.sess.currentOverlaps()
	w.held = append(w.held, p)
	if !w.paused {
		w.paused = true
		w.sess.pausing()
	}
	return p
}

// Push implements commands.Pusher: unlike the other methods, it may be
// called from any goroutine.
func (w *replyWriter) Push(line []byte) bool { return w.sess.push(line) }

// pausedName is commandName of the running command, without allocating
// when it is the one paused last.
func (w *replyWriter) pausedName() string {
	args := w.sess.current
	if len(args) == 0 {
		return ""
	}
	if w.lastName == "" || string(args[0]) != w.lastRaw {
		w.lastRaw, w.lastName = string(args[0]), commandName(args)
	}
	return w.lastName
}

// dropPaused takes back the paused replies after the first n, those of a
// command that panicked after pausing: they write nothing, and hold back
// nothing, when their completions come. They are not reused, since a
// completion may still be on its way.
func (w *replyWriter) dropPaused(n int) {
	if len(w.held) <= n {
		return
	}
	w.sess.mu.Lock()
	for i, p := range w.held[n:] {
		p.dropped = true
		w.held[n+i] = nil
	}
	w.sess.mu.Unlock()
	w.held = w.held[:n]
}

// applyCompleted writes, in order, the paused replies at the head of the
// line whose commands have completed.
func (w *replyWriter) applyCompleted() {
	for len(w.held) > 0 {
		p := w.held[0]
		w.sess.mu.Lock()
		done := *p
		if done.reply != nil {
			*p = pausedReply{sess: p.sess} // written below: free for reuse
		}
		w.sess.mu.Unlock()
		if done.reply == nil {
			return
		}
		// Shift the rest down rather than reslicing from the front, so
		// that the array is kept for the next pauses instead of regrown.
		rest := copy(w.held, w.held[1:])
		w.held[rest] = nil
		w.held = w.held[:rest]
		n := w.writeAt(&done, done.reply)
		for _, q := range w.held {
			q.at += n
		}
		w.free = append(w.free, p)
	}
}

// writeAt writes p's reply at p's place, moving the replies held after
// it, and returns its length.
func (w *replyWriter) writeAt(p *pausedReply, reply commands.Reply) int {
	held := len(w.out) // the replies after p are out[p.at:held]
	proto := w.proto
	w.proto = p.proto
	func() {
		w.start = held
		defer func() {
			if r := recover(); r != nil {
				w.sess.recovered(r, p.name)
			}
		}()
		reply.WriteReply(w)
	}()
	w.proto = proto
	w.start = len(w.out)
	// Rotate out[p.at:] so that the new reply comes first.
	reverse(w.out[p.at:held])
	reverse(w.out[held:])
	reverse(w.out[p.at:])
	return len(w.out) - held
}

// reverse reverses b in place.
func reverse(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}

func (w *replyWriter) resp3() bool { return w.proto == 3 }

// WriteError writes an error reply; CR and LF become spaces.
func (w *replyWriter) WriteError(msg string) {
	w.out = redcon.AppendError(w.out, msg) // CR and LF become spaces
}

// WriteString writes a simple string reply; CR and LF become spaces.
func (w *replyWriter) WriteString(s string) {
	w.out = redcon.AppendString(w.out, s) // CR and LF become spaces
}

// WriteBulk writes a bulk string.
func (w *replyWriter) WriteBulk(b []byte) {
	w.out = redcon.AppendBulk(w.out, b)
}

// WriteBulkString writes a bulk string.
func (w *replyWriter) WriteBulkString(s string) {
	w.out = redcon.AppendBulkString(w.out, s)
}

// WriteInt writes an integer reply.
func (w *replyWriter) WriteInt(n int64) {
	w.out = redcon.AppendInt(w.out, n)
}

// WriteArray writes an array header.
func (w *replyWriter) WriteArray(n int) {
	w.out = redcon.AppendArray(w.out, n)
}

// WriteMap writes a RESP3 map header, or in RESP2 an array of 2n.
func (w *replyWriter) WriteMap(n int) {
	if w.resp3() {
		w.header('%', int64(n))
		return
	}
	w.WriteArray(2 * n)
}

// WriteSet writes a RESP3 set header, or in RESP2 an array header.
func (w *replyWriter) WriteSet(n int) {
	if w.resp3() {
		w.header('~', int64(n))
		return
	}
	w.WriteArray(n)
}

// WriteNull writes RESP3's null, or RESP2's null bulk string ($-1).
func (w *replyWriter) WriteNull() {
	if w.resp3() {
		w.raw(append(w.tmp[:0], '_', '\r', '\n'))
		return
	}
	w.out = redcon.AppendNull(w.out)
}

// WriteNullArray writes RESP2's null array (*-1), or RESP3's null.
func (w *replyWriter) WriteNullArray() {
	if w.resp3() {
		w.WriteNull()
		return
	}
	w.WriteArray(-1)
}

// WriteVerbatim writes a RESP3 verbatim string of format "txt", or in RESP2
// a bulk string.
func (w *replyWriter) WriteVerbatim(s string) {
	if !w.resp3() {
		w.WriteBulkString(s)
		return
	}
	b := append(w.tmp[:0], '=')
	b = strconv.AppendInt(b, int64(len(s))+4, 10)
	b = append(b, "\r\ntxt:"...)
	for len(s) > 0 {
		if len(b) == cap(b) {
			w.raw(b)
			b = w.tmp[:0]
		}
		k := copy(b[len(b):cap(b)], s)
		b, s = b[:len(b)+k], s[k:]
	}
	if cap(b)-len(b) < 2 {
		w.raw(b)
		b = w.tmp[:0]
	}
	w.raw(append(b, '\r', '\n'))
}

// header writes a type byte, n and CR LF.
func (w *replyWriter) header(kind byte, n int64) {
	b := append(w.tmp[:0], kind)
	b = strconv.AppendInt(b, n, 10)
	w.raw(append(b, '\r', '\n'))
}

// raw writes b as it is.
func (w *replyWriter) raw(b []byte) {
	w.out = append(w.out, b...)
}
