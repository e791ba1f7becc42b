package server

import (
	"bytes"
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
