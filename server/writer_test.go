package server

import (
	"bytes"
	"strings"
	"testing"
)

// testWriter is a replyWriter whose flush moves its ready bytes to buf.
type testWriter struct {
	*replyWriter
	buf *bytes.Buffer
}

func (w testWriter) flush() error {
	b := w.ready()
	w.buf.Write(b)
	w.sent(len(b))
	return nil
}

func (w testWriter) buffered() int { return len(w.ready()) }

// newTestWriter returns a replyWriter over a buffer, for a client speaking
// RESP proto.
func newTestWriter(proto int) (testWriter, *bytes.Buffer) {
	var buf bytes.Buffer
	return testWriter{&replyWriter{proto: proto}, &buf}, &buf
}

func TestWriterDiscardTakesBackEveryMethod(t *testing.T) {
	for _, proto := range []int{2, 3} {
		for _, method := range []string{"error", "string", "bulk", "bulkstring", "int", "array", "map", "set", "null", "nullarray", "verbatim"} {
			w, buf := newTestWriter(proto)
			w.begin()
			w.WriteInt(7)
			w.begin()
			writeSample(w, method)
			if w.buffered() == len(":7\r\n") {
				t.Errorf("RESP%d %s: wrote nothing", proto, method)
			}
			w.discard()
			if err := w.flush(); err != nil {
				t.Fatal(err)
			}
			if buf.String() != ":7\r\n" {
				t.Errorf("RESP%d %s: %q after discard, want the reply before it", proto, method, buf)
			}
		}
	}
}

func TestWriterVerbatimLongerThanScratch(t *testing.T) {
	w, buf := newTestWriter(3)
	long := string(bytes.Repeat([]byte("abcdefg"), 40))
	w.WriteVerbatim(long)
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	want := "=284\r\ntxt:" + long + "\r\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf, want)
	}
}

func TestWriterDiscardTakesBackOneCommand(t *testing.T) {
	w, buf := newTestWriter(2)
	w.begin()
	w.WriteInt(1)
	w.begin()
	w.WriteArray(3)
	w.WriteBulkString("partial")
	w.WriteVerbatim("x")
	w.discard()
	w.WriteError("ERR e")
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if want := ":1\r\n-ERR e\r\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf, want)
	}
}

func TestWriterHotPathAllocatesNothing(t *testing.T) {
	w, buf := newTestWriter(3)
	val := []byte("value")
	allocs := testing.AllocsPerRun(1000, func() {
		w.begin()
		w.WriteArray(5)
		w.WriteInt(0)
		w.WriteInt(1234567)
		w.WriteBulk(val)
		w.WriteBulkString("key")
		w.WriteMap(1)
		w.WriteString("OK")
		w.WriteError("ERR x")
		w.WriteNull()
		_ = w.flush()
		buf.Reset()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per reply, want 0", allocs)
	}
}

// TestWriterKeepsNoSentBytes: a client that takes part of its replies as
// more are written never has them all sent; the buffer holds what is
// left to send, not everything since it was last empty.
func TestWriterKeepsNoSentBytes(t *testing.T) {
	w, _ := newTestWriter(2)
	var sent []byte
	reply := "+" + strings.Repeat("x", 97) + "\r\n" // 100 bytes
	for range 10000 {
		w.WriteString(reply[1 : len(reply)-2])
		b := w.ready()
		n := len(b) - 150 // all but one and a half replies
		if n <= 0 {
			continue
		}
		sent = append(sent, b[:n]...)
		w.sent(n)
		if cap(w.out) > 4096 {
			t.Fatalf("after %d bytes sent, the buffer has grown to %d bytes for %d unsent", len(sent), cap(w.out), len(w.ready()))
		}
	}
	sent = append(sent, w.ready()...)
	if want := strings.Repeat(reply, 10000); string(sent) != want {
		t.Fatalf("sent %d bytes, not the %d of the replies in order", len(sent), len(want))
	}
}
