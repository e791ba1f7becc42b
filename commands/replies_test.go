package commands

import (
	"strconv"
	"strings"
	"testing"
)

// Helpers that spell expected RESP replies.

func wantBulk(s string) string      { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func wantStatus(s string) string    { return "+" + s + "\r\n" }
func wantErr(s string) string       { return "-" + s + "\r\n" }
func wantInt(n int64) string        { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
func wantArray(n int) string        { return "*" + strconv.Itoa(n) + "\r\n" }
func wantMap3(n int) string         { return "%" + strconv.Itoa(n) + "\r\n" }
func wantVerbatim(s string) string  { return "=" + strconv.Itoa(len(s)+4) + "\r\ntxt:" + s + "\r\n" }
func wantBulks(ss ...string) string { return joinReplies(ss, wantBulk) }

func joinReplies(ss []string, f func(string) string) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(f(s))
	}
	return b.String()
}

// liveWriter is a respWriter that follows the client's protocol at every
// write, as the server's writer does, so a HELLO reply is in the protocol
// it switches to.
type liveWriter struct {
	*respWriter
	client *Client
}

func (l liveWriter) sync()                  { l.proto = l.client.Proto }
func (l liveWriter) WriteMap(n int)         { l.sync(); l.respWriter.WriteMap(n) }
func (l liveWriter) WriteSet(n int)         { l.sync(); l.respWriter.WriteSet(n) }
func (l liveWriter) WriteNull()             { l.sync(); l.respWriter.WriteNull() }
func (l liveWriter) WriteNullArray()        { l.sync(); l.respWriter.WriteNullArray() }
func (l liveWriter) WriteVerbatim(s string) { l.sync(); l.respWriter.WriteVerbatim(s) }

// doLive runs one command with a liveWriter and returns the reply bytes.
func (h *harness) doLive(args ...string) string {
	h.t.Helper()
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	w := liveWriter{&respWriter{proto: h.client.Proto}, h.client}
	h.cmds.Dispatch(w, h.client, bargs)
	return w.buf.String()
}

// stubHost is a Host with a fixed set of clients and counters.
type stubHost struct {
	clients []ClientInfo
	stats   HostStats
}

func (f *stubHost) Clients() []ClientInfo { return f.clients }
func (f *stubHost) Stats() HostStats      { return f.stats }

// withOpts rebuilds the harness's commands with opts (Engine is filled in).
func (h *harness) withOpts(opts Options) *harness {
	opts.Engine = h.eng
	if opts.Version == "" {
		opts.Version = "test"
	}
	h.cmds = New(opts)
	return h
}

// replyStep is one command and its exact expected reply.
type replyStep struct {
	args []string
	want string
}

// run runs steps in order on h, comparing exact reply bytes.
func (h *harness) runSteps(steps []replyStep) {
	h.t.Helper()
	for _, s := range steps {
		if got := h.do(s.args...); got != s.want {
			h.t.Errorf("%q:\n got %q\nwant %q", s.args, got, s.want)
		}
	}
}

func TestLiveWriterFollowsProto(t *testing.T) {
	h := newHarness(t)
	if got, want := h.doLive("HELLO", "3"), wantMap3(7); !strings.HasPrefix(got, want) {
		t.Fatalf("HELLO 3 = %q, want prefix %q", got, want)
	}
}
