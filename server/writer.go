package server

import (
	"strconv"

	"github.com/cellserver/cellserver/commands"
	"github.com/tidwall/redcon"
)

// replyWriter is the commands.Writer of one connection: it writes replies
// into redcon's output buffer, which redcon flushes once per batch, in the
// RESP version the client speaks (read at every write, so HELLO 3 answers
// in RESP3). It counts the bytes of the current command's reply so that a
// panicking command's partial reply can be taken back. One lives in each
// connection and is reused for every command: writing a reply allocates
// nothing.
type replyWriter struct {
	out    *redcon.Writer
	client *commands.Client
	n      int      // bytes written since the command started
	tmp    [64]byte // scratch for headers and text
}

var _ commands.Writer = (*replyWriter)(nil)

// begin marks the start of a command's reply.
func (w *replyWriter) begin() { w.n = 0 }

// discard takes back what the current command has written.
func (w *replyWriter) discard() {
	if w.n > 0 {
		if b := w.out.Buffer(); len(b) >= w.n {
			w.out.SetBuffer(b[:len(b)-w.n])
		}
	}
	w.n = 0
}

func (w *replyWriter) resp3() bool { return w.client.Proto == 3 }

// WriteError writes an error reply; CR and LF become spaces.
func (w *replyWriter) WriteError(msg string) {
	w.out.WriteError(msg) // redcon replaces CR and LF, keeping the length
	w.n += len(msg) + 3
}

// WriteString writes a simple string reply; CR and LF become spaces.
func (w *replyWriter) WriteString(s string) {
	w.out.WriteString(s) // redcon replaces CR and LF, keeping the length
	w.n += len(s) + 3
}

// WriteBulk writes a bulk string.
func (w *replyWriter) WriteBulk(b []byte) {
	w.out.WriteBulk(b)
	w.n += w.headerLen(int64(len(b))) + len(b) + 2
}

// WriteBulkString writes a bulk string.
func (w *replyWriter) WriteBulkString(s string) {
	w.out.WriteBulkString(s)
	w.n += w.headerLen(int64(len(s))) + len(s) + 2
}

// WriteInt writes an integer reply.
func (w *replyWriter) WriteInt(n int64) {
	w.out.WriteInt64(n)
	w.n += w.headerLen(n)
}

// WriteArray writes an array header.
func (w *replyWriter) WriteArray(n int) {
	w.out.WriteArray(n)
	w.n += w.headerLen(int64(n))
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
	w.out.WriteNull()
	w.n += 5
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

// headerLen is the length of a one-letter header carrying n ("$5\r\n").
func (w *replyWriter) headerLen(n int64) int {
	return len(strconv.AppendInt(w.tmp[:0], n, 10)) + 3
}

// raw writes b as it is.
func (w *replyWriter) raw(b []byte) {
	w.out.WriteRaw(b)
	w.n += len(b)
}
