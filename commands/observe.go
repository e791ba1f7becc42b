package commands

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// latencyBounds are the upper bounds of the latency histogram's buckets:
// 5µs to 1s, in steps of 1, 2.5, 5 and 10. Read-only.
var latencyBounds = [...]time.Duration{
	5 * time.Microsecond, 10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond,
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, 500 * time.Millisecond, time.Second,
}

// LatencyBounds returns the upper bounds of the latency histogram's buckets
// (CommandMetrics.Buckets), ascending.
func LatencyBounds() []time.Duration { return slices.Clone(latencyBounds[:]) }

// CommandMetrics is a copy of one command's counters, for metrics.
type CommandMetrics struct {
	// Name is the command's lower-case name; a subcommand's is
	// "container|sub", as in INFO commandstats.
	Name string
	// Decides says whether the command answers allowed or limited
	// (CL.THROTTLE): its calls that answer count as Allowed or Limited,
	// where other commands' count as OK.
	Decides bool
	// Allowed, Limited, Errors and OK count the calls by outcome; Errors
	// are the calls whose reply was or held an error. Each call counts once.
	Allowed, Limited, Errors, OK uint64
	// Buckets counts the calls by how long they ran: Buckets[i] those that
	// took at most LatencyBounds()[i] and more than the bound before it;
	// the last element, those slower than every bound.
	Buckets []uint64
	// Sum is the time all the calls took.
	Sum time.Duration
}

// Calls returns the number of calls counted in the histogram.
func (m CommandMetrics) Calls() uint64 {
	n := uint64(0)
	for _, b := range m.Buckets {
		n += b
	}
	return n
}

// Metrics returns every command's counters, by name. The counters only grow:
// CONFIG RESETSTAT, which zeroes INFO's, leaves them alone.
func (c *Commands) Metrics() []CommandMetrics {
	o := c.obs
	out := make([]CommandMetrics, 0, len(o.ordered))
	for _, m := range o.ordered {
		out = append(out, m.sum())
	}
	return out
}

// sum adds up m's stripes.
func (m *commandMetrics) sum() CommandMetrics {
	s := CommandMetrics{Name: m.name, Decides: m.decides, Buckets: make([]uint64, len(latencyBounds)+1)}
	for j := range m.stripes {
		st := &m.stripes[j]
		s.Allowed += st.allowed.Load()
		s.Limited += st.limited.Load()
		s.Errors += st.errors.Load()
		s.OK += st.ok.Load()
		s.Sum += time.Duration(st.sumNanos.Load())
		for i := range st.buckets {
			s.Buckets[i] += st.buckets[i].Load()
		}
	}
	return s
}

// totals returns m's calls, their time, the failed ones and the deciding
// calls' answers, for INFO commandstats and stats.
func (m *commandMetrics) totals() statsSnapshot {
	s := m.sum()
	return statsSnapshot{calls: int64(s.Calls()), nanos: int64(s.Sum), failed: int64(s.Errors),
		allowed: s.Allowed, limited: s.Limited}
}

// decisions returns the deciding commands' allowed and limited answers
// since the last CONFIG RESETSTAT, summed, for INFO.
func (c *Commands) decisions() (allowed, limited uint64) {
	for _, m := range c.obs.ordered {
		s := m.sinceReset()
		allowed += s.allowed
		limited += s.limited
	}
	return allowed, limited
}

// counterStripes is how many copies of each command's metrics there are. A
// client counts into the copy its ID picks, so that connections running on
// different cores seldom write to the same cache line; readers add the
// copies up. Two connections share a copy one time in counterStripes.
const counterStripes = 16

// stripeOf is the copy of the metrics client id counts into.
func stripeOf(id int64) int { return int(uint64(id) % counterStripes) }

// commandMetrics are one command's statistics, the only ones kept: its
// outcome counts and latency histogram, one copy per stripe (see
// counterStripes), which metrics read and which only grow; and what INFO
// commandstats adds: the calls rejected before they ran, and the totals as
// they stood at the last CONFIG RESETSTAT, which INFO subtracts. Atomic
// counters, so that counting a call allocates nothing and takes no lock.
type commandMetrics struct {
	name    string
	decides bool
	stripes [counterStripes]metricsStripe

	rejected atomic.Int64 // since the last CONFIG RESETSTAT

	mu   sync.Mutex    // guards base
	base statsSnapshot // totals() at the last reset
}

// metricsStripe is one copy of a command's metrics, padded so that no two
// copies share a cache line.
type metricsStripe struct {
	allowed, limited, errors, ok atomic.Uint64
	buckets                      [len(latencyBounds) + 1]atomic.Uint64
	sumNanos                     atomic.Int64
	_                            [64]byte
}

// record counts one call that took d and wrote errors errors. The outcome
// of a deciding command's successful call, or of a call that finishes
// later (decides true for both), is counted by its tally instead.
func (m *metricsStripe) record(d time.Duration, errors int, decides bool) {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	m.buckets[i].Add(1)
	m.sumNanos.Add(int64(d))
	switch {
	case errors > 0:
		m.errors.Add(1)
	case !decides:
		m.ok.Add(1)
	}
}

// observer is what observe records into: every command's statistics and
// the slow log. New builds it once per Commands, after the table.
type observer struct {
	byCommand map[*Command]*commandMetrics // read-only once built
	ordered   []*commandMetrics            // by name
	slowlog   *slowlog                     // nil when the slow log keeps nothing
}

// newObserver builds an observer for every command and subcommand of the
// table.
func (c *Commands) newObserver() *observer {
	o := &observer{
		byCommand: make(map[*Command]*commandMetrics),
		slowlog:   newSlowlog(c.opts.SlowlogLogSlowerThan, c.opts.SlowlogMaxLen),
	}
	deciding := make(map[string]bool)
	for _, cmd := range decidingCommands() {
		deciding[cmd.Name] = true
	}
	add := func(cmd *Command) {
		m := &commandMetrics{name: cmd.Name, decides: deciding[cmd.Name]}
		o.byCommand[cmd] = m
		o.ordered = append(o.ordered, m)
	}
	c.eachCommand(add)
	slices.SortFunc(o.ordered, func(a, b *commandMetrics) int { return strings.Compare(a.name, b.name) })
	return o
}

// observe records what a command took, for the slow log and metrics.
// For a command that is not slow it costs a few atomic additions and
// allocates nothing.
func (c *Commands) observe(cx *Context, o *observer, cmd *Command, args [][]byte, d time.Duration, errors int) {
	if m := cx.metrics; m != nil {
		m.stripes[cx.stripe].record(d, errors, m.decides || cx.later)
	}
	if sl := o.slowlog; sl != nil && d >= sl.threshold {
		sl.add(cx, cmd, args, d)
	}
}

// tally is where a deciding command's answer is counted: the running
// command's metrics, in the client's stripe. A command that finishes later
// keeps its tally, since the Context moves on to the next command.
type tally struct {
	m      *commandMetrics // nil: not counted
	stripe int
	errs   *errorStats // where its error replies are counted by code; nil: not counted

	// What a refusal is recorded under, for THROTTLE.TOP: key, of family,
	// or each of rules' keys (THROTTLE.ALL); nothing when refusals is nil.
	// key and rules alias the request until detach copies them.
	refusals *refusals
	key      []byte
	family   engine.Family
	rules    []engine.Rule
}

// sharesKey reports whether t and o decide a key in common.
func (t tally) sharesKey(o tally) bool {
	if t.rules == nil {
		return o.decidesKey(t.key)
	}
	for _, r := range t.rules {
		if o.decidesKey(r.Key) {
			return true
		}
	}
	return false
}

// keySig is a cheap signature of t's key, for pendingOn to tell most keys
// apart without comparing them: two keys with different signatures differ
// (their lengths, or their last eight bytes, do). It is 0 for a tally of
// several rules, which is compared in full.
func (t tally) keySig() uint64 {
	if t.rules != nil {
		return 0
	}
	var last [8]byte
	copy(last[:], t.key[max(len(t.key)-8, 0):])
	return (binary.LittleEndian.Uint64(last[:]) ^ uint64(len(t.key))<<56) | 1
}

// decidesKey reports whether t decides key: its key, or one of its rules'.
func (t tally) decidesKey(key []byte) bool {
	if t.rules == nil {
		return bytes.Equal(t.key, key)
	}
	for _, r := range t.rules {
		if bytes.Equal(r.Key, key) {
			return true
		}
	}
	return false
}

// tally returns the running command's tally.
func (cx *Context) tally() tally {
	return tally{m: cx.metrics, stripe: cx.stripe, errs: &cx.cmds.replyErrors}
}

// tallyKey returns the running command's tally for a decision on key, of
// family f, whose refusal THROTTLE.TOP records.
func (cx *Context) tallyKey(key []byte, f engine.Family) tally {
	t := cx.tally()
	t.refusals, t.key, t.family = cx.cmds.refusals, key, f
	return t
}

// tallyRules returns the running command's tally for a decision on rules
// (THROTTLE.ALL), whose refusal THROTTLE.TOP records under every rule's
// key: which rule refused is not known.
func (cx *Context) tallyRules(rules []engine.Rule) tally {
	t := cx.tally()
	t.refusals, t.rules = cx.cmds.refusals, rules
	return t
}

// detach copies the keys the tally holds (and its rules whole), for a
// decision answered after the request's buffer may be reused (shared
// mode). It allocates.
func (t tally) detach() tally { return t.detachInto(nil) }

// detachInto is detach copying the key into room's capacity, allocating
// only for a longer key or for rules.
func (t tally) detachInto(room []byte) tally {
	if t.key != nil {
		t.key = append(room[:0], t.key...)
	}
	if t.rules != nil {
		rules := make([]engine.Rule, len(t.rules))
		for i, r := range t.rules {
			rules[i] = r
			rules[i].Key = bytes.Clone(r.Key)
		}
		t.rules = rules
	}
	return t
}

// decided counts the answer of a deciding command (CL.THROTTLE): allowed,
// or limited. Its handler calls it as it writes the answer; observe counts
// the call's time and any error written before the handler returned.
func (t tally) decided(limited bool) {
	switch {
	case t.m == nil:
	case limited:
		t.m.stripes[t.stripe].limited.Add(1)
	default:
		t.m.stripes[t.stripe].allowed.Add(1)
	}
	if limited && t.refusals != nil {
		if t.rules == nil {
			t.refusals.refused(t.key, t.family)
		}
		for _, r := range t.rules {
			t.refusals.refused(r.Key, r.Family)
		}
	}
}

// outcome writes a reply that a command finishing later has just
// completed, with write, and counts what it answered: an error, or for a
// command that decides nothing, a success (decided counts the others).
func (t tally) outcome(w Writer, write func(Writer)) {
	ec := errorCounter{Writer: w, stats: t.errs}
	write(&ec)
	switch {
	case t.m == nil:
	case ec.errors > 0:
		t.m.stripes[t.stripe].errors.Add(1)
	case !t.m.decides:
		t.m.stripes[t.stripe].ok.Add(1)
	}
}
