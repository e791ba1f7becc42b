package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
)

// msgStoreFailed answers a keyspace command the shared store did not
// carry out (it is down, or did not answer within the timeout).
const msgStoreFailed = "ERR the shared store failed: %s"

// await runs start, which begins work that finishes on another goroutine
// and passes it the function that completes the command's reply. Where the
// connection can pause the command (its Writer is a Pauser), await returns
// at once and the reply goes out in order when finish is called; otherwise
// (a test's writer) it waits here for finish and writes the reply to w.
// Inside EXEC in shared mode, each such command starts only once the one
// queued before it has finished, so that the transaction's commands act on
// the store in order.
func (cx *Context) await(w Writer, start func(finish func(write func(Writer)))) {
	if cx.chain != nil {
		start = cx.chain.after(start)
	}
	if p := AsPauser(w); p != nil {
		// The command's outcome is counted when its reply is written,
		// not when its handler returns.
		cx.later = true
		t, paused := cx.tally(), p.Pause()
		start(func(write func(Writer)) {
			paused.Complete(laterReply{t, write})
		})
		return
	}
	ch := make(chan func(Writer), 1)
	start(func(write func(Writer)) { ch <- write })
	(<-ch)(w)
}

// erred counts an error answered by a command that finished later, as
// tally.outcome counts one it sees written.
func (t tally) erred() {
	if t.m != nil {
		t.m.stripes[t.stripe].errors.Add(1)
	}
}

// chain orders the commands of one EXEC that finish later: each starts
// once the one before it has finished. Those waiting are kept as their
// starts, with no goroutine of their own: one goroutine at a time runs the
// chain, however many commands the transaction queued. While it has a
// command started or waiting it counts among the Commands' workers, so
// that Close waits for the whole transaction.
type chain struct {
	c  *Commands
	mu sync.Mutex
	// waiting are the starts of the commands not started yet, in order;
	// running: one of the chain's commands has started and not finished.
	waiting []func()
	running bool
	// starting: pump is starting a command; finished: it finished meanwhile,
	// so that pump starts the next itself.
	starting, finished bool
}

// after returns start made to wait for the chain's commands before it.
func (ch *chain) after(start func(finish func(func(Writer)))) func(finish func(func(Writer))) {
	return func(finish func(func(Writer))) {
		ch.mu.Lock()
		ch.waiting = append(ch.waiting, func() {
			start(func(write func(Writer)) {
				ch.done() // the next may start: the replies keep their order
				finish(write)
			})
		})
		if ch.running {
			ch.mu.Unlock()
			return
		}
		ch.running = true
		ch.c.workers.Add(1) // until pump finds none left
		ch.mu.Unlock()
		ch.pump()
	}
}

// pump starts the waiting commands one after the other, for as long as
// each finishes while it is being started; one that finishes later
// starts the next in done.
func (ch *chain) pump() {
	for {
		ch.mu.Lock()
		if len(ch.waiting) == 0 {
			ch.running = false
			ch.mu.Unlock()
			ch.c.workers.Done()
			return
		}
		run := ch.waiting[0]
		ch.waiting[0] = nil
		ch.waiting = ch.waiting[1:]
		ch.starting, ch.finished = true, false
		ch.mu.Unlock()
		run()
		ch.mu.Lock()
		ch.starting = false
		again := ch.finished
		ch.mu.Unlock()
		if !again {
			return
		}
	}
}

// done records that the running command finished, and starts the next on
// a goroutine of its own (the caller may be the store's), unless pump is
// still starting it and will.
func (ch *chain) done() {
	ch.mu.Lock()
	if ch.starting {
		ch.finished = true
		ch.mu.Unlock()
		return
	}
	ch.mu.Unlock()
	go ch.pump() // counted among the workers since the chain started
}

// offload runs fn on a goroutine of its own, against the store, within
// Options.StoreTimeout, and sends the reply it writes once it is done: the
// connection's event loop serves other clients meanwhile. fn must not touch
// the client's state or the command's arguments (copy what it needs first).
func (cx *Context) offload(w Writer, fn func(ctx context.Context, st Store, w Writer)) {
	c := cx.cmds
	st, timeout := c.opts.Store, c.opts.StoreTimeout
	cx.await(w, func(finish func(func(Writer))) {
		c.workers.Add(1)
		go func() {
			defer c.workers.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			var rec recorder
			fn(ctx, st, &rec)
			finish(rec.replay)
		}()
	})
}

// storeFailed is the reply to a keyspace command the store did not carry
// out.
func storeFailed(err error) string {
	var re ReplyError
	if errors.As(err, &re) { // a refusal, not a failure
		return oneLine(re.Reply())
	}
	// The context's deadline, or the connection's deadline that go-redis
	// sets from it.
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		err = errors.New("no answer within the timeout (--shared-timeout)")
	}
	return oneLine(fmt.Sprintf(msgStoreFailed, err))
}

// recorder is a Writer that keeps the replies written to it, for replay on
// the connection once an offloaded command is done.
type recorder struct{ calls []func(Writer) }

var _ Writer = (*recorder)(nil)

func (r *recorder) replay(w Writer) {
	for _, call := range r.calls {
		call(w)
	}
}

func (r *recorder) add(f func(Writer)) { r.calls = append(r.calls, f) }

func (r *recorder) WriteError(msg string) { r.add(func(w Writer) { w.WriteError(msg) }) }
func (r *recorder) WriteString(s string)  { r.add(func(w Writer) { w.WriteString(s) }) }
func (r *recorder) WriteBulk(b []byte) {
	b = append([]byte(nil), b...)
	r.add(func(w Writer) { w.WriteBulk(b) })
}
func (r *recorder) WriteBulkString(s string) { r.add(func(w Writer) { w.WriteBulkString(s) }) }
func (r *recorder) WriteInt(n int64)         { r.add(func(w Writer) { w.WriteInt(n) }) }
func (r *recorder) WriteArray(n int)         { r.add(func(w Writer) { w.WriteArray(n) }) }
func (r *recorder) WriteMap(n int)           { r.add(func(w Writer) { w.WriteMap(n) }) }
func (r *recorder) WriteSet(n int)           { r.add(func(w Writer) { w.WriteSet(n) }) }
func (r *recorder) WriteNull()               { r.add(Writer.WriteNull) }
func (r *recorder) WriteNullArray()          { r.add(Writer.WriteNullArray) }
func (r *recorder) WriteVerbatim(s string)   { r.add(func(w Writer) { w.WriteVerbatim(s) }) }
