package commands

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// Options configures Commands.
type Options struct {
	// Engine is the keyspace the commands run against. Required.
	Engine *engine.Engine
	// Host is the server running the commands, for CLIENT and INFO. Nil
	// means a host with no clients and zero counters.
	Host Host
	// Version is cellserver's version, reported by INFO and HELLO.
	Version string
	// Settings are the values CONFIG GET reports.
	Settings []Setting
	// Logger receives nothing per command; nil means slog.Default().
	Logger *slog.Logger
	// Persistence, if set, returns the fields INFO's persistence section
	// adds about the backing store (status, pending keys, flushes, ...).
	Persistence func() []Setting
	// Users are who may authenticate, and with which passwords (see
	// LoadUsers). Nil means only a default user without a password: every
	// client is authenticated from the start.
	Users *Users
	// SlowlogLogSlowerThan is Redis's slowlog-log-slower-than: a command
	// that runs for at least this many microseconds is kept in the slow log
	// (SLOWLOG GET); 0 keeps every command, a negative value none.
	SlowlogLogSlowerThan int64
	// SlowlogMaxLen is Redis's slowlog-max-len: how many entries the slow
	// log keeps, dropping the oldest. 0 keeps none, so the zero Options keep
	// no slow log; cellserver's flags default to Redis's 10000 and 128.
	SlowlogMaxLen int
	// Store, when set, is shared mode's store: the rate-limit commands
	// decide in it and the keyspace commands act on it, so that every
	// cellserver sharing it enforces one limit. Nil keeps every key in
	// Engine.
	Store Store
	// StoreTimeout bounds a keyspace command's wait for the Store (the
	// deciding commands' waits are the Store's to bound). 0 means 250ms.
	StoreTimeout time.Duration
}

// defaultStoreTimeout is Options.StoreTimeout's zero value.
const defaultStoreTimeout = 250 * time.Millisecond

// Commands is the command table with its dispatcher and per-command counters.
// It is safe for concurrent use; each Client is used by one goroutine at a time.
type Commands struct {
	opts    Options
	table   *table
	obs     *observer // every command's statistics and the slow log
	started time.Time

	// monitors are the connections in MONITOR mode.
	monitors monitors

	// replyErrors counts every error reply by its code, for INFO
	// errorstats and total_error_replies.
	replyErrors errorStats

	// refusals are the keys refused most often, for THROTTLE.TOP.
	refusals *refusals

	// workers are the commands running off the event loops against the
	// Store (offload); Close waits for them.
	workers sync.WaitGroup

	// laters are paused deciding commands whose replies were written, for
	// reuse.
	laters sync.Pool
}

// Context is what a handler gets besides its arguments. Handlers call it
// cx, so that it is never mistaken for a context.Context (ctx), which the
// commands that wait on the Store also hold.
type Context struct {
	// Client is the calling connection's state.
	Client *Client
	// Tx is the transaction the command runs in (inside EXEC), or nil.
	Tx *engine.Txn

	cmds    *Commands
	chain   *chain          // orders the commands of an EXEC in shared mode; nil otherwise
	later   bool            // the running command finishes later (await): its outcome is counted then
	metrics *commandMetrics // the running command's, or nil
	stripe  int             // the client's copy of the metrics (stripeOf)
}

// Engine returns the keyspace.
func (cx *Context) Engine() *engine.Engine { return cx.cmds.opts.Engine }

// store returns shared mode's store, or nil in memory.
func (cx *Context) store() Store { return cx.cmds.opts.Store }

// New builds the command table.
func New(opts Options) *Commands {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Host == nil {
		opts.Host = noHost{}
	}
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = defaultStoreTimeout
	}
	c := &Commands{opts: opts, started: time.Now()}
	now := time.Now
	if opts.Engine != nil {
		now = opts.Engine.Now
	}
	c.refusals = newRefusals(now)
	c.table = newTable(c.all())
	c.obs = c.newObserver()
	return c
}

// Close waits for the commands still running against the Store off the
// event loops; call it once the server has stopped.
func (c *Commands) Close() { c.workers.Wait() }

// SetHost tells the commands which server runs them, for CLIENT and INFO.
// Call it before the server starts serving.
func (c *Commands) SetHost(h Host) {
	if h == nil {
		h = noHost{}
	}
	c.opts.Host = h
}

// all lists every command; each topic's file contributes its rows.
func (c *Commands) all() []*Command {
	var cmds []*Command
	for _, group := range [][]*Command{
		throttleCommands(), windowCommands(), keyspaceCommands(), connectionCommands(),
		c.transactionCommands(), c.serverCommands(), readingCommands(),
	} {
		cmds = append(cmds, group...)
	}
	return cmds
}

// Dispatch runs one command for client cl and writes its reply to w, or
// pauses it (see Pauser); inside MULTI it queues the command instead. It
// runs on cl's driver, which may be an event loop serving other clients.
func (c *Commands) Dispatch(w Writer, cl *Client, args [][]byte) {
	if len(args) == 0 {
		return
	}
	cmd, msg := c.resolveFor(cl, args)
	if cmd == nil {
		c.reject(w, cl, nil, msg)
		return
	}
	if msg := c.authorize(cl, cmd, args); msg != "" {
		c.reject(w, cl, cmd, msg)
		return
	}
	if !arityOK(cmd.Arity, len(args)) {
		c.reject(w, cl, cmd, fmt.Sprintf(msgWrongArity, cmd.Name))
		return
	}
	if cl.monitoring && cmd.Flags&(FlagWrite|FlagReadonly) != 0 {
		c.reject(w, cl, cmd, msgMonitorKeyspace)
		return
	}
	if cl.LastCommand != cmd.Name {
		cl.LastCommand = cmd.Name
		cl.changed(EffectInfo)
	}
	if cl.multi != nil && cmd.Flags&FlagNoMulti == 0 {
		cl.multi.queued = append(cl.multi.queued, copyArgs(args))
		w.WriteString("QUEUED")
		return
	}
	cx, ew := &cl.cx, &cl.errs
	*cx = Context{Client: cl, cmds: c}
	*ew = errorCounter{Writer: w, stats: &c.replyErrors}
	c.run(cx, ew, cmd, args)
}

// resolveFor is resolve, trying first the command cl sent last.
func (c *Commands) resolveFor(cl *Client, args [][]byte) (*Command, string) {
	if last := cl.last; last != nil && equalFold(args[0], last.Name) {
		return last, ""
	}
	cmd, msg := c.resolve(args)
	if cmd != nil && len(cmd.Sub) == 0 && equalFold(args[0], cmd.Name) {
		cl.last = cmd // a command without subcommands, found by its name
	}
	return cmd, msg
}

// resolve finds the table row for args: the command, or for a container
// (CLIENT, CONFIG, COMMAND) given a subcommand, the subcommand's row, as
// Redis 7 looks commands up. It returns the error text when there is none.
func (c *Commands) resolve(args [][]byte) (*Command, string) {
	cmd := c.table.lookup(args[0])
	if cmd == nil {
		return nil, unknownCommand(args)
	}
	if len(cmd.Sub) == 0 || len(args) < 2 {
		return cmd, ""
	}
	if sub := cmd.subcommand(args[1]); sub != nil {
		return sub, ""
	}
	return nil, fmt.Sprintf(msgUnknownSub, QuoteArg(args[1]), strings.ToUpper(cmd.Name))
}

// run calls the handler and counts the call, its time and its outcome.
func (c *Commands) run(cx *Context, ew *errorCounter, cmd *Command, args [][]byte) {
	o := c.obs
	cx.metrics, cx.stripe, cx.later = o.byCommand[cmd], stripeOf(cx.Client.ID), false
	start := cx.Client.commandStart()
	if cmd.Shared != nil && c.opts.Store != nil {
		cmd.Shared(cx, ew, args)
	} else {
		cmd.Run(cx, ew, args)
	}
	d := cx.Client.commandEnd(start)
	c.observe(cx, o, cmd, args, d, ew.errors)
	if list := c.monitors.list.Load(); list != nil && shownToMonitors(cmd) {
		c.monitors.feed(*list, cx.Client, args, start.Add(d))
	}
	cx.Client.LastActive = start
}

// reject answers a command that could not run (unknown, wrong arity); inside
// MULTI it also makes EXEC abort. An unknown command is counted only among
// the error replies, as in Redis.
func (c *Commands) reject(w Writer, cl *Client, cmd *Command, msg string) {
	if cmd != nil {
		c.obs.byCommand[cmd].rejected.Add(1)
	}
	if cl.multi != nil {
		cl.multi.failed = true
	}
	if cmd != nil && cmd.Name == "exec" {
		// Redis answers a rejected EXEC by discarding the transaction.
		cl.multi = nil
		cl.changed(EffectInfo)
		msg = msgExecAbortBecause + strings.TrimPrefix(msg, "ERR ")
	}
	c.replyErrors.count(msg)
	w.WriteError(msg)
}

// errorCounter counts the errors a handler writes: for the running
// command, and by code in stats (if not nil).
type errorCounter struct {
	Writer
	stats  *errorStats
	errors int
}

func (e *errorCounter) WriteError(msg string) {
	e.errors++
	if e.stats != nil {
		e.stats.count(msg)
	}
	e.Writer.WriteError(msg)
}

// unknownCommand words Redis 7's reply to an unknown command: its name cut
// as QuoteArg cuts it, then its arguments, each quoted up to its first NUL
// byte, until they have used maxQuotedArg bytes between them.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= maxQuotedArg {
			break
		}
		a = cString(a)
		n := min(len(a), maxQuotedArg-b.Len())
		fmt.Fprintf(&b, "'%s' ", a[:n])
	}
	return oneLine(fmt.Sprintf(msgUnknownCommand, QuoteArg(args[0]), b.String()))
}

// copyArgs copies args, which the connection's reader may reuse.
func copyArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// noHost stands in when Commands runs without a server (tests).
type noHost struct{}

func (noHost) Clients() []ClientInfo { return nil }
func (noHost) Stats() HostStats      { return HostStats{} }
