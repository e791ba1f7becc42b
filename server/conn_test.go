package server

import (
	"io"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
)

// newTestConn returns a connection's command path over a discarding writer.
func newTestConn(h Handler) *conn {
	s := New(Config{Handler: h, Logger: newTestLogger()})
	client := commands.NewClient(1, "127.0.0.1:1", "127.0.0.1:2", time.Unix(1700000000, 0))
	return &conn{srv: s, client: client, w: replyWriter{dst: io.Discard, client: client}}
}

func TestCommandPathAllocatesNothing(t *testing.T) {
	c := newTestConn(HandlerFunc(func(w commands.Writer, _ *commands.Client, args [][]byte) {
		w.WriteArray(2)
		w.WriteInt(1)
		w.WriteBulk(args[1])
	}))
	args := [][]byte{[]byte("GET"), []byte("key")}
	allocs := testing.AllocsPerRun(1000, func() {
		c.run(args)
		c.publish()
		_ = c.w.flush()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per command, want 0", allocs)
	}
}

func BenchmarkCommandPath(b *testing.B) {
	c := newTestConn(HandlerFunc(func(w commands.Writer, _ *commands.Client, _ [][]byte) {
		w.WriteArray(5)
		for i := range 5 {
			w.WriteInt(int64(i))
		}
	}))
	args := [][]byte{[]byte("CL.THROTTLE"), []byte("key"), []byte("15"), []byte("30"), []byte("60")}
	for b.Loop() {
		c.run(args)
		c.publish()
		_ = c.w.flush()
	}
}
