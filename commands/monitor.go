package commands

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR's error texts, in Redis 7.0's words.
const (
	// msgMonitorKeyspace answers a monitoring client's command that reads
	// or writes keys: Redis treats a monitor as a replica.
	msgMonitorKeyspace = "ERR Replica can't interact with the keyspace"
	// msgMonitorInExec answers MONITOR queued in MULTI, at EXEC.
	msgMonitorInExec = "ERR MONITOR isn't allowed for DENY BLOCKING client"
	// msgMonitorNoPush answers MONITOR on a connection that cannot take
	// pushed output (a Writer without Pusher: tests, not the server).
	msgMonitorNoPush = "ERR MONITOR is not supported on this connection"
)

// Pusher is implemented by a Writer whose connection can take output that
// none of its own requests asked for, from any goroutine: MONITOR's lines.
// Use AsPusher to find it behind the Writer a handler is given; unlike the
// Writer, it stays valid after the handler returns.
type Pusher interface {
	// Push queues line, a whole RESP reply, to be sent after the replies
	// the connection has written so far, and wakes the connection's driver
	// to send it. It is safe from any goroutine, never blocks and keeps no
	// reference to line. It returns false once the connection is closed,
	// when line is dropped: closed by the client, or by Push itself when
	// the client reads so slowly that the server's limit of bytes waiting
	// for it would be passed (Redis's client-output-buffer-limit).
	Push(line []byte) bool
}

// AsPusher returns the Pusher behind w, the Writer a handler was given, or
// nil when its connection cannot take pushed output.
func AsPusher(w Writer) Pusher {
	for {
		switch v := w.(type) {
		case Pusher:
			return v
		case *errorCounter:
			w = v.Writer
		default:
			return nil
		}
	}
}

// monitors are the connections in MONITOR mode, which see every command the
// server runs. The dispatcher reads them with one atomic load, which finds
// nil while nobody monitors: then a command costs nothing more.
type monitors struct {
	list atomic.Pointer[[]monitorConn] // copied on every change; nil when empty
	mu   sync.Mutex                    // serializes the changes of list
}

// monitorConn is one monitoring connection: its client, to find it again,
// and where its lines go.
type monitorConn struct {
	cl *Client
	p  Pusher
}

// add makes cl's connection a monitor.
func (m *monitors) add(cl *Client, p Pusher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var list []monitorConn
	if old := m.list.Load(); old != nil {
		list = slices.Clone(*old)
	}
	list = append(list, monitorConn{cl: cl, p: p})
	m.list.Store(&list)
}

// remove stops cl's connection monitoring, if it does.
func (m *monitors) remove(cl *Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.list.Load()
	if old == nil {
		return
	}
	list := slices.DeleteFunc(slices.Clone(*old), func(mc monitorConn) bool { return mc.cl == cl })
	if len(list) == 0 {
		m.list.Store(nil)
		return
	}
	m.list.Store(&list)
}

// feed sends every monitor the line of a command that cl ran, which ended
// at end, as Redis's replicationFeedMonitors words it. A monitor whose
// connection has closed is dropped. The line is built in cl's buffer, which
// Push copies, so feeding allocates nothing once the buffer has grown.
func (m *monitors) feed(list []monitorConn, cl *Client, args [][]byte, end time.Time) {
	cl.monitorLine = appendMonitorLine(cl.monitorLine[:0], cl.Addr, redactSecrets(args), end)
	for _, mc := range list {
		if !mc.p.Push(cl.monitorLine) {
			m.remove(mc.cl) // its connection has closed
		} else if mc.cl == cl {
			cl.changed(EffectPushed)
		}
	}
	if cap(cl.monitorLine) > maxKeptMonitorLine {
		cl.monitorLine = nil // grown for a big command
	}
}

// maxKeptMonitorLine is the largest line buffer a client keeps between
// commands.
const maxKeptMonitorLine = 4 << 10

// appendMonitorLine appends the simple-string line Redis 7 sends monitors
// for a command: +<unix seconds>.<microseconds> [0 <address>] then every
// argument quoted as Redis's sdscatrepr quotes it, and CR LF.
func appendMonitorLine(b []byte, addr string, args [][]byte, end time.Time) []byte {
	b = append(b, '+')
	b = strconv.AppendInt(b, end.Unix(), 10)
	b = append(b, '.')
	us := end.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(us), 10)
	b = append(b, " [0 "...)
	b = append(b, addr...)
	b = append(b, ']')
	for _, a := range args {
		b = append(b, ' ')
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// appendRepr appends s quoted as Redis's sdscatrepr quotes it: backslash
// and double quote escaped, \n \r \t \a \b by name, other bytes outside
// printable ASCII as \xhh.
func appendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c < 0x20 || c > 0x7e {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// shownToMonitors reports whether monitors see cmd when it runs: Redis
// shows neither administrative commands (MONITOR itself, CONFIG, SLOWLOG,
// CLIENT LIST, ...) nor the commands it rejects before running them.
func shownToMonitors(cmd *Command) bool {
	return !slices.Contains(cmd.ACLCategories, "@admin")
}

// monitorCommand is MONITOR's table row.
func monitorCommand() *Command {
	return &Command{Name: "monitor", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale,
		ACLCategories: []string{"@admin", "@slow", "@dangerous"}, Group: "server", Since: "1.0.0",
		Summary: "Listens for all requests received by the server in real-time.", Run: monitor}
}

// monitor is MONITOR: the connection answers OK and from then on receives
// a line for every command the server runs, its own included, until RESET
// or until it closes. As in Redis, a monitoring client may run only the
// commands that touch no key, and a second MONITOR is ignored, without a
// reply.
func monitor(cx *Context, w Writer, args [][]byte) {
	// >> Args
	cl := cx.Client
	if cx.Tx != nil || cx.chain != nil {
		w.WriteError(msgMonitorInExec) // Redis refuses it for a client inside EXEC
		return
	}
	if cl.monitoring {
		return
	}
	p := AsPusher(w)
	if p == nil {
		w.WriteError(msgMonitorNoPush)
		return
	}

	// >> Response, then the lines: they follow the OK.
	w.WriteString("OK")
	cl.monitoring = true
	cl.changed(EffectInfo)
	cx.cmds.monitors.add(cl, p)
}
