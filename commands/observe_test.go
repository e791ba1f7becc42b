package commands

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// metricsOf returns the named command's metrics.
func metricsOf(t *testing.T, c *Commands, name string) CommandMetrics {
	t.Helper()
	for _, m := range c.Metrics() {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metrics for %q", name)
	return CommandMetrics{}
}

// outcomes is a command's counts by outcome and its number of timed calls.
type outcomes struct{ allowed, limited, errors, ok, calls uint64 }

func outcomesOf(m CommandMetrics) outcomes {
	return outcomes{m.Allowed, m.Limited, m.Errors, m.OK, m.Calls()}
}

// TestObserveOutcomes: every call that ran counts once, as allowed or
// limited (CL.THROTTLE), ok (other commands) or error, and once in the
// latency histogram; rejected calls count nowhere.
func TestObserveOutcomes(t *testing.T) {
	h := newHarness(t)
	for range 3 {
		h.do("CL.THROTTLE", "k", "1", "1", "60") // a limit of 2: allowed, allowed, limited
	}
	h.do("CL.THROTTLE", "k", "1", "1", "60", "0") // a peek at the full limit: allowed
	h.do("CL.THROTTLE", "k", "x", "1", "60")      // parse error
	h.do("CL.THROTTLE", "z", "1", "0", "60")      // zero rate
	h.do("PING")
	h.do("PING", "a", "b") // error
	h.do("ECHO")           // rejected (arity)
	h.do("NOSUCH")         // rejected (unknown)
	h.do("MULTI")
	h.do("CL.THROTTLE", "m", "5", "1", "60")
	h.do("EXEC")
	h.do("CLIENT", "SETNAME", "a b") // error, counted under the subcommand

	for name, want := range map[string]outcomes{
		"cl.throttle":    {allowed: 4, limited: 1, errors: 2, calls: 7},
		"ping":           {ok: 1, errors: 1, calls: 2},
		"echo":           {},
		"multi":          {ok: 1, calls: 1},
		"exec":           {ok: 1, calls: 1},
		"client|setname": {errors: 1, calls: 1},
		"client":         {},
	} {
		m := metricsOf(t, h.cmds, name)
		if got := outcomesOf(m); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
		if m.Decides != (name == "cl.throttle") {
			t.Errorf("%s: Decides = %v", name, m.Decides)
		}
	}
	// INFO stats sums the decisions, and CONFIG RESETSTAT zeroes them
	// there, but leaves the metrics alone.
	text := infoText(t, h, "stats")
	if field(t, text, "throttle_allowed_calls") != "4" || field(t, text, "throttle_limited_calls") != "1" {
		t.Errorf("INFO stats: %q", text)
	}
	h.do("CONFIG", "RESETSTAT")
	text = infoText(t, h, "stats")
	if field(t, text, "throttle_allowed_calls") != "0" || field(t, text, "throttle_limited_calls") != "0" {
		t.Errorf("INFO stats after CONFIG RESETSTAT: %q", text)
	}
	if got := outcomesOf(metricsOf(t, h.cmds, "cl.throttle")); got.calls != 7 {
		t.Errorf("after CONFIG RESETSTAT: %+v", got)
	}
	// Every command and subcommand has metrics, by name.
	all := h.cmds.Metrics()
	n := 0
	for _, cmd := range h.cmds.table.sorted {
		n += 1 + len(cmd.Sub)
	}
	if len(all) != n || !slices.IsSortedFunc(all, func(a, b CommandMetrics) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("Metrics lists %d commands (want %d), sorted by name", len(all), n)
	}
}

// TestLatencyBuckets: a call lands in the first bucket whose bound is at
// least its duration, or in the last, and the sum adds up.
func TestLatencyBuckets(t *testing.T) {
	bounds := LatencyBounds()
	if len(bounds) != len(latencyBounds) || bounds[0] != 5*time.Microsecond || bounds[len(bounds)-1] != time.Second {
		t.Fatalf("LatencyBounds = %v", bounds)
	}
	bounds[0] = 0 // a copy: the histogram's own bounds do not change
	m := &metricsStripe{}
	for _, d := range []time.Duration{0, 5 * time.Microsecond, 5*time.Microsecond + 1, 999 * time.Microsecond,
		time.Millisecond, time.Second, 2 * time.Second} {
		m.record(d, 0, false)
	}
	snap := CommandMetrics{Buckets: make([]uint64, len(m.buckets))}
	for i := range m.buckets {
		snap.Buckets[i] = m.buckets[i].Load()
	}
	want := map[int]uint64{0: 2, 1: 1, 7: 2, 16: 1, 17: 1} // ≤5µs, ≤10µs, ≤1ms, ≤1s, +Inf
	for i, n := range snap.Buckets {
		if n != want[i] {
			t.Errorf("bucket %d (≤ %v) = %d, want %d", i, latencyBounds[min(i, len(latencyBounds)-1)], n, want[i])
		}
	}
	if snap.Calls() != 7 || m.ok.Load() != 7 {
		t.Errorf("calls %d ok %d, want 7", snap.Calls(), m.ok.Load())
	}
	if got, want := time.Duration(m.sumNanos.Load()), 3*time.Second+2009*time.Microsecond+1; got != want {
		t.Errorf("sum %v, want %v", got, want)
	}
}

// TestObserveAllocs: counting a CL.THROTTLE call allocates nothing.
func TestObserveAllocs(t *testing.T) {
	h := newHarness(t)
	args := [][]byte{[]byte("CL.THROTTLE"), []byte("user123"), []byte("0"), []byte("1"), []byte("60")}
	h.do("CL.THROTTLE", "user123", "0", "1", "60")
	w := discardWriter{}
	if allocs := testing.AllocsPerRun(1000, func() { h.cmds.Dispatch(w, h.client, args) }); allocs != 0 {
		t.Errorf("limited CL.THROTTLE: %v allocs, want 0", allocs)
	}
	if m := metricsOf(t, h.cmds, "cl.throttle"); m.Limited < 1000 || m.Allowed != 1 {
		t.Errorf("allowed %d limited %d", m.Allowed, m.Limited)
	}
}

// boundedHarness is a harness over an engine of one shard with room for
// keys keys with one-byte names.
func boundedHarness(t *testing.T, keys int64) *harness {
	h := newHarness(t)
	probe := engine.New(engine.Options{Shards: 1, SweepInterval: -1})
	probe.Throttle(nil, []byte("k"), engine.GCRAQuota{MaxBurst: 1, Count: 1, Period: 1}, 1)
	perKey := probe.Used() // what a key with a one-byte name costs
	probe.Close()
	h.eng = engine.New(engine.Options{Now: h.clock.Now, SweepInterval: -1, Shards: 1, MaxMemory: keys * perKey})
	t.Cleanup(h.eng.Close)
	return h.withOpts(Options{})
}

// TestMaxmemoryReplies: under maxmemory, new keys evict the soonest to
// expire; a key that cannot fit gets Redis's OOM error. INFO and CONFIG GET
// report the bound, the estimate and the evictions.
func TestMaxmemoryReplies(t *testing.T) {
	h := boundedHarness(t, 2)
	maxmemory := h.eng.MaxMemory()
	h.runSteps([]replyStep{
		{[]string{"CL.THROTTLE", "a", "15", "30", "60", "3"}, ints(0, 16, 13, -1, 6)},
		{[]string{"CL.THROTTLE", "b", "15", "30", "60"}, ints(0, 16, 15, -1, 2)},
		{[]string{"CL.THROTTLE", "c", "15", "30", "60", "2"}, ints(0, 16, 14, -1, 4)}, // evicts b
		{[]string{"EXISTS", "a", "b", "c"}, wantInt(2)},
		{[]string{"TYPE", "b"}, wantStatus("none")},
		{[]string{"CL.THROTTLE", strings.Repeat("x", 400), "15", "30", "60"}, wantErr(msgOOM)}, // over the whole budget
		{[]string{"DBSIZE"}, wantInt(2)},
		{[]string{"CONFIG", "GET", "maxmemory*"}, wantArray(4) +
			wantBulks("maxmemory", itoa(maxmemory), "maxmemory-policy", "volatile-ttl")},
	})
	text := infoText(t, h, "memory", "stats")
	for name, want := range map[string]string{
		"maxmemory": itoa(maxmemory), "maxmemory_human": bytesToHuman(uint64(maxmemory)),
		"maxmemory_policy": "volatile-ttl", "used_memory_dataset": itoa(maxmemory), "evicted_keys": "1",
	} {
		if got := field(t, text, name); got != want {
			t.Errorf("INFO %s = %s, want %s", name, got, want)
		}
	}
	if m := metricsOf(t, h.cmds, "cl.throttle"); m.Errors != 1 || m.Allowed != 3 {
		t.Errorf("cl.throttle metrics %+v", m)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestCountersAddUpAcrossStripes checks that clients counting into
// different stripes are all counted: INFO's totals, commandstats and the
// metrics add the copies up, and CONFIG RESETSTAT zeroes every copy.
func TestCountersAddUpAcrossStripes(t *testing.T) {
	h := newHarness(t)
	w := discardWriter{}
	n := int64(2*counterStripes + 3)
	h.cmds.Dispatch(w, h.client, [][]byte{[]byte("NOSUCH")}) // unknown: an error of no command
	for id := int64(1); id <= n; id++ {
		cl := NewClient(id, "127.0.0.1:50000", "127.0.0.1:6379", h.clock.Now())
		h.cmds.Dispatch(w, cl, [][]byte{[]byte("CL.THROTTLE"), []byte("k"), []byte("1000"), []byte("1000"), []byte("60")})
		h.cmds.Dispatch(w, cl, [][]byte{[]byte("CL.THROTTLE"), []byte("k")}) // redis-cell's usage error: failed
		h.cmds.Dispatch(w, cl, [][]byte{[]byte("TIME"), []byte("x")})        // wrong arity: rejected
	}
	if processed, errors := h.cmds.totals(); processed != 2*n || errors != 2*n+1 {
		t.Errorf("processed %d errors %d, want %d and %d", processed, errors, 2*n, 2*n+1)
	}
	byName := map[string]*Command{}
	for _, c := range h.cmds.table.sorted {
		byName[c.Name] = c
	}
	if s := h.cmds.sinceReset(byName["cl.throttle"]); s.calls != 2*n || s.failed != n || s.rejected != 0 {
		t.Errorf("cl.throttle commandstats %+v, want calls %d, failed %d", s, 2*n, n)
	}
	if s := h.cmds.sinceReset(byName["time"]); s.calls != 0 || s.rejected != n {
		t.Errorf("time commandstats %+v, want rejected %d", s, n)
	}
	found := false
	for _, m := range h.cmds.Metrics() {
		if m.Name == "cl.throttle" {
			found = true
			if m.Allowed != uint64(n) || m.Errors != uint64(n) || m.Calls() != uint64(2*n) {
				t.Errorf("metrics allowed %d errors %d calls %d, want %d, %d, %d", m.Allowed, m.Errors, m.Calls(), n, n, 2*n)
			}
		}
	}
	if !found {
		t.Error("no metrics for cl.throttle")
	}
	h.cmds.resetStats()
	processed, errors := h.cmds.totals()
	if s := h.cmds.sinceReset(byName["cl.throttle"]); s != (statsSnapshot{}) || processed != 0 || errors != 0 {
		t.Errorf("after reset: %+v, processed %d, errors %d", s, processed, errors)
	}
	// The metrics keep counting across the reset.
	for _, m := range h.cmds.Metrics() {
		if m.Name == "cl.throttle" && m.Calls() != uint64(2*n) {
			t.Errorf("metrics after reset: %d calls, want %d", m.Calls(), 2*n)
		}
	}
}
