package server

import (
	"io"
	"strconv"

	"github.com/cellserver/cellserver/commands"
	"github.com/tidwall/redcon"
)

// maxKeptReplyBuf is the largest reply buffer kept after a flush; a bigger
// one, grown for a big reply, is given back.
const maxKeptReplyBuf = 64 << 10

// replyWriter is the commands.Writer of one connection: it appends replies
// to a buffer that the connection flushes once per batch of requests, in
// the RESP version the client speaks (read at every write, so HELLO 3
// answers in RESP3). It remembers where the current command's reply starts
// so that a panicking command's partial reply can be taken back. One lives
// in each connection and is reused for every command: writing a reply
// allocates nothing once the buffer has grown to a batch's size.
type replyWriter struct {
	dst    io.Writer // the socket
	out    []byte    // replies not yet flushed
	start  int       // where the current command's reply starts in out
	client *commands.Client
	tmp    [64]byte // scratch for headers and text
}

var _ commands.Writer = (*replyWriter)(nil)

// begin marks the start of a command's reply.
func (w *replyWriter) begin() { w.start = len(w.out) }

// discard takes back what the current command has written.
func (w *replyWriter) discard() { w.out = w.out[:w.start] }

// buffered is how many bytes wait to be flushed.
func (w *replyWriter) buffered() int { return len(w.out) }

// flush writes the buffered replies in one write, if there are any.
func (w *replyWriter) flush() error {
	if len(w.out) == 0 {
		return nil
	}
	_, err := w.dst.Write(w.out)
	w.reset()
	return err
}

// reset empties the buffer once its replies are sent, giving back one
// grown past maxKeptReplyBuf.
func (w *replyWriter) reset() {
	w.out, w.start = w.out[:0], 0
	if cap(w.out) > maxKeptReplyBuf {
		w.out = nil
	}
}

func (w *replyWriter) resp3() bool { return w.client.Proto == 3 }

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
