package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Decide model test: the keyspace is the model. Each case is a stored
// state, restored into a fresh Engine whose clock reads the case's instant;
// the engine's command and Decide on the same state must give the same
// decision, the same error and the same new state with the same expiry.

// decideCases is how many cases each group runs.
const decideCases = 100_000

// decideCase is one call: op on rules for qty at now, on states.
type decideCase struct {
	now    int64
	op     Op
	rules  []Rule
	states []Record
	qty    int64
	// qtys, when set, are an OpAll's quantities, one a rule: DecideEach
	// against ThrottleAllEach (qty is their largest).
	qtys []int64
}

func (c decideCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "now=%d (ms %d) op=%d qty=%d qtys=%v\n", c.now, c.now/1_000_000, c.op, c.qty, c.qtys)
	for i, r := range c.rules {
		fmt.Fprintf(&b, "  rule %d: key=%q family=%s gcra=%+v window=%+v leaky=%+v\n", i, r.Key, r.Family.Name(), r.GCRA, r.Window, r.Leaky)
		fmt.Fprintf(&b, "  state %d: %s\n", i, fmtRecord(c.states[i]))
	}
	return b.String()
}

func fmtRecord(r Record) string {
	return fmt.Sprintf("{key=%q family=%s deleted=%t tat=%d start=%d cur=%d prev=%d tail=%d expireAtMs=%d log=%v qs=%v}",
		r.Key, r.Family.Name(), r.Deleted, r.TAT, r.Start, r.Cur, r.Prev, r.Tail, r.ExpireAtMs, r.Log, r.Quantities)
}

// cloneRecord copies r with slices of its own.
func cloneRecord(r Record) Record {
	r.Log, r.Quantities = slices.Clone(r.Log), slices.Clone(r.Quantities)
	return r
}

// decideSeed is the model test's seed: CELLSERVER_DECIDE_SEED when set (a
// number, or "random"), or a fixed one.
func decideSeed(t *testing.T) uint64 {
	t.Helper()
	s := os.Getenv("CELLSERVER_DECIDE_SEED")
	switch s {
	case "":
		return 20261124
	case "random":
		return uint64(time.Now().UnixNano())
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("CELLSERVER_DECIDE_SEED=%q: %v", s, err)
	}
	return n
}

// keyspaceOutcome is what the engine answered and holds afterwards.
type keyspaceOutcome struct {
	d      Decision
	result Result     // OpThrottle's reply
	each   []Decision // ThrottleAllEach's rules' own
	err    error
	after  map[string]Record // every rule's key's state; Deleted when gone
}

// runKeyspace restores the case's states into a fresh engine at the case's
// instant and runs the case's command there.
func runKeyspace(c decideCase) keyspaceOutcome {
	clock := NewManualClock(time.Unix(0, c.now))
	e := New(Options{Now: clock.Now, SweepInterval: -1, Shards: 2, TrackChanges: true})
	defer e.Close()
	for _, rec := range c.states {
		e.Restore(cloneRecord(rec))
	}
	var out keyspaceOutcome
	switch c.op {
	case OpThrottle:
		out.result, out.err = e.Throttle(nil, c.rules[0].Key, c.rules[0].GCRA, c.qty)
	case OpWindow:
		out.d, out.err = e.ThrottleWindow(nil, c.rules[0], c.qty)
	case OpAll:
		if c.qtys != nil {
			out.each = make([]Decision, len(c.rules))
			out.d, out.err = e.ThrottleAllEach(nil, c.rules, c.qtys, out.each)
			break
		}
		out.d, out.err = e.ThrottleAll(nil, c.rules, c.qty)
	}
	keys := make([]string, len(c.rules))
	for i, r := range c.rules {
		keys[i] = string(r.Key)
	}
	e.MarkChanged(keys)
	out.after = map[string]Record{}
	for _, rec := range e.Changes(nil, len(keys)+1) {
		out.after[rec.Key] = rec
	}
	return out
}

// liveAt reports whether a stored state is a key at nowMs, as the keyspace
// would take it.
func liveAt(r Record, nowMs int64) bool {
	if r.Deleted || r.Family == FamilyNone || nowMs > r.ExpireAtMs {
		return false
	}
	return r.Family != FamilySW || len(r.Log) > 0 && len(r.Log) == len(r.Quantities)
}

// sameState reports whether Decide's new live state equals the keyspace's.
func sameState(got, want Record) bool {
	if got.Family != want.Family || got.ExpireAtMs != want.ExpireAtMs {
		return false
	}
	switch got.Family {
	case FamilyCL:
		return got.TAT == want.TAT
	case FamilySWC:
		return got.Start == want.Start && got.Cur == want.Cur && got.Prev == want.Prev
	case FamilyFW:
		return got.Start == want.Start && got.Cur == want.Cur // a fixed window reads no Prev
	case FamilySW:
		return slices.Equal(got.Log, want.Log) && slices.Equal(got.Quantities, want.Quantities)
	case FamilyLB:
		return got.Tail == want.Tail
	}
	return false
}

// decideTally counts what a group's cases exercised.
type decideTally struct {
	admitted, limited, peeks, created, removed int
	errs                                       map[error]int
}

// checkDecide runs one case both ways and returns a description of the
// first difference, or "".
func checkDecide(c decideCase, tally *decideTally) string {
	nowMs := c.now / 1_000_000
	given := make([]Record, len(c.states))
	for i, r := range c.states {
		given[i] = cloneRecord(r)
	}
	want := runKeyspace(c)
	states := slices.Clone(c.states) // shares the slices, which Decide must not change
	var d Decision
	var err error
	var each []Decision
	if c.qtys != nil {
		each = make([]Decision, len(c.rules))
		d, err = DecideEach(c.now, c.rules, states, c.qtys, each)
	} else {
		d, err = Decide(c.now, c.op, c.rules, states, c.qty)
	}
	for i := range c.states {
		if !slices.Equal(c.states[i].Log, given[i].Log) || !slices.Equal(c.states[i].Quantities, given[i].Quantities) {
			return fmt.Sprintf("state %d: Decide changed the given log in place", i)
		}
	}
	if !sameError(err, want.err) {
		return fmt.Sprintf("error %v, the keyspace's %v", err, want.err)
	}
	switch {
	case err != nil:
		switch {
		case errors.Is(err, ErrDuplicateKey):
			err = ErrDuplicateKey
		case errors.Is(err, ErrWrongType):
			err = ErrWrongType
		}
		tally.errs[err]++
	case c.op == OpThrottle:
		if d.Seconds() != want.result {
			return fmt.Sprintf("reply %+v, the keyspace's %+v", d.Seconds(), want.result)
		}
	case d != want.d || d.Seconds() != want.d.Seconds() || d.Millis() != want.d.Millis():
		return fmt.Sprintf("decision %s %+v, the keyspace's %s %+v", fmtDecision(d), d.Seconds(), fmtDecision(want.d), want.d.Seconds())
	case !slices.Equal(each, want.each):
		return fmt.Sprintf("rules' decisions %+v, the keyspace's %+v", each, want.each)
	}
	if err == nil {
		switch {
		case c.qty == 0:
			tally.peeks++
		case d.Limited:
			tally.limited++
		default:
			tally.admitted++
		}
	}
	if err == ErrDuplicateKey {
		if !slicesEqualRecords(states, given) {
			return "states changed on an error"
		}
		return ""
	}
	for i, r := range c.rules {
		got, in := states[i], given[i]
		if got.Key != in.Key {
			return fmt.Sprintf("state %d: key %q, given %q", i, got.Key, in.Key)
		}
		if err != nil {
			wantGot := in
			if err == ErrExpire && c.op == OpThrottle && liveAt(in, nowMs) {
				wantGot = Record{Key: in.Key, Deleted: true}
				tally.removed++
			}
			if !slicesEqualRecords([]Record{got}, []Record{wantGot}) {
				return fmt.Sprintf("state %d on an error: %s, want %s", i, fmtRecord(got), fmtRecord(wantGot))
			}
		} else {
			wasLive, isLive := liveAt(in, nowMs), liveAt(got, nowMs)
			switch {
			case got.Deleted && !wasLive:
				return fmt.Sprintf("state %d: Deleted, but there was no key", i)
			case !isLive && !got.Deleted && !slicesEqualRecords([]Record{got}, []Record{{Key: in.Key}}):
				return fmt.Sprintf("state %d: %s for an absent key, want FamilyNone", i, fmtRecord(got))
			case got.Deleted:
				tally.removed++
			case isLive && !wasLive:
				tally.created++
			}
		}
		k := want.after[string(r.Key)]
		if liveAt(got, nowMs) != !k.Deleted || !k.Deleted && !sameState(got, k) {
			return fmt.Sprintf("state %d: %s, the keyspace holds %s", i, fmtRecord(got), fmtRecord(k))
		}
	}
	return ""
}

// slicesEqualRecords compares records field by field, slices by content.
func slicesEqualRecords(a, b []Record) bool {
	return slices.EqualFunc(a, b, func(x, y Record) bool {
		return slices.Equal(x.Log, y.Log) && slices.Equal(x.Quantities, y.Quantities) &&
			x.Key == y.Key && x.Family == y.Family && x.TAT == y.TAT && x.Start == y.Start &&
			x.Cur == y.Cur && x.Prev == y.Prev && x.Tail == y.Tail && x.ExpireAtMs == y.ExpireAtMs && x.Deleted == y.Deleted
	})
}

// decideGroups are the model test's groups: a family's command, and
// THROTTLE.ALL over 1 to 4 rules of mixed families.
var decideGroups = []struct {
	name   string
	op     Op
	family Family // FamilyNone: mixed
	each   bool   // a quantity a rule: DecideEach
}{
	{"CL", OpThrottle, FamilyCL, false},
	{"SW", OpWindow, FamilySW, false},
	{"SWC", OpWindow, FamilySWC, false},
	{"FW", OpWindow, FamilyFW, false},
	{"LB", OpWindow, FamilyLB, false},
	{"ALL", OpAll, FamilyNone, false},
	{"ALLEACH", OpAll, FamilyNone, true},
}

// newDecideCase draws a case for a group; each draws a quantity a rule.
func newDecideCase(g decideGen, op Op, f Family, each bool) decideCase {
	c := decideCase{now: g.now(), op: op}
	n := 1
	if op == OpAll {
		n = 1 + g.rng.IntN(4)
		if g.rng.IntN(500) == 0 {
			n = 0
		}
	}
	for i := range n {
		rf := f
		if rf == FamilyNone {
			rf = pick(g, FamilyCL, FamilySW, FamilySWC, FamilyFW)
			if g.rng.IntN(50) == 0 {
				rf = FamilyLB // ErrLeakyInAll
			}
		}
		key := "k" + strconv.Itoa(i)
		if i > 0 && g.rng.IntN(100) == 0 {
			key = "k0" // ErrDuplicateKey
		}
		r := g.rule(key, rf)
		st := g.state(rf, c.now, r.Window)
		st.Key = key
		c.rules, c.states = append(c.rules, r), append(c.states, st)
	}
	limit := int64(10)
	switch {
	case n == 0, c.rules[0].Family == FamilyCL:
	case c.rules[0].Family == FamilyLB:
		if q := c.rules[0].Leaky; q.valid() {
			limit = q.MaxWait/q.Interval() + 1
		}
	default:
		limit = c.rules[0].Window.Limit
	}
	c.qty = g.quantity(limit)
	if n > 0 && c.rules[0].Family == FamilyCL && g.rng.IntN(8) == 0 {
		c.qty = -1 - g.rng.Int64N(2) // a TAT moved back: removals, ErrExpire
	}
	if each {
		// Mostly the same quantity for every rule, as a request's
		// descriptors usually have; otherwise each its own.
		c.qtys = make([]int64, n)
		for i := range c.qtys {
			c.qtys[i] = c.qty
			if g.rng.IntN(2) == 0 {
				c.qtys[i] = g.quantity(limit)
			}
		}
		c.qty = mostOf(c.qtys)
	}
	return c
}

// TestDecideMatchesKeyspace: on random and extreme stored states, Decide
// answers as the keyspace does after restoring them, and leaves the states
// the keyspace holds afterwards.
func TestDecideMatchesKeyspace(t *testing.T) {
	seed := decideSeed(t)
	t.Logf("seed %d (CELLSERVER_DECIDE_SEED=%d replays it)", seed, seed)
	for gi, grp := range decideGroups {
		t.Run(grp.name, func(t *testing.T) {
			g := decideGen{rand.New(rand.NewPCG(seed, uint64(gi)))}
			tally := decideTally{errs: map[error]int{}}
			for i := range decideCases {
				c := newDecideCase(g, grp.op, grp.family, grp.each)
				if msg := checkDecide(c, &tally); msg != "" {
					t.Fatalf("seed %d, case %d: %s\n%s", seed, i, msg, c)
				}
			}
			t.Logf("%d cases: %d admitted, %d limited, %d peeks, %d keys created, %d removed; errors %v",
				decideCases, tally.admitted, tally.limited, tally.peeks, tally.created, tally.removed, tally.errs)
			// Counters and queues only expire.
			removes := grp.family != FamilySWC && grp.family != FamilyFW && grp.family != FamilyLB
			if tally.admitted < decideCases/10 || tally.limited < decideCases/20 || removes && tally.removed == 0 {
				t.Errorf("the cases do not exercise every outcome")
			}
		})
	}
}

// sameError reports whether two errors are the same: the same value, or
// (a *DuplicateKeyError is made per call) the same text of the same kind.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a == b {
		return true
	}
	// Errors that name rules match when they name the same ones.
	for _, target := range []error{ErrDuplicateKey, ErrWrongType} {
		if errors.Is(a, target) && errors.Is(b, target) && a.Error() == b.Error() {
			return true
		}
	}
	return false
}
