package commands

// Dropper is implemented by a Reply that counts what its command answered
// as it is written (a paused decision's outcome, its refusal for
// THROTTLE.TOP, its error): Drop counts it all the same when the reply
// will never be written, its connection having closed first, so that the
// decisions the store made for a client gone are not lost from INFO and
// /metrics. Drop may be called on any goroutine, once, instead of
// WriteReply.
type Dropper interface {
	Drop()
}

// nowhere is a Writer that writes nothing: a dropped reply is counted by
// writing it there.
type nowhere struct{}

var _ Writer = nowhere{}

func (nowhere) WriteError(string)      {}
func (nowhere) WriteString(string)     {}
func (nowhere) WriteBulk([]byte)       {}
func (nowhere) WriteBulkString(string) {}
func (nowhere) WriteInt(int64)         {}
func (nowhere) WriteArray(int)         {}
func (nowhere) WriteMap(int)           {}
func (nowhere) WriteSet(int)           {}
func (nowhere) WriteNull()             {}
func (nowhere) WriteNullArray()        {}
func (nowhere) WriteVerbatim(string)   {}

// laterReply is the reply of a command that finished later (await): write
// writes it, and t counts its outcome.
type laterReply struct {
	t     tally
	write func(Writer)
}

// WriteReply implements Reply.
func (r laterReply) WriteReply(w Writer) { r.t.outcome(w, r.write) }

// Drop implements Dropper.
func (r laterReply) Drop() { r.t.outcome(nowhere{}, r.write) }
