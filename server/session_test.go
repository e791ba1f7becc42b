package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
)

// scriptSession is a commands.Session for the session's own tests:
//
//	PING        +PONG, may overlap a paused command
//	ECHO x      $x
//	HOLD        pauses; the test completes it (+H<n>, n counting from 0)
//	LATER       as HOLD, but may not overlap a paused command (a keyspace
//	            command run off the driver, in shared mode)
//	NOW         pauses and completes at once (+NOW), as a deny-cache hit
//	NOLAP       +NOLAP, may not overlap
//	BIG n       a bulk string of n bytes, may overlap
//	QUIT        +OK, and the connection ends
type scriptSession struct {
	holds []commands.Paused // the completions of the HOLDs, in order
	ran   []string
}

func (c *scriptSession) StartBatch(time.Time)      {}
func (c *scriptSession) Proto() int                { return 2 }
func (c *scriptSession) Errored(string)            {}
func (c *scriptSession) AuthRequired() bool        { return false }
func (c *scriptSession) Info() commands.ClientInfo { return commands.ClientInfo{ID: 1} }
func (c *scriptSession) Overlaps(args [][]byte) bool {
	name := string(args[0])
	return strings.EqualFold(name, "ping") || strings.EqualFold(name, "hold") || strings.EqualFold(name, "now") || strings.EqualFold(name, "big")
}

func (c *scriptSession) Dispatch(w commands.Writer, args [][]byte) commands.Effect {
	name := strings.ToUpper(string(args[0]))
	c.ran = append(c.ran, name)
	switch name {
	case "PING":
		w.WriteString("PONG")
	case "ECHO":
		w.WriteBulk(args[1])
	case "HOLD", "LATER":
		c.holds = append(c.holds, commands.AsPauser(w).Pause())
	case "NOW":
		commands.AsPauser(w).Pause().Complete(commands.ReplyFunc(func(w commands.Writer) { w.WriteString("NOW") }))
	case "NOLAP":
		w.WriteString("NOLAP")
	case "BIG":
		n, _ := strconv.Atoi(string(args[1]))
		w.WriteBulk(make([]byte, n))
	case "QUIT":
		w.WriteString("OK")
		return commands.EffectQuit
	}
	return 0
}

// fakeDriver counts what a session asks of its driver; socketReady is
// what it answers ready, and polled what ready was last asked about.
type fakeDriver struct {
	wakes, shuts int
	socketReady  bool
	polled       [2]bool // input, output
}

func (d *fakeDriver) wake()       { d.wakes++ }
func (d *fakeDriver) shutSocket() { d.shuts++ }
func (d *fakeDriver) ready(input, output bool) bool {
	d.polled = [2]bool{input, output}
	return d.socketReady
}

// sessionRig drives a session as a driver would, with byte slices and a
// clock the test moves.
type sessionRig struct {
	t      *testing.T
	s      *session
	cs     *scriptSession
	drv    *fakeDriver
	now    time.Time
	writes []string // each output the rig sent, as one write
}

func newSessionRig(t *testing.T, idle time.Duration) *sessionRig {
	srv := New(Config{Handler: &fakeHandler{}, Logger: newTestLogger(), IdleTimeout: idle})
	r := &sessionRig{t: t, cs: &scriptSession{}, drv: &fakeDriver{}, now: time.Unix(1700000000, 0)}
	r.s = newSession(srv, 1, "127.0.0.1:1", r.cs, r.drv, r.now)
	return r
}

// drive runs the session until it asks for anything but a write, sending
// every output whole, and returns that step.
func (r *sessionRig) drive() step {
	return r.driveWith(func() {
		out := r.s.output()
		r.writes = append(r.writes, string(out))
		r.s.sent(len(out))
	})
}

// driveFull runs the session as drive does, but with a socket that takes
// no output: the session goes on without it.
func (r *sessionRig) driveFull() step {
	return r.driveWith(func() { r.s.waitSending(r.now) })
}

// driveWith runs the session until it asks for anything but a write,
// calling write for each write it asks for, and returns that step.
func (r *sessionRig) driveWith(write func()) step {
	for {
		r.s.run(r.now)
		st := r.s.next(r.now)
		if st != stepWrite {
			return st
		}
		write()
	}
}

// feed hands the session b as one read.
func (r *sessionRig) feed(b string) {
	room := r.s.room()
	for len(room) < len(b) { // a big request arrives in several reads
		n := copy(room, b)
		r.s.received(n, nil)
		b = b[n:]
		room = r.s.room()
	}
	r.s.received(copy(room, b), nil)
}

// sessionStep is one thing that happens to a session, then the bytes it
// sends and what it asks next.
type sessionStep struct {
	feed     string        // bytes from the client
	eof      bool          // the client closed its side
	complete int           // complete HOLD number complete-1 (0: none), with +H<n>
	panics   bool          // the completion's write panics
	advance  time.Duration // the clock moves on, then the idle check runs
	// socketReady: during the idle check, the socket has bytes or room
	// for output that the driver, held up, has yet to move
	socketReady bool
	shutdown    bool
	close       bool
	// full: the socket takes no output during the step; writable: it
	// takes all of it again (reading bytes tries it again too)
	full, writable bool

	want     string // the bytes sent, all writes together
	wantStep step
	wantErr  error // with stepClose: why
}

func TestSession(t *testing.T) {
	const idle = time.Second
	big := "$70000\r\n" + strings.Repeat("\x00", 70000) + "\r\n"
	internal := "-" + fmt.Sprintf(commands.MsgInternal, "hold") + "\r\n"
	cases := []struct {
		name  string
		steps []sessionStep
		ran   string // the commands run, in order
	}{
		{"partial request", []sessionStep{
			{feed: "*1\r\n$4\r\nPI", wantStep: stepRead},
			{feed: "NG\r\n", want: "+PONG\r\n", wantStep: stepRead},
		}, "PING"},
		{"pipeline", []sessionStep{
			{feed: "PING\r\n" + cmd("ECHO", "a") + "PI", want: "+PONG\r\n$1\r\na\r\n", wantStep: stepRead},
		}, "PING ECHO"},
		{"paused reply holds later ones", []sessionStep{
			{feed: "HOLD\r\nPING\r\n", wantStep: stepRead},
			{feed: "PING\r\n", wantStep: stepRead},
			{complete: 1, want: "+H0\r\n+PONG\r\n+PONG\r\n", wantStep: stepRead},
		}, "HOLD PING PING"},
		{"two paused complete in reverse order", []sessionStep{
			{feed: "HOLD\r\nHOLD\r\nPING\r\n", wantStep: stepRead},
			{complete: 2, wantStep: stepRead},
			{complete: 1, want: "+H0\r\n+H1\r\n+PONG\r\n", wantStep: stepRead},
		}, "HOLD HOLD PING"},
		{"a command that may not overlap waits", []sessionStep{
			{feed: "PING\r\nHOLD\r\nNOLAP\r\nPING\r\n", want: "+PONG\r\n", wantStep: stepWait},
			{complete: 1, want: "+H0\r\n+NOLAP\r\n+PONG\r\n", wantStep: stepRead},
		}, "PING HOLD NOLAP PING"},
		{"a paused command that may not overlap holds back one that may", []sessionStep{
			{feed: "LATER\r\nPING\r\nHOLD\r\n", wantStep: stepWait},
			{complete: 1, want: "+H0\r\n+PONG\r\n", wantStep: stepRead},
			{complete: 2, want: "+H1\r\n", wantStep: stepRead},
		}, "LATER PING HOLD"},
		{"one that may not overlap runs alone, paused or not", []sessionStep{
			{feed: "HOLD\r\nLATER\r\nHOLD\r\n", wantStep: stepWait},
			{complete: 1, want: "+H0\r\n", wantStep: stepWait},
			{complete: 2, want: "+H1\r\n", wantStep: stepRead},
			{complete: 3, want: "+H2\r\n", wantStep: stepRead},
		}, "HOLD LATER HOLD"},
		{"a panic in the completion", []sessionStep{
			{feed: "HOLD\r\nPING\r\n", wantStep: stepRead},
			{complete: 1, panics: true, want: internal + "+PONG\r\n", wantStep: stepRead},
		}, "HOLD PING"},
		{"protocol error after valid requests", []sessionStep{
			{feed: "PING\r\n*x\r\nPING\r\n", want: "+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n",
				wantStep: stepClose, wantErr: &protocolError{}},
		}, "PING"},
		{"quit mid-batch", []sessionStep{
			{feed: "PING\r\nQUIT\r\nPING\r\n", want: "+PONG\r\n+OK\r\n", wantStep: stepClose, wantErr: errQuit},
		}, "PING QUIT"},
		{"quit behind a paused command waits for it", []sessionStep{
			{feed: "HOLD\r\nQUIT\r\nPING\r\n", wantStep: stepWait},
			{complete: 1, want: "+H0\r\n+OK\r\n", wantStep: stepClose, wantErr: errQuit},
		}, "HOLD QUIT"},
		{"client closes after its requests", []sessionStep{
			{feed: "PING\r\n", eof: true, want: "+PONG\r\n", wantStep: stepClose, wantErr: errEOFForTest},
		}, "PING"},
		{"client closes with a command paused", []sessionStep{
			{feed: "HOLD\r\n", eof: true, wantStep: stepWait},
			{complete: 1, want: "+H0\r\n", wantStep: stepClose, wantErr: errEOFForTest},
		}, "HOLD"},
		{"idle timeout", []sessionStep{
			{feed: "PING\r\n", want: "+PONG\r\n", wantStep: stepRead},
			{advance: idle - 1, wantStep: stepRead},
			{advance: 1, wantStep: stepClose, wantErr: errIdleTimeout},
		}, "PING"},
		{"no idle timeout while paused", []sessionStep{
			{feed: "HOLD\r\n", wantStep: stepRead},
			{advance: 10 * idle, wantStep: stepRead},
			{complete: 1, want: "+H0\r\n", wantStep: stepRead},
			{advance: idle, wantStep: stepClose, wantErr: errIdleTimeout},
		}, "HOLD"},
		{"no idle timeout while the socket waits for the driver", []sessionStep{
			{feed: "PING\r\n", want: "+PONG\r\n", wantStep: stepRead},
			{advance: idle, socketReady: true, wantStep: stepRead},
			{feed: "PING\r\n", want: "+PONG\r\n", wantStep: stepRead},
			{advance: idle - 1, wantStep: stepRead},
			{advance: 1, wantStep: stepClose, wantErr: errIdleTimeout},
		}, "PING PING"},
		{"shutdown when idle closes at once", []sessionStep{
			{feed: "PING\r\n", want: "+PONG\r\n", wantStep: stepRead},
			{shutdown: true, wantStep: stepClose, wantErr: errShutdown},
		}, "PING"},
		{"shutdown waits for a paused command", []sessionStep{
			{feed: "HOLD\r\nPING\r\n", wantStep: stepRead},
			{shutdown: true, wantStep: stepWait},
			{complete: 1, want: "+H0\r\n+PONG\r\n", wantStep: stepClose, wantErr: errShutdown},
		}, "HOLD PING"},
		{"close drops a paused command", []sessionStep{
			{feed: "HOLD\r\nPING\r\n", wantStep: stepRead},
			{close: true, wantStep: stepClose, wantErr: errClosedForTest},
			{complete: 1, wantStep: stepClose, wantErr: errClosedForTest},
		}, "HOLD PING"},
		{"big reply sent mid-batch", []sessionStep{
			{feed: "BIG 70000\r\nPING\r\n", want: big + "+PONG\r\n", wantStep: stepRead},
		}, "BIG PING"},
		{"socket full: requests still read and run", []sessionStep{
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{feed: "BIG 70000\r\n" + cmd("ECHO", "a"), full: true, wantStep: stepRead},
			{writable: true, want: "+PONG\r\n" + big + "$1\r\na\r\n", wantStep: stepRead},
		}, "PING BIG ECHO"},
		{"socket full: a paused reply keeps its place", []sessionStep{
			{feed: "PING\r\nHOLD\r\n", full: true, wantStep: stepRead},
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{complete: 1, full: true, wantStep: stepRead},
			{writable: true, want: "+PONG\r\n+H0\r\n+PONG\r\n", wantStep: stepRead},
		}, "PING HOLD PING"},
		{"socket full: quit waits for its replies, reading and dropping", []sessionStep{
			{feed: "PING\r\nQUIT\r\nPING\r\n", full: true, wantStep: stepRead},
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{writable: true, want: "+PONG\r\n+OK\r\n", wantStep: stepClose, wantErr: errQuit},
		}, "PING QUIT"},
		{"socket full: a protocol error waits for the replies before it, reading and dropping", []sessionStep{
			{feed: "PING\r\n*x\r\nPING\r\n", full: true, wantStep: stepRead},
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{writable: true, want: "+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n",
				wantStep: stepClose, wantErr: &protocolError{}},
		}, "PING"},
		{"socket full: the client closes", []sessionStep{
			{feed: "PING\r\n", eof: true, full: true, wantStep: stepWait},
			{writable: true, want: "+PONG\r\n", wantStep: stepClose, wantErr: errEOFForTest},
		}, "PING"},
		{"socket full: shutdown runs nothing more and waits for the replies", []sessionStep{
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{shutdown: true, full: true, wantStep: stepRead},
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{writable: true, want: "+PONG\r\n", wantStep: stepClose, wantErr: errShutdown},
		}, "PING"},
		{"socket full: idle timeout", []sessionStep{
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{advance: idle - 1, full: true, wantStep: stepRead},
			{advance: 1, wantStep: stepClose, wantErr: errIdleTimeout},
		}, "PING"},
		{"socket full: bytes read are not idleness", []sessionStep{
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{advance: idle - 1, full: true, wantStep: stepRead},
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{advance: idle - 1, full: true, wantStep: stepRead},
			{advance: 1, wantStep: stepClose, wantErr: errIdleTimeout},
		}, "PING PING"},
		{"socket full: no idle timeout while it has room the driver has yet to use", []sessionStep{
			{feed: "PING\r\n", full: true, wantStep: stepRead},
			{advance: idle, socketReady: true, full: true, wantStep: stepRead},
			{writable: true, want: "+PONG\r\n", wantStep: stepRead},
		}, "PING"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newSessionRig(t, idle)
			for i, st := range c.steps {
				r.writes = nil
				if st.feed != "" {
					r.feed(st.feed)
				}
				if st.eof {
					r.s.received(0, errEOFForTest)
				}
				if st.complete > 0 {
					n := st.complete - 1
					r.cs.holds[n].Complete(commands.ReplyFunc(func(w commands.Writer) {
						if st.panics {
							w.WriteArray(3)
							panic("boom")
						}
						w.WriteString("H" + strconv.Itoa(n))
					}))
				}
				r.drv.socketReady = st.socketReady
				if st.advance > 0 {
					r.now = r.now.Add(st.advance)
					r.s.expireIdle(r.now)
				}
				if st.shutdown {
					r.s.shutdown()
				}
				if st.close {
					r.s.close()
				}
				if st.writable {
					r.s.writable()
				}
				drive := r.drive
				if st.full {
					drive = r.driveFull
				}
				got := drive()
				if out := strings.Join(r.writes, ""); out != st.want {
					t.Errorf("step %d: sent %q, want %q", i, out, st.want)
				}
				if got != st.wantStep {
					t.Fatalf("step %d: next = %d, want %d", i, got, st.wantStep)
				}
				if got == stepClose {
					err := r.s.finish()
					var pe *protocolError
					if !errors.Is(err, st.wantErr) && !(errors.As(st.wantErr, &pe) && errors.As(err, &pe)) {
						t.Errorf("step %d: ended with %v, want %v", i, err, st.wantErr)
					}
				}
			}
			if ran := strings.Join(r.cs.ran, " "); ran != c.ran {
				t.Errorf("ran %q, want %q", ran, c.ran)
			}
		})
	}
}

// Errors the session tests end connections with.
var (
	errEOFForTest    = errors.New("test: EOF")
	errClosedForTest = net.ErrClosed
)

// echoSession answers every command with its first argument, allocating
// nothing, as CL.THROTTLE on memory does.
type echoSession struct{ scriptSession }

func (echoSession) Dispatch(w commands.Writer, args [][]byte) commands.Effect {
	w.WriteBulk(args[1])
	return 0
}

// newEchoRig is a rig whose session runs echoSession.
func newEchoRig(t *testing.T) *sessionRig {
	r := newSessionRig(t, 0)
	r.s = newSession(r.s.srv, 1, "127.0.0.1:1", &echoSession{}, r.drv, r.now)
	return r
}

func TestSessionSendsBigReplyBeforeRunningOn(t *testing.T) {
	r := newSessionRig(t, 0)
	r.feed("BIG 70000\r\nPING\r\n")
	if st := r.drive(); st != stepRead {
		t.Fatalf("next = %d", st)
	}
	if len(r.writes) != 2 || r.writes[1] != "+PONG\r\n" {
		t.Fatalf("writes %d, want the big reply alone, then +PONG", len(r.writes))
	}
}

func TestSessionPausedWakesDriver(t *testing.T) {
	r := newSessionRig(t, 0)
	r.feed("HOLD\r\n")
	r.drive()
	done := make(chan struct{})
	go func() { // from another goroutine, as a store's reply would
		r.cs.holds[0].Complete(commands.ReplyFunc(func(w commands.Writer) { w.WriteInt(1) }))
		close(done)
	}()
	<-done
	if r.drv.wakes != 1 {
		t.Fatalf("%d wakes, want 1", r.drv.wakes)
	}
	r.drive()
	if got := strings.Join(r.writes, ""); got != ":1\r\n" {
		t.Fatalf("sent %q", got)
	}
}

// TestSessionCompletedDuringDispatch: a command that completes while it
// is dispatched is written in the same batch, without waking the driver.
func TestSessionCompletedDuringDispatch(t *testing.T) {
	r := newSessionRig(t, 0)
	r.feed("NOW\r\nPING\r\nHOLD\r\nNOW\r\nPING\r\n")
	if st := r.drive(); st != stepRead {
		t.Fatalf("next = %d, want stepRead", st)
	}
	if got := strings.Join(r.writes, ""); got != "+NOW\r\n+PONG\r\n" {
		t.Fatalf("sent %q before HOLD completed", got)
	}
	if r.drv.wakes != 0 {
		t.Fatalf("%d wakes, want 0", r.drv.wakes)
	}
	r.writes = nil
	r.cs.holds[0].Complete(commands.ReplyFunc(func(w commands.Writer) { w.WriteString("H0") }))
	if r.drv.wakes != 1 {
		t.Fatalf("%d wakes after HOLD completed, want 1", r.drv.wakes)
	}
	r.drive()
	if got := strings.Join(r.writes, ""); got != "+H0\r\n+NOW\r\n+PONG\r\n" {
		t.Fatalf("sent %q after HOLD completed", got)
	}
}

// TestSessionBoundsHeldReplies: a client that pipelines paused commands
// without their completing is read no further once maxHeldCommands are
// paused, or maxBatchReply bytes are held behind a paused one; the rest
// runs as they complete.
func TestSessionBoundsHeldReplies(t *testing.T) {
	t.Run("commands", func(t *testing.T) {
		r := newSessionRig(t, 0)
		const n = maxHeldCommands + 100
		r.feed(strings.Repeat("HOLD\r\n", n))
		if st := r.drive(); st != stepWait {
			t.Fatalf("next = %d with %d paused, want stepWait", st, len(r.cs.holds))
		}
		if len(r.cs.holds) != maxHeldCommands {
			t.Fatalf("%d commands paused, want %d", len(r.cs.holds), maxHeldCommands)
		}
		var want strings.Builder
		for i := 0; i < n; i++ {
			r.cs.holds[i].Complete(commands.ReplyFunc(func(w commands.Writer) { w.WriteString("H") }))
			r.drive()
			want.WriteString("+H\r\n")
		}
		if got := strings.Join(r.writes, ""); got != want.String() {
			t.Fatalf("sent %d bytes, want %d", len(got), want.Len())
		}
		if st := r.drive(); st != stepRead {
			t.Fatalf("next = %d once all completed, want stepRead", st)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		r := newSessionRig(t, 0)
		r.feed("HOLD\r\nBIG 70000\r\nPING\r\n")
		if st := r.drive(); st != stepWait {
			t.Fatalf("next = %d, want stepWait", st)
		}
		if ran := strings.Join(r.cs.ran, " "); ran != "HOLD BIG" {
			t.Fatalf("ran %q, want HOLD BIG", ran)
		}
		r.cs.holds[0].Complete(commands.ReplyFunc(func(w commands.Writer) { w.WriteString("H") }))
		if st := r.drive(); st != stepRead {
			t.Fatalf("next = %d, want stepRead", st)
		}
		if ran := strings.Join(r.cs.ran, " "); ran != "HOLD BIG PING" {
			t.Fatalf("ran %q, want HOLD BIG PING", ran)
		}
	})
}

// batch runs one batch of requests through the session as a driver would:
// read, run, write all of it.
func (r *sessionRig) batch(req string) {
	room := r.s.room()
	r.s.received(copy(room, req), nil)
	r.s.run(r.now)
	r.s.next(r.now)
	r.s.sent(len(r.s.output()))
	r.s.next(r.now)
}

func TestSessionPathAllocatesNothing(t *testing.T) {
	r := newEchoRig(t)
	req := strings.Repeat(cmd("ECHO", "key"), 16)
	r.feed(req)
	r.drive()
	allocs := testing.AllocsPerRun(1000, func() { r.batch(req) })
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
}

// pausingEchoSession pauses every command and completes it at once, as a
// shared-mode decision answered within the batch does.
type pausingEchoSession struct{ scriptSession }

// okReply writes +OK; a value of it boxes without an allocation.
type okReply struct{}

func (okReply) WriteReply(w commands.Writer) { w.WriteString("OK") }

func (pausingEchoSession) Dispatch(w commands.Writer, _ [][]byte) commands.Effect {
	commands.AsPauser(w).Pause().Complete(okReply{})
	return 0
}

// TestSessionPausedPathAllocatesNothing: a paused command costs the server
// no allocation once the connection has paused as many: the line of held
// replies keeps its array, and a paused reply written is reused.
func TestSessionPausedPathAllocatesNothing(t *testing.T) {
	r := newSessionRig(t, 0)
	r.s = newSession(r.s.srv, 1, "127.0.0.1:1", &pausingEchoSession{}, r.drv, r.now)
	req := strings.Repeat(cmd("ECHO", "key"), 16)
	r.feed(req)
	r.drive()
	allocs := testing.AllocsPerRun(1000, func() { r.batch(req) })
	if allocs != 0 {
		t.Errorf("%v allocations per batch of 16 paused commands, want 0", allocs)
	}
}

// lateSession pauses every command, completes it at once, and keeps its
// Paused, which the test completes again once the reply is written.
type lateSession struct {
	scriptSession
	last commands.Paused
}

func (l *lateSession) Dispatch(w commands.Writer, _ [][]byte) commands.Effect {
	l.last = commands.AsPauser(w).Pause()
	l.last.Complete(okReply{})
	return 0
}

// TestCompletingAWrittenReplyAgainPanics: a paused reply written waits for
// its reuse by a later pause, and a command completing it again meanwhile
// is caught, as one completing it twice before it is written is. (Once
// reused, it is another command's place: Paused's contract, one Complete
// a command, is what keeps a late one out of it.)
func TestCompletingAWrittenReplyAgainPanics(t *testing.T) {
	r := newSessionRig(t, 0)
	ls := &lateSession{}
	r.s = newSession(r.s.srv, 1, "127.0.0.1:1", ls, r.drv, r.now)
	r.feed(cmd("ECHO", "key"))
	r.drive()
	if got := strings.Join(r.writes, ""); got != "+OK\r\n" {
		t.Fatalf("reply %q, want +OK", got)
	}
	defer func() {
		if p := recover(); !strings.Contains(fmt.Sprint(p), "completed twice") {
			t.Errorf("completing a written reply again: panic %v, want one saying it completed twice", p)
		}
	}()
	ls.last.Complete(okReply{})
}

func BenchmarkSessionPipeline(b *testing.B) {
	r := newEchoRig(&testing.T{})
	req := strings.Repeat(cmd("ECHO", "key"), 16)
	for b.Loop() {
		r.batch(req)
	}
}

// TestSessionStopsReadingPastUnsentLimit: while the socket takes no
// output, requests run until more than the unsent limit of replies wait
// for it; the session then reads and runs nothing more until the socket
// takes some, and says so (Server.unsentFull).
func TestSessionStopsReadingPastUnsentLimit(t *testing.T) {
	r := newSessionRig(t, 0)
	type report struct{ unsent, capacity int }
	var reports []report
	r.s.srv.unsentLimit = 100000
	r.s.srv.unsentFull = func(unsent, capacity int) { reports = append(reports, report{unsent, capacity}) }
	r.s = newSession(r.s.srv, 1, "127.0.0.1:1", r.cs, r.drv, r.now)
	reply := "$30000\r\n" + strings.Repeat("\x00", 30000) + "\r\n" // 30,010 bytes
	r.feed(strings.Repeat("BIG 30000\r\n", 8))
	// A batch stops past maxBatchReply, at three replies; the socket
	// takes none of them, and the fourth passes the limit.
	if st := r.driveFull(); st != stepWait {
		t.Fatalf("next = %d past the limit, want stepWait", st)
	}
	if ran := strings.Join(r.cs.ran, " "); ran != "BIG BIG BIG BIG" {
		t.Fatalf("ran %q, want four BIGs", ran)
	}
	if len(reports) != 1 || reports[0].unsent != 4*len(reply) || reports[0].capacity < 4*len(reply) {
		t.Fatalf("unsentFull got %v, want one report of %d bytes", reports, 4*len(reply))
	}
	r.s.writable()
	if st := r.drive(); st != stepRead {
		t.Fatalf("next = %d once the socket took the replies, want stepRead", st)
	}
	if got, want := strings.Join(r.writes, ""), strings.Repeat(reply, 8); got != want {
		t.Fatalf("sent %d bytes, want the eight replies (%d)", len(got), len(want))
	}
}

// TestSessionIdleCheckPollsWhatTheDriverWaitsFor: the idle check spares a
// client whose socket is ready for what its driver, held up, waits for:
// bytes, or room for output, or while output waits for the socket and
// requests are still read, either; past the unsent limit, room only.
func TestSessionIdleCheckPollsWhatTheDriverWaitsFor(t *testing.T) {
	const idle = time.Second
	for _, c := range []struct {
		name   string
		limit  int
		feed   string
		full   bool
		want   step
		polled [2]bool
	}{
		{"waiting for bytes", 0, "PING\r\n", false, stepRead, [2]bool{true, false}},
		{"output waiting, reading on", 0, "PING\r\n", true, stepRead, [2]bool{true, true}},
		{"output waiting past the limit", 5, "PING\r\n", true, stepWait, [2]bool{false, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newSessionRig(t, idle)
			r.s.srv.unsentLimit = c.limit
			r.s = newSession(r.s.srv, 1, "127.0.0.1:1", r.cs, r.drv, r.now)
			r.feed(c.feed)
			drive := r.drive
			if c.full {
				drive = r.driveFull
			}
			if st := drive(); st != c.want {
				t.Fatalf("next = %d, want %d", st, c.want)
			}
			r.now = r.now.Add(idle)
			r.drv.socketReady = true
			r.s.expireIdle(r.now)
			if r.drv.polled != c.polled {
				t.Errorf("polled (input, output) %v, want %v", r.drv.polled, c.polled)
			}
			r.drv.socketReady = false
			r.s.expireIdle(r.now)
			r.s.writable()
			if st := r.drive(); st != stepClose {
				t.Fatalf("next = %d once idle, want stepClose", st)
			}
		})
	}
}

// countedReply is a reply that counts its drops (commands.Dropper).
type countedReply struct{ drops *atomic.Int32 }

func (countedReply) WriteReply(w commands.Writer) { w.WriteString("OK") }
func (r countedReply) Drop()                      { r.drops.Add(1) }

// TestSessionDropsUnwrittenReplies: the replies a closed connection never
// writes are dropped, each once, so that they count what they answered:
// one completed while held behind another paused one, when the session
// finishes, and one completed after that.
func TestSessionDropsUnwrittenReplies(t *testing.T) {
	r := newSessionRig(t, 0)
	r.feed("HOLD\r\nHOLD\r\nHOLD\r\n")
	r.drive()
	if len(r.cs.holds) != 3 {
		t.Fatalf("%d commands paused, want 3", len(r.cs.holds))
	}
	var drops atomic.Int32
	r.cs.holds[1].Complete(countedReply{&drops}) // held behind the first
	r.drive()
	r.s.close()
	r.s.finish()
	if n := drops.Load(); n != 1 {
		t.Errorf("%d replies dropped at finish, want the 1 completed", n)
	}
	r.cs.holds[0].Complete(countedReply{&drops})
	r.cs.holds[2].Complete(countedReply{&drops})
	if n := drops.Load(); n != 3 {
		t.Errorf("%d replies dropped in all, want 3", n)
	}
}
