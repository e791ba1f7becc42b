package commands

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/internal/topk"
)

// topCounters is how many keys each sub-window of THROTTLE.TOP's sketches
// holds: a key refused more than 1/1024 of a sub-window's refusals is
// always among them.
const topCounters = 1024

// defaultTopCount is how many keys THROTTLE.TOP answers without COUNT.
const defaultTopCount = 10

const (
	msgPositive = "ERR value is out of range, must be positive"
	msgTopUsage = "ERR syntax error: THROTTLE.TOP takes [COUNT n] [WINDOW 1m|1h]"
)

// refusals keeps the keys refused most often over the last minute and the
// last hour, in fixed memory (topk.Window: 4 sketches of topCounters keys,
// about 1.4 MB in all, and a copy of one window once top is called).
// Recording a refusal allocates nothing and holds the lock for two
// sketches' Add, about 120 ns (BenchmarkSketchAdd), for a sketch's
// clearing when its sub-window ends, and for top's copy of a window (about
// 15 µs, BenchmarkWindowCopyInto), never for its ranking.
type refusals struct {
	now func() time.Time

	mu           sync.Mutex // guards minute, hour
	minute, hour *topk.Window

	// copyMu guards copy: top ranks a copy of a window, made under mu, so
	// that a refusal waits only for the copy, not for the ranking.
	copyMu sync.Mutex
	copy   *topk.Window
}

// newRefusals returns an empty record read at the times now tells.
func newRefusals(now func() time.Time) *refusals {
	seed := maphash.MakeSeed()
	return &refusals{
		now:    now,
		minute: topk.NewWindow(int64(time.Minute), topCounters, seed),
		hour:   topk.NewWindow(int64(time.Hour), topCounters, seed),
	}
}

// refused records a refusal of key, of family f; key may alias the request.
func (r *refusals) refused(key []byte, f engine.Family) {
	now := r.now().UnixNano()
	h := r.minute.Hash(key) // the windows share a seed
	r.mu.Lock()
	r.minute.Add(key, h, uint8(f), now)
	r.hour.Add(key, h, uint8(f), now)
	r.mu.Unlock()
}

// window returns the window of length ("1m" or "1h"), or nil.
func (r *refusals) window(length []byte) *topk.Window {
	switch {
	case equalFold(length, "1m"):
		return r.minute
	case equalFold(length, "1h"):
		return r.hour
	}
	return nil
}

// top returns the n keys of w refused most, most first.
func (r *refusals) top(w *topk.Window, n int) []topk.Ranked {
	r.copyMu.Lock()
	defer r.copyMu.Unlock()
	now := r.now().UnixNano()
	r.mu.Lock()
	r.copy = w.CopyInto(r.copy)
	r.mu.Unlock()
	return r.copy.Top(now, n)
}

// distinct estimates how many distinct keys were refused in the last one
// to two lengths of w.
func (r *refusals) distinct(w *topk.Window) uint64 {
	now := r.now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	return w.Distinct(now)
}

// RefusedKey is one of the keys refused most often, as TopRefused reports it.
type RefusedKey struct {
	// Key is the key, cut to its first topk.MaxKeyLen bytes when longer.
	Key    string
	Family engine.Family
	// Refusals estimates how many times the key was refused over the
	// window; it overestimates by at most MaxOver.
	Refusals, MaxOver uint64
	// First and Last are the first and latest refusals the sketch holds.
	First, Last time.Time
}

// TopRefused returns the n keys refused most often over the last minute
// (hour false) or hour, most first: THROTTLE.TOP's answer, for metrics.
func (c *Commands) TopRefused(n int, hour bool) []RefusedKey {
	w := c.refusals.minute
	if hour {
		w = c.refusals.hour
	}
	ranked := c.refusals.top(w, n)
	out := make([]RefusedKey, len(ranked))
	for i, r := range ranked {
		out[i] = RefusedKey{Key: r.Key, Family: engine.Family(r.Tag), Refusals: r.Count, MaxOver: r.Err,
			First: time.Unix(0, r.First), Last: time.Unix(0, r.Last)}
	}
	return out
}

// topCommand is THROTTLE.TOP [COUNT n] [WINDOW 1m|1h].
func topCommand() *Command {
	return &Command{
		Name: "throttle.top", Arity: -1, Flags: FlagReadonly | FlagLoading | FlagStale,
		Group: rateLimitGroup, Since: "0.2.0",
		Summary: "Returns the keys this instance refused most often over the last minute or hour, most first (an estimate).",
		Run:     throttleTop,
	}
}

// topArgs are THROTTLE.TOP's arguments.
type topArgs struct {
	count  int
	window []byte
}

// parseTopArgs reads [COUNT n] [WINDOW 1m|1h] in any order.
func parseTopArgs(args [][]byte) (topArgs, string) {
	a := topArgs{count: defaultTopCount, window: []byte("1m")}
	for i := 1; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, msgSyntax
		}
		switch v := args[i+1]; {
		case equalFold(args[i], "count"):
			n, msg := parseCount(v, 1<<20)
			if msg != "" {
				return a, msg
			}
			a.count = n
		case equalFold(args[i], "window"):
			a.window = v
		default:
			return a, msgTopUsage
		}
	}
	return a, ""
}

// throttleTop answers an array of the keys refused most, most first, each
// [key, family, refusals, first_ms, last_ms, max_overcount].
func throttleTop(cx *Context, w Writer, args [][]byte) {
	// >> Args
	a, msg := parseTopArgs(args)
	if msg != "" {
		w.WriteError(msg)
		return
	}
	r := cx.cmds.refusals
	win := r.window(a.window)
	if win == nil {
		w.WriteError(msgTopUsage)
		return
	}

	// >> Operation
	top := r.top(win, a.count)

	// >> Response
	w.WriteArray(len(top))
	for _, k := range top {
		w.WriteArray(6)
		w.WriteBulkString(k.Key)
		w.WriteBulkString(engine.Family(k.Tag).Name())
		w.WriteInt(int64(k.Count))
		w.WriteInt(k.First / 1e6)
		w.WriteInt(k.Last / 1e6)
		w.WriteInt(int64(k.Err))
	}
}

// readingCommands are the rate-limit commands that read what the limits
// hold: SW.LOG and THROTTLE.TOP.
func readingCommands() []*Command {
	return []*Command{swLogCommand(), topCommand()}
}
