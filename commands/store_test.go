package commands

import (
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// fakeStore is a Store over an engine of its own, answering every decision
// on a goroutine of its own after a random delay of up to a millisecond,
// so that answers come back out of order; Delete fails for the key "bad".
type fakeStore struct {
	eng *engine.Engine
	wg  sync.WaitGroup
}

func (f *fakeStore) later(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
		fn()
	}()
}

func (f *fakeStore) Throttle(key []byte, q engine.GCRAQuota, n int64, _ bool, done engine.ThrottleDone) {
	key = append([]byte(nil), key...)
	f.later(func() { done.Done(f.eng.Throttle(nil, key, q, n)) })
}

func (f *fakeStore) ThrottleWindow(r engine.Rule, n int64, _ bool, done func(engine.Decision, error)) {
	r.Key = append([]byte(nil), r.Key...)
	f.later(func() { done(f.eng.ThrottleWindow(nil, r, n)) })
}

func (f *fakeStore) ThrottleAll(rules []engine.Rule, n int64, done func(engine.Decision, error)) {
	f.later(func() { done(f.eng.ThrottleAll(nil, rules, n)) })
}

func (f *fakeStore) Now() time.Time { return f.eng.Now() }

func (f *fakeStore) Get(_ context.Context, key string) (string, bool, error) {
	v, ok := f.eng.Get(nil, []byte(key))
	switch {
	case !ok:
		return "", false, nil
	case v.Family != engine.FamilyCL:
		return "", true, engine.ErrWrongType
	}
	return strconv.FormatUint(v.TAT, 10), true, nil
}

func (f *fakeStore) Type(_ context.Context, key string) (string, error) {
	v, ok := f.eng.Get(nil, []byte(key))
	if !ok {
		return "none", nil
	}
	return v.Family.TypeName(), nil
}

func (f *fakeStore) Record(_ context.Context, key string) (engine.Record, bool, error) {
	v, ok := f.eng.Get(nil, []byte(key))
	if !ok || v.Family != engine.FamilySW {
		return engine.Record{Key: key, Family: v.Family}, ok, nil
	}
	rec := engine.Record{Key: key, Family: engine.FamilySW}
	log, err := f.eng.SWLog(nil, []byte(key), 0, engine.MaxWindowLimit)
	for _, e := range log {
		rec.Log, rec.Quantities = append(rec.Log, e.At), append(rec.Quantities, e.Quantity)
	}
	return rec, true, err
}

func (f *fakeStore) PTTL(_ context.Context, key string) (int64, error) {
	return f.eng.PTTL(nil, []byte(key)), nil
}

func (f *fakeStore) Exists(_ context.Context, keys []string) (int64, error) {
	n := int64(0)
	for _, k := range keys {
		if _, ok := f.eng.Get(nil, []byte(k)); ok {
			n++
		}
	}
	return n, nil
}

func (f *fakeStore) Delete(_ context.Context, keys []string) (int64, error) {
	n := int64(0)
	for _, k := range keys {
		if k == "bad" {
			return 0, errors.New("the store said no")
		}
		if f.eng.Delete(nil, []byte(k)) {
			n++
		}
	}
	return n, nil
}

func (f *fakeStore) Scan(context.Context, uint64, string, int64, string) ([]string, uint64, error) {
	return nil, 0, nil
}
func (f *fakeStore) Keys(context.Context, string) ([]string, error) { return nil, nil }
func (f *fakeStore) Len(context.Context) (int64, error)             { return int64(f.eng.Len(nil)), nil }
func (f *fakeStore) Flush(context.Context) error                    { f.eng.Flush(nil); return nil }

// newStoreHarness is a harness whose commands run against a fakeStore,
// and the harness of the same commands in memory, on one clock.
func newStoreHarness(t *testing.T) (shared, memory *harness) {
	t.Helper()
	memory = newHarness(t)
	eng := engine.New(engine.Options{Now: memory.clock.Now, SweepInterval: -1})
	t.Cleanup(eng.Close)
	st := &fakeStore{eng: eng}
	local := engine.New(engine.Options{Now: memory.clock.Now, SweepInterval: -1})
	t.Cleanup(local.Close)
	cmds := New(Options{Engine: local, Version: "test", Store: st})
	t.Cleanup(func() { cmds.Close(); st.wg.Wait() })
	shared = &harness{t: t, clock: memory.clock, eng: local, cmds: cmds,
		client: NewClient(1, "127.0.0.1:50000", "127.0.0.1:6379", memory.clock.Now())}
	return shared, memory
}

// TestStoreRepliesAsMemory: the deciding and keyspace commands answer the
// same bytes through a Store as in memory, the store's answers coming back
// on other goroutines.
func TestStoreRepliesAsMemory(t *testing.T) {
	shared, memory := newStoreHarness(t)
	for _, args := range [][]string{
		{"CL.THROTTLE", "cl", "2", "10", "60"},
		{"CL.THROTTLE", "cl", "2", "10", "60", "5"},
		{"CL.THROTTLE", "cl", "0", "0", "60"},
		{"SW.THROTTLE", "sw", "3", "1m", "2"},
		{"SW.THROTTLE", "sw", "3", "1m", "2", "MS"},
		{"FW.THROTTLE", "cl", "3", "1m"},
		{"THROTTLE.ALL", "CL", "a", "1", "1", "60", "SW", "sw", "3", "1m"},
		{"THROTTLE.ALL", "FW", "a", "1", "1m", "FW", "a", "1", "1m"},
		{"GET", "cl"}, {"GET", "sw"}, {"GET", "none"},
		{"TYPE", "sw"}, {"PTTL", "cl"}, {"TTL", "cl"}, {"EXISTS", "cl", "sw", "none"},
		{"DEL", "cl", "none"}, {"DBSIZE"},
	} {
		if got, want := shared.do(args...), memory.do(args...); got != want {
			t.Errorf("%q through a store: %q, in memory %q", args, got, want)
		}
	}
}

// TestStoreTransactionInOrder: inside EXEC, the commands act on the store
// one after the other, though the store answers each out of order.
func TestStoreTransactionInOrder(t *testing.T) {
	for range 20 {
		shared, _ := newStoreHarness(t)
		shared.do("CL.THROTTLE", "k", "0", "1", "60")
		shared.do("MULTI")
		shared.do("DEL", "k")
		shared.do("CL.THROTTLE", "k", "0", "1", "60")
		shared.do("CL.THROTTLE", "k", "0", "1", "60")
		shared.do("EXISTS", "k")
		got := shared.do("EXEC")
		want := "*4\r\n:1\r\n" + ints(0, 1, 0, -1, 60) + ints(1, 1, 0, 60, 60) + ":1\r\n"
		if got != want {
			t.Fatalf("EXEC = %q, want %q", got, want)
		}
	}
}

// TestStoreCountsLaterOutcomes: a command that finishes later is counted
// once, by its outcome: a keyspace command the store failed as a failed
// call, one it carried out as a success.
func TestStoreCountsLaterOutcomes(t *testing.T) {
	shared, _ := newStoreHarness(t)
	if got := shared.do("DEL", "bad"); got[0] != '-' {
		t.Fatalf("DEL of a key the store refuses: %q", got)
	}
	shared.do("DEL", "k")
	shared.do("CL.THROTTLE", "k", "0", "0", "60") // zero rate: an error, answered later
	text := infoText(t, shared, "commandstats")
	for name, want := range map[string]string{
		"del":         "calls=2,rejected_calls=0,failed_calls=1",
		"cl.throttle": "calls=1,rejected_calls=0,failed_calls=1",
	} {
		v := field(t, text, "cmdstat_"+name)
		if got := regexp.MustCompile(`usec=\d+,usec_per_call=\d+\.\d\d,`).ReplaceAllString(v, ""); got != want {
			t.Errorf("cmdstat_%s = %s, want %s", name, got, want)
		}
	}
}

// pausingWriter is a respWriter whose commands may pause, as a connection's
// writer: each Pause reserves a slot, later writes go after it, and String
// waits for every slot and joins them in order.
type pausingWriter struct {
	proto int
	parts []*respWriter // writes and slots, in order
	wg    sync.WaitGroup
}

func newPausingWriter(proto int) *pausingWriter {
	return &pausingWriter{proto: proto, parts: []*respWriter{{proto: proto}}}
}

func (p *pausingWriter) cur() *respWriter { return p.parts[len(p.parts)-1] }

func (p *pausingWriter) Pause() Paused {
	slot := &respWriter{proto: p.proto}
	p.parts = append(p.parts, slot, &respWriter{proto: p.proto})
	p.wg.Add(1)
	return pausedSlot{p, slot}
}

// pausedSlot is a pausingWriter's paused reply.
type pausedSlot struct {
	p    *pausingWriter
	slot *respWriter
}

func (s pausedSlot) Complete(r Reply) {
	if r != nil {
		r.WriteReply(s.slot)
	}
	s.p.wg.Done()
}

func (p *pausingWriter) String() string {
	p.wg.Wait()
	var s string
	for _, part := range p.parts {
		s += part.buf.String()
	}
	return s
}

func (p *pausingWriter) WriteError(msg string)    { p.cur().WriteError(msg) }
func (p *pausingWriter) WriteString(s string)     { p.cur().WriteString(s) }
func (p *pausingWriter) WriteBulk(b []byte)       { p.cur().WriteBulk(b) }
func (p *pausingWriter) WriteBulkString(s string) { p.cur().WriteBulkString(s) }
func (p *pausingWriter) WriteInt(n int64)         { p.cur().WriteInt(n) }
func (p *pausingWriter) WriteArray(n int)         { p.cur().WriteArray(n) }
func (p *pausingWriter) WriteMap(n int)           { p.cur().WriteMap(n) }
func (p *pausingWriter) WriteSet(n int)           { p.cur().WriteSet(n) }
func (p *pausingWriter) WriteNull()               { p.cur().WriteNull() }
func (p *pausingWriter) WriteNullArray()          { p.cur().WriteNullArray() }
func (p *pausingWriter) WriteVerbatim(s string)   { p.cur().WriteVerbatim(s) }

// doPaused runs one command on a writer that can pause it, and returns its
// reply once every paused part has completed.
func (h *harness) doPaused(args ...string) string {
	h.t.Helper()
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	w := newPausingWriter(h.client.Proto)
	h.cmds.Dispatch(w, h.client, bargs)
	return w.String()
}

// TestStorePausedAsMemory: paused, through a store, the commands answer as
// in memory, EXEC's replies in order, and each outcome is counted once.
func TestStorePausedAsMemory(t *testing.T) {
	shared, memory := newStoreHarness(t)
	for _, args := range [][]string{
		{"CL.THROTTLE", "k", "0", "1", "60"},
		{"CL.THROTTLE", "k", "0", "1", "60"},
		{"CL.THROTTLE", "k", "0", "0", "60"},
		{"SW.THROTTLE", "sw", "3", "1m", "2"},
		{"SW.THROTTLE", "sw", "3", "1m", "MS"},
		{"SW.THROTTLE", "k", "3", "1m"}, // a CL key: an error, answered later
		{"FW.THROTTLE", "fw", "1", "1m"},
		{"FW.THROTTLE", "fw", "1", "1m"},
		{"THROTTLE.ALL", "CL", "a", "1", "1", "60", "SW", "sw", "3", "1m"},
		{"THROTTLE.ALL", "FW", "b", "1", "1m", "FW", "b", "1", "1m"},
		{"GET", "k"}, {"EXISTS", "k", "sw"}, {"DEL", "k"},
	} {
		if got, want := shared.doPaused(args...), memory.do(args...); got != want {
			t.Errorf("%q paused through a store: %q, in memory %q", args, got, want)
		}
	}
	shared.doPaused("DEL", "bad")
	shared.doPaused("MULTI")
	shared.doPaused("CL.THROTTLE", "t", "0", "1", "60")
	shared.doPaused("DEL", "t")
	shared.doPaused("CL.THROTTLE", "t", "0", "1", "60")
	if got, want := shared.doPaused("EXEC"), "*3\r\n"+ints(0, 1, 0, -1, 60)+":1\r\n"+ints(0, 1, 0, -1, 60); got != want {
		t.Errorf("EXEC paused = %q, want %q", got, want)
	}
	text := infoText(t, shared, "commandstats")
	for name, want := range map[string]string{
		"del":          "calls=3,rejected_calls=0,failed_calls=1",
		"cl.throttle":  "calls=5,rejected_calls=0,failed_calls=1",
		"sw.throttle":  "calls=3,rejected_calls=0,failed_calls=1",
		"fw.throttle":  "calls=2,rejected_calls=0,failed_calls=0",
		"throttle.all": "calls=2,rejected_calls=0,failed_calls=1", // two rules on one key
	} {
		v := field(t, text, "cmdstat_"+name)
		if got := regexp.MustCompile(`usec=\d+,usec_per_call=\d+\.\d\d,`).ReplaceAllString(v, ""); got != want {
			t.Errorf("cmdstat_%s = %s, want %s", name, got, want)
		}
	}
}

// holdStore is a fakeStore whose Throttle and ThrottleWindow answer only
// when the test says (answer, on the test's goroutine), recording whether
// each was called behind a decision on its key.
type holdStore struct {
	*fakeStore
	behinds []bool
	dones   []func()
}

func (h *holdStore) Throttle(key []byte, q engine.GCRAQuota, n int64, behind bool, done engine.ThrottleDone) {
	key = append([]byte(nil), key...)
	h.behinds = append(h.behinds, behind)
	h.dones = append(h.dones, func() { done.Done(h.eng.Throttle(nil, key, q, n)) })
}

func (h *holdStore) ThrottleWindow(r engine.Rule, n int64, behind bool, done func(engine.Decision, error)) {
	r.Key = append([]byte(nil), r.Key...)
	h.behinds = append(h.behinds, behind)
	h.dones = append(h.dones, func() { done(h.eng.ThrottleWindow(nil, r, n)) })
}

func (h *holdStore) ThrottleAll(rules []engine.Rule, n int64, done func(engine.Decision, error)) {
	rules = slices.Clone(rules)
	for i := range rules {
		rules[i].Key = slices.Clone(rules[i].Key)
	}
	h.dones = append(h.dones, func() { done(h.eng.ThrottleAll(nil, rules, n)) })
}

// answer answers the i-th decision.
func (h *holdStore) answer(i int) { h.dones[i]() }

// TestStoreBehindADecisionOnItsKey: a decision is passed to the store as
// behind while an earlier decision of its connection on one of its keys
// has not had its reply written, and only then: a pipeline on other keys
// may still be refused from what the store remembers.
func TestStoreBehindADecisionOnItsKey(t *testing.T) {
	eng := engine.New(engine.Options{SweepInterval: -1})
	t.Cleanup(eng.Close)
	st := &holdStore{fakeStore: &fakeStore{eng: eng}}
	cmds := New(Options{Engine: engine.New(engine.Options{SweepInterval: -1}), Version: "test", Store: st})
	t.Cleanup(cmds.Close)
	cl := NewClient(1, "127.0.0.1:50000", "127.0.0.1:6379", time.Now())
	w := newPausingWriter(2)
	send := sender(cmds, w, cl)
	send("CL.THROTTLE", "a", "0", "1", "60")
	send("CL.THROTTLE", "b", "0", "1", "60")
	send("CL.THROTTLE", "a", "0", "1", "60")
	send("FW.THROTTLE", "c", "1", "1m")
	send("FW.THROTTLE", "b", "1", "1m")
	if want := []bool{false, false, true, false, true}; !slices.Equal(st.behinds, want) {
		t.Fatalf("behind = %v, want %v", st.behinds, want)
	}
	st.answer(0) // a's first reply written: a's second is still pending
	send("CL.THROTTLE", "a", "0", "1", "60")
	for i := 1; i < 6; i++ {
		st.answer(i)
	}
	send("CL.THROTTLE", "a", "0", "1", "60")
	send("FW.THROTTLE", "b", "1", "1m")
	if want := []bool{true, false, false}; !slices.Equal(st.behinds[5:], want) {
		t.Fatalf("behind = %v, want %v after the first five", st.behinds[5:], want)
	}
	st.answer(6)
	st.answer(7)
	// Behind a THROTTLE.ALL (its answer is the ninth) on one of its keys.
	send("THROTTLE.ALL", "CL", "x", "0", "1", "60", "FW", "y", "1", "1m")
	send("CL.THROTTLE", "y", "0", "1", "60")
	send("CL.THROTTLE", "z", "0", "1", "60")
	if got := st.behinds[8:]; !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("behind a THROTTLE.ALL on x and y: y %v, z %v; want y only", got[0], got[1])
	}
	for i := 8; i < 11; i++ {
		st.answer(i)
	}
	_ = w.String() // every part completed
}

// TestPausedDecisionsList: the connection's paused decisions stay in order
// through a long pipeline and a reply whose write panics, and the list
// does not grow while a pipeline keeps some paused; past maxPendingScan a
// decision counts as behind without a scan.
func TestPausedDecisionsList(t *testing.T) {
	cl := NewClient(1, "127.0.0.1:50000", "127.0.0.1:6379", time.Now())
	later := func(key string) *decisionLater {
		l := &decisionLater{client: cl, t: tally{key: []byte(key)}, cl: true}
		l.sig = l.t.keySig()
		cl.pausedDecision(l)
		return l
	}
	on := func(key string) bool { t := tally{key: []byte(key)}; return cl.pendingOn(t, t.keySig()) }
	a, b := later("a"), later("b")
	func() {
		defer func() { _ = recover() }()
		a.WriteReply(nil) // the write panics
	}()
	if on("a") || !on("b") || len(cl.laters)-cl.lhead != 1 {
		t.Fatalf("after a's write panicked: pending on a %v, on b %v, %d pending", on("a"), on("b"), len(cl.laters)-cl.lhead)
	}
	cl.written(b)
	var fifo []*decisionLater
	for i := range 3000 {
		fifo = append(fifo, later(strconv.Itoa(i)))
		if i%3 != 0 {
			cl.written(fifo[0])
			fifo = fifo[1:]
		}
	}
	if n := len(cl.laters) - cl.lhead; n != len(fifo) || cap(cl.laters) > 4*len(fifo) {
		t.Fatalf("%d pending in a list of %d (cap %d), want %d", n, len(cl.laters), cap(cl.laters), len(fifo))
	}
	if !on("none") {
		t.Fatalf("%d pending, more than %d: want behind without a scan", len(fifo), maxPendingScan)
	}
	for _, l := range fifo[:len(fifo)-1] {
		cl.written(l)
	}
	if on("none") || !on(string(fifo[len(fifo)-1].t.key)) {
		t.Fatal("one pending: behind on its key only")
	}
	// A decision whose reply the server dropped (its command panicked
	// after pausing) is never written: the next one written takes it off
	// with itself, so that it does not hold the list for good.
	cl.written(fifo[len(fifo)-1])
	later("d")
	next := later("n")
	cl.written(next)
	if on("d") || len(cl.laters)-cl.lhead != 0 {
		t.Fatalf("after a dropped decision and the next written: pending on d %v, %d pending", on("d"), len(cl.laters)-cl.lhead)
	}
}

// sender returns a function that dispatches a command of cl to cmds,
// its replies going to w.
func sender(cmds *Commands, w Writer, cl *Client) func(args ...string) {
	return func(args ...string) {
		bargs := make([][]byte, len(args))
		for i, a := range args {
			bargs[i] = []byte(a)
		}
		cmds.Dispatch(w, cl, bargs)
	}
}

// queueStore is a fakeStore whose Throttle calls wait, each on the
// channel calls, for the test to answer them.
type queueStore struct {
	*fakeStore
	calls chan func()
}

func (q *queueStore) Throttle(key []byte, quota engine.GCRAQuota, n int64, _ bool, done engine.ThrottleDone) {
	key = append([]byte(nil), key...)
	q.calls <- func() { done.Done(q.eng.Throttle(nil, key, quota, n)) }
}

// TestStoreCloseWaitsForTransaction: Close waits for every command of a
// transaction under way, those not started yet too, so that none acts on
// the store after it; the transaction keeps no goroutine a command.
func TestStoreCloseWaitsForTransaction(t *testing.T) {
	eng := engine.New(engine.Options{SweepInterval: -1})
	t.Cleanup(eng.Close)
	st := &queueStore{fakeStore: &fakeStore{eng: eng}, calls: make(chan func(), 8)}
	cmds := New(Options{Engine: engine.New(engine.Options{SweepInterval: -1}), Version: "test", Store: st})
	cl := NewClient(1, "127.0.0.1:50000", "127.0.0.1:6379", time.Now())
	w := newPausingWriter(2)
	send := sender(cmds, w, cl)
	send("MULTI")
	for range 3 {
		send("CL.THROTTLE", "k", "5", "1", "60")
	}
	send("EXEC")
	closed := make(chan struct{})
	go func() {
		cmds.Close()
		close(closed)
	}()
	for i := range 3 {
		answer := <-st.calls // the i-th starts only once the one before is answered
		select {
		case <-closed:
			t.Fatalf("Close returned with %d of the transaction's 3 commands answered", i)
		case <-time.After(20 * time.Millisecond):
		}
		answer()
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return once the transaction was done")
	}
	want := "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n" + ints(0, 6, 5, -1, 60) + ints(0, 6, 4, -1, 120) + ints(0, 6, 3, -1, 180)
	if got := w.String(); got != want {
		t.Errorf("replies %q, want %q", got, want)
	}
}

// aheadStore is a fakeStore whose clock is an hour ahead of the local
// engine's.
type aheadStore struct {
	*fakeStore
	clock *engine.ManualClock
}

func (a aheadStore) Now() time.Time { return a.clock.Now().Add(time.Hour) }

// TestStoreSWLogAtStoreClock: SW.LOG's WINDOW is judged at the store's
// clock, as the decisions are, not at this instance's.
func TestStoreSWLogAtStoreClock(t *testing.T) {
	memory := newHarness(t)
	eng := engine.New(engine.Options{Now: memory.clock.Now, SweepInterval: -1})
	t.Cleanup(eng.Close)
	st := aheadStore{&fakeStore{eng: eng}, memory.clock}
	cmds := New(Options{Engine: memory.eng, Version: "test", Store: st})
	t.Cleanup(func() { cmds.Close(); st.wg.Wait() })
	shared := &harness{t: t, clock: memory.clock, eng: memory.eng, cmds: cmds,
		client: NewClient(1, "127.0.0.1:50000", "127.0.0.1:6379", memory.clock.Now())}
	shared.do("SW.THROTTLE", "sw", "5", "1h") // at the store engine's time
	if got := shared.do("SW.LOG", "sw"); len(got) < 4 || got[:4] != "*1\r\n" {
		t.Fatalf("SW.LOG = %q, want the one request", got)
	}
	// An hour later by the store's clock, the request has left a window of
	// 30 minutes.
	if got := shared.do("SW.LOG", "sw", "WINDOW", "30m"); got != "*0\r\n" {
		t.Errorf("SW.LOG WINDOW 30m at the store's clock = %q, want no request", got)
	}
}
