package commands

// Writer is where a handler writes its reply. The server implements it over a
// connection and speaks RESP2 or RESP3 as the client chose with HELLO;
// tests implement it over a buffer.
type Writer interface {
	// WriteError writes an error reply; msg starts with its code ("ERR ...").
	WriteError(msg string)
	// WriteString writes a simple string reply ("+OK").
	WriteString(s string)
	// WriteBulk writes a binary-safe bulk string.
	WriteBulk(b []byte)
	// WriteBulkString writes a bulk string.
	WriteBulkString(s string)
	// WriteInt writes an integer reply.
	WriteInt(n int64)
	// WriteArray writes the header of an array of n elements.
	WriteArray(n int)
	// WriteMap writes the header of a map of n pairs: a RESP3 map, or a flat
	// array of 2n elements in RESP2.
	WriteMap(n int)
	// WriteSet writes the header of a set of n elements: a RESP3 set, or an
	// array in RESP2.
	WriteSet(n int)
	// WriteNull writes the null reply of the client's protocol.
	WriteNull()
	// WriteNullArray writes RESP2's null array (*-1), or the RESP3 null.
	WriteNullArray()
	// WriteVerbatim writes text: a RESP3 verbatim string of format "txt",
	// or a bulk string in RESP2.
	WriteVerbatim(s string)
}

// Pauser is implemented by a Writer whose connection can let the running
// command finish later: a command waiting on something slow (a round trip
// to a store) pauses instead of holding its connection's driver, which
// meanwhile serves other connections. Use AsPauser to find it behind the
// Writer a handler is given.
type Pauser interface {
	// Pause reserves the running command's place among the connection's
	// replies and returns it; the command then writes nothing more to this
	// Writer.
	Pause() Paused
}

// Paused is a paused command's place among its connection's replies.
type Paused interface {
	// Complete completes the command: it must be called exactly once, from
	// any goroutine (even before Pause's caller returns). r.WriteReply runs
	// later on the connection's driver (its goroutine or its event loop)
	// with a Writer positioned at the reserved place, in the RESP version
	// the client spoke when Pause was called. A nil r writes nothing. Once
	// its reply is written, the Paused may be handed to a later pause of
	// the connection: a command keeps none after completing it.
	Complete(r Reply)
}

// Reply writes a paused command's reply once it has completed. A type that
// carries a command from its pause to its reply implements it, so that
// completing costs no allocation; ReplyFunc makes one of a function.
type Reply interface {
	WriteReply(w Writer)
}

// ReplyFunc is a Reply written by a function.
type ReplyFunc func(w Writer)

// WriteReply implements Reply.
func (f ReplyFunc) WriteReply(w Writer) { f(w) }

// AsPauser returns the Pauser behind w, the Writer a handler was given, or
// nil when its connection cannot pause.
func AsPauser(w Writer) Pauser {
	for {
		switch v := w.(type) {
		case Pauser:
			return v
		case *errorCounter:
			w = v.Writer
		default:
			return nil
		}
	}
}

// ProtoSwitcher is implemented by a Writer that writes in the RESP version
// its client speaks: HELLO and RESET call SwitchProto before their reply,
// so that the reply is in the version they switch to, as in Redis.
type ProtoSwitcher interface {
	SwitchProto(proto int)
}

// switchProto tells w, if it follows the client's RESP version, that the
// client now speaks proto.
func switchProto(w Writer, proto int) {
	for {
		switch v := w.(type) {
		case ProtoSwitcher:
			v.SwitchProto(proto)
			return
		case *errorCounter:
			w = v.Writer
		default:
			return
		}
	}
}
