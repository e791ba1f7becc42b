package commands

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// respWriter is a Writer that records the exact RESP bytes a handler writes,
// in RESP2 or RESP3.
type respWriter struct {
	proto int
	buf   bytes.Buffer
}

func (r *respWriter) line(prefix byte, s string) {
	r.buf.WriteByte(prefix)
	r.buf.WriteString(s)
	r.buf.WriteString("\r\n")
}
func (r *respWriter) WriteError(msg string) { r.line('-', msg) }
func (r *respWriter) WriteString(s string)  { r.line('+', s) }
func (r *respWriter) WriteBulk(b []byte)    { r.WriteBulkString(string(b)) }
func (r *respWriter) WriteInt(n int64)      { r.line(':', strconv.FormatInt(n, 10)) }
func (r *respWriter) WriteArray(n int)      { r.line('*', strconv.Itoa(n)) }
func (r *respWriter) WriteBulkString(s string) {
	r.line('$', strconv.Itoa(len(s)))
	r.buf.WriteString(s)
	r.buf.WriteString("\r\n")
}
func (r *respWriter) WriteMap(n int) {
	if r.proto == 3 {
		r.line('%', strconv.Itoa(n))
		return
	}
	r.WriteArray(2 * n)
}
func (r *respWriter) WriteSet(n int) {
	if r.proto == 3 {
		r.line('~', strconv.Itoa(n))
		return
	}
	r.WriteArray(n)
}
func (r *respWriter) WriteNull() {
	if r.proto == 3 {
		r.buf.WriteString("_\r\n")
		return
	}
	r.buf.WriteString("$-1\r\n")
}
func (r *respWriter) WriteNullArray() {
	if r.proto == 3 {
		r.buf.WriteString("_\r\n")
		return
	}
	r.buf.WriteString("*-1\r\n")
}
func (r *respWriter) WriteVerbatim(s string) {
	if r.proto == 3 {
		r.line('=', strconv.Itoa(len(s)+4))
		r.buf.WriteString("txt:" + s + "\r\n")
		return
	}
	r.WriteBulkString(s)
}

// harness runs commands for one client against a fresh engine on a fake clock.
type harness struct {
	t      *testing.T
	clock  *engine.ManualClock
	eng    *engine.Engine
	cmds   *Commands
	client *Client
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clock := engine.NewManualClock(time.Unix(1_795_336_191, 675_642_640))
	eng := engine.New(engine.Options{Now: clock.Now, SweepInterval: -1})
	t.Cleanup(eng.Close)
	return &harness{
		t: t, clock: clock, eng: eng,
		cmds:   New(Options{Engine: eng, Version: "test"}),
		client: NewClient(1, "127.0.0.1:50000", "127.0.0.1:6379", clock.Now()),
	}
}

// do runs one command and returns the reply bytes.
func (h *harness) do(args ...string) string {
	h.t.Helper()
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	w := &respWriter{proto: h.client.Proto}
	h.cmds.Dispatch(w, h.client, bargs)
	return w.buf.String()
}

// ints encodes CL.THROTTLE's five-integer reply.
func ints(n ...int64) string {
	var b bytes.Buffer
	b.WriteString("*" + strconv.Itoa(len(n)) + "\r\n")
	for _, v := range n {
		b.WriteString(":" + strconv.FormatInt(v, 10) + "\r\n")
	}
	return b.String()
}
