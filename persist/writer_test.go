package persist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

var quota = engine.GCRAQuota{MaxBurst: 1 << 20, Count: 1000, Period: 1}

// fakeBacking is a backing store in memory that counts what it is asked,
// and fails or blocks when told to.
type fakeBacking struct {
	mu      sync.Mutex // guards the fields below
	saves   [][]engine.Record
	failN   int     // fail this many more Saves
	loadErr []error // errors for the next Loads, in order
	stored  []engine.Record
	// block makes Save wait for its context's end and fail.
	block bool
	// onSave, when set, runs at the start of each Save (outside mu).
	onSave func()
	events []string // "load", "load failed", "save", "save failed", in order
}

var errDown = errors.New("connection refused")

func (f *fakeBacking) Save(ctx context.Context, recs []engine.Record) error {
	f.mu.Lock()
	hook, block := f.onSave, f.block
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failN > 0 {
		f.failN--
		f.events = append(f.events, "save failed")
		return errDown
	}
	f.events = append(f.events, "save")
	f.saves = append(f.saves, append([]engine.Record(nil), recs...))
	return nil
}

func (f *fakeBacking) Load(ctx context.Context, fn func(engine.Record)) error {
	f.mu.Lock()
	if len(f.loadErr) > 0 {
		err := f.loadErr[0]
		f.loadErr = f.loadErr[1:]
		f.events = append(f.events, "load failed")
		f.mu.Unlock()
		return err
	}
	f.events = append(f.events, "load")
	stored := f.stored
	f.mu.Unlock()
	for _, rec := range stored {
		fn(rec)
	}
	return nil
}

// written returns every record saved, in order.
func (f *fakeBacking) written() []engine.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []engine.Record
	for _, s := range f.saves {
		all = append(all, s...)
	}
	return all
}

// logBuffer collects a logger's lines; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// count returns how many lines of the log carry msg.
func (b *logBuffer) count(msg string) int {
	return strings.Count(b.String(), "msg=\""+msg+"\"")
}

func newEngine(t *testing.T) *engine.Engine {
	t.Helper()
	e := engine.New(engine.Options{Shards: 8, SweepInterval: -1, TrackChanges: true})
	t.Cleanup(e.Close)
	return e
}

func hit(t *testing.T, e *engine.Engine, key string, n int) {
	t.Helper()
	for range n {
		if _, err := e.Throttle(nil, []byte(key), quota, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWriterCoalesces: a key hit 10,000 times between two flushes is
// written once, with its latest state.
func TestWriterCoalesces(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{}
	w := New(e, f, Options{})
	ctx := context.Background()

	hit(t, e, "hot", 10_000)
	hit(t, e, "cold", 1)
	w.round(ctx)
	recs := f.written()
	if len(f.saves) != 1 || len(recs) != 2 {
		t.Fatalf("saves %d with %d records (%+v), want 1 save of hot and cold", len(f.saves), len(recs), recs)
	}
	hot, _ := e.Get(nil, []byte("hot"))
	for _, r := range recs {
		if r.Key == "hot" && (r.TAT != hot.TAT || r.Family != engine.FamilyCL) {
			t.Errorf("hot written as %+v, want TAT %d", r, hot.TAT)
		}
	}

	hit(t, e, "hot", 10_000)
	w.round(ctx)
	w.round(ctx) // nothing pending: no Save
	if recs := f.written(); len(f.saves) != 2 || len(recs) != 3 || recs[2].Key != "hot" {
		t.Errorf("after 10,000 more hits on hot: %d saves, records %+v; want one more save of hot", len(f.saves), recs)
	}
	if s := w.Stats(); s.FlushedKeys != 3 || s.Flushes != 2 || s.PendingKeys != 0 || s.Status != StatusOK || s.LastFlush.IsZero() {
		t.Errorf("Stats = %+v", s)
	}
}

// TestWriterBatches: records go in Saves of at most Batch.
func TestWriterBatches(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{}
	w := New(e, f, Options{Batch: 7})
	for i := range 50 {
		hit(t, e, fmt.Sprint("k", i), 1)
	}
	w.round(context.Background())
	if len(f.saves) != 8 {
		t.Errorf("%d saves, want 8 (50 records, 7 a batch)", len(f.saves))
	}
	for _, s := range f.saves {
		if len(s) > 7 {
			t.Errorf("a save of %d records", len(s))
		}
	}
	if n := len(f.written()); n != 50 {
		t.Errorf("%d records written, want 50", n)
	}
}

// TestWriterWritesEachKeyOncePerFlush: keys changed again while a flush
// runs are left for the next one, so a flush writes at most as many records
// as there are keys.
func TestWriterWritesEachKeyOncePerFlush(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{}
	w := New(e, f, Options{Batch: 10})
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
		hit(t, e, keys[i], 1)
	}
	// Every Save sees every key hit again, as under a steady load.
	f.onSave = func() {
		for _, k := range keys {
			hit(t, e, k, 1)
		}
	}
	w.round(context.Background())
	if n := len(f.written()); n != 50 {
		t.Errorf("one flush wrote %d records, want 50 (one per key)", n)
	}
	if n := e.Pending(); n != 50 {
		t.Errorf("pending after the flush = %d, want 50 (left for the next)", n)
	}
}

// TestWriterDeletes: DEL and FLUSHALL reach the backing store.
func TestWriterDeletes(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{}
	w := New(e, f, Options{})
	hit(t, e, "a", 1)
	hit(t, e, "b", 1)
	w.round(context.Background())
	e.Delete(nil, []byte("a"))
	w.round(context.Background())
	e.Flush(nil)
	w.round(context.Background())
	recs := f.written()
	if len(recs) != 4 || !reflect.DeepEqual(recs[2], engine.Record{Key: "a", Deleted: true}) || !reflect.DeepEqual(recs[3], engine.Record{Key: "b", Deleted: true}) {
		t.Errorf("records = %+v, want a, b, then a deleted, then b deleted", recs)
	}
}

// TestWriterSaveFailure: the keys of a failed Save are kept and written by
// the next attempt; the outage is logged once and the recovery once.
func TestWriterSaveFailure(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{failN: 1}
	var logs logBuffer
	w := New(e, f, Options{Logger: logs.logger()})
	for i := range 20 {
		hit(t, e, fmt.Sprint("k", i), 1)
	}
	wait := w.round(context.Background())
	if wait < 187*time.Millisecond || wait > 250*time.Millisecond {
		t.Errorf("wait after a failure = %v, want 250ms less up to a quarter of jitter", wait)
	}
	s := w.Stats()
	if s.Status != StatusDown || s.PendingKeys != 20 || s.FailedFlushes != 1 || s.FlushedKeys != 0 {
		t.Fatalf("after a failed save: %+v, want down with 20 pending", s)
	}
	if w.round(context.Background()) != 250*time.Millisecond {
		t.Error("after a success the wait is not the flush interval")
	}
	if n := len(f.written()); n != 20 {
		t.Errorf("%d records written after recovery, want 20", n)
	}
	if s := w.Stats(); s.Status != StatusOK || s.PendingKeys != 0 {
		t.Errorf("after recovery: %+v", s)
	}
	if n := logs.count("backing store is down; serving from memory, keeping changes and retrying"); n != 1 {
		t.Errorf("%d down lines, want 1:\n%s", n, logs.String())
	}
	if n := logs.count("backing store is back"); n != 1 {
		t.Errorf("%d back lines, want 1:\n%s", n, logs.String())
	}
}

// TestWriterOutageLoggedOnce: many failed attempts in a row log the outage
// once, back off, and the recovery once.
func TestWriterOutageLoggedOnce(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{failN: 30}
	var logs logBuffer
	w := New(e, f, Options{FlushInterval: time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Logger: logs.logger()})
	hit(t, e, "k", 1)
	w.Start()
	defer w.Close(context.Background())
	waitFor(t, "the key written after 30 failures", func() bool { return len(f.written()) == 1 })
	waitFor(t, "status ok", func() bool { return w.Stats().Status == StatusOK })
	if n := logs.count("backing store is down; serving from memory, keeping changes and retrying"); n != 1 {
		t.Errorf("%d down lines for 30 failures, want 1", n)
	}
	if n := logs.count("backing store still down"); n != 29 {
		t.Errorf("%d debug lines, want 29", n)
	}
	if n := logs.count("backing store is back"); n != 1 {
		t.Errorf("%d back lines, want 1", n)
	}
	if s := w.Stats(); s.FailedFlushes != 30 {
		t.Errorf("FailedFlushes = %d, want 30", s.FailedFlushes)
	}
}

func TestWriterBackoff(t *testing.T) {
	w := New(newEngine(t), &fakeBacking{}, Options{})
	for _, want := range []time.Duration{250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000} {
		want *= time.Millisecond
		got := w.fail(errDown)
		if got > want || got < want*3/4 {
			t.Errorf("backoff %v, want within [%v, %v]", got, want*3/4, want)
		}
	}
	w.recover()
	if got := w.fail(errDown); got > 250*time.Millisecond {
		t.Errorf("backoff after recovery = %v, want it back to 250ms", got)
	}
}

// TestWriterLoad: Load merges the backing store into the keyspace, keeping
// the later TAT of a key in both.
func TestWriterLoad(t *testing.T) {
	e := newEngine(t)
	nowMs := time.Now().UnixMilli()
	hit(t, e, "both", 1)
	mem, _ := e.Get(nil, []byte("both"))
	f := &fakeBacking{stored: []engine.Record{
		{Key: "only-backing", Family: engine.FamilyCL, TAT: 123, ExpireAtMs: nowMs + 60_000},
		{Key: "both", Family: engine.FamilyCL, TAT: mem.TAT + 5e9, ExpireAtMs: nowMs + 60_000},
		{Key: "expired", Family: engine.FamilyCL, TAT: 1, ExpireAtMs: nowMs - 1000},
	}}
	var logs logBuffer
	w := New(e, f, Options{Logger: logs.logger()})
	if err := w.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v, ok := e.Get(nil, []byte("only-backing")); !ok || v.TAT != 123 {
		t.Errorf("only-backing = %+v, %v", v, ok)
	}
	if v, _ := e.Get(nil, []byte("both")); v.TAT != mem.TAT+5e9 {
		t.Errorf("both: TAT %d, want the backing store's later %d", v.TAT, mem.TAT+5e9)
	}
	if _, ok := e.Get(nil, []byte("expired")); ok {
		t.Error("an expired record was loaded")
	}
	if s := w.Stats(); s.LoadedKeys != 2 || s.Status != StatusOK || s.LoadTime <= 0 {
		t.Errorf("Stats = %+v, want 2 loaded", s)
	}
	if !strings.Contains(logs.String(), `msg="loaded the backing store" keys=2 took=`) {
		t.Errorf("log lacks the load line:\n%s", logs.String())
	}
}

// TestWriterLoadRetried: a load that fails at start is retried by the
// loop; nothing is written before it succeeds, and memory's changes
// meanwhile survive the merge.
func TestWriterLoadRetried(t *testing.T) {
	e := newEngine(t)
	nowMs := time.Now().UnixMilli()
	f := &fakeBacking{
		loadErr: []error{errDown, errDown, errDown},
		stored:  []engine.Record{{Key: "old", Family: engine.FamilyCL, TAT: 99, ExpireAtMs: nowMs + 60_000}},
	}
	var logs logBuffer
	w := New(e, f, Options{FlushInterval: time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Logger: logs.logger()})
	if err := w.Load(context.Background()); !errors.Is(err, errDown) {
		t.Fatalf("Load = %v, want the backing store's error", err)
	}
	if s := w.Stats(); s.Status != StatusDown {
		t.Errorf("status after a failed load = %v, want down", s.Status)
	}
	hit(t, e, "new", 1) // served from memory meanwhile
	w.Start()
	defer w.Close(context.Background())
	waitFor(t, "the load and a flush", func() bool { return len(f.written()) == 1 })
	if v, ok := e.Get(nil, []byte("old")); !ok || v.TAT != 99 {
		t.Errorf("old after the retried load = %+v, %v", v, ok)
	}
	if recs := f.written(); recs[0].Key != "new" {
		t.Errorf("written %+v, want new", recs)
	}
	f.mu.Lock()
	events := strings.Join(f.events, ",")
	f.mu.Unlock()
	if !strings.HasPrefix(events, "load failed,load failed,load failed,load,save") {
		t.Errorf("events %s, want three failed loads, a load, then saves", events)
	}
	if n := logs.count("backing store is down; serving from memory, keeping changes and retrying"); n != 1 {
		t.Errorf("%d down lines, want 1:\n%s", n, logs.String())
	}
}

func TestWriterLoadRequired(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{loadErr: []error{errDown}}
	var logs logBuffer
	w := New(e, f, Options{Required: true, Logger: logs.logger()})
	if err := w.Load(context.Background()); !errors.Is(err, errDown) {
		t.Fatalf("Load = %v", err)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="cannot load the backing store" err="connection refused"`) {
		t.Errorf("log:\n%s", logs.String())
	}
	if w.needLoad {
		t.Error("a required load is to be retried")
	}
}

// TestWriterCloseFlushes: Close writes everything pending, however long
// the flush interval.
func TestWriterCloseFlushes(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{}
	var logs logBuffer
	w := New(e, f, Options{FlushInterval: time.Hour, Logger: logs.logger()})
	w.Start()
	for i := range 100 {
		hit(t, e, strconv.Itoa(i), 1)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(f.written()); n != 100 {
		t.Errorf("Close wrote %d records, want 100", n)
	}
	if n := e.Pending(); n != 0 {
		t.Errorf("pending after Close = %d", n)
	}
	if !strings.Contains(logs.String(), `msg="flushed to the backing store" keys=100`) {
		t.Errorf("log:\n%s", logs.String())
	}
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestWriterCloseRetries: a Close that meets a failure retries until the
// backing store takes the records.
func TestWriterCloseRetries(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{failN: 3}
	w := New(e, f, Options{MinBackoff: time.Millisecond})
	hit(t, e, "k", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(f.written()); n != 1 {
		t.Errorf("%d records written", n)
	}
}

// TestWriterCloseBounded: a backing store that never answers holds Close
// only until its context ends; the keys left are logged.
func TestWriterCloseBounded(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{block: true}
	var logs logBuffer
	w := New(e, f, Options{Logger: logs.logger()})
	w.Start()
	for i := range 5 {
		hit(t, e, strconv.Itoa(i), 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := w.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %v with a 100ms deadline", took)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="ran out of time flushing to the backing store; changes lost" unwritten_keys=5`) {
		t.Errorf("log:\n%s", logs.String())
	}
}

// TestWriterCloseNothingPending: with nothing pending, Close returns at
// once, even while the load it never managed is still to be retried and the
// store is down: there is nothing to lose.
func TestWriterCloseNothingPending(t *testing.T) {
	e := newEngine(t)
	f := &fakeBacking{block: true, loadErr: []error{errDown, errDown, errDown}}
	var logs logBuffer
	w := New(e, f, Options{Logger: logs.logger()})
	if err := w.Load(context.Background()); err == nil {
		t.Fatal("Load succeeded on a store that is down")
	}
	w.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := w.Close(ctx); err != nil {
		t.Errorf("Close = %v, want nil", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %v with nothing pending", took)
	}
	if logs := logs.String(); !strings.Contains(logs, `msg="nothing to flush to the backing store"`) || strings.Contains(logs, "level=ERROR") {
		t.Errorf("log:\n%s", logs)
	}
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{StatusOK: "ok", StatusDown: "down", StatusLoading: "loading"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}

// stubbornBacking ignores cancellation: a Save holds until released.
type stubbornBacking struct {
	fakeBacking
	release chan struct{}
}

func (s *stubbornBacking) Save(ctx context.Context, recs []engine.Record) error {
	<-s.release
	return errDown
}

// TestWriterCloseBoundedByStubbornStore: a Save that ignores cancellation
// does not hold Close past its context.
func TestWriterCloseBoundedByStubbornStore(t *testing.T) {
	e := newEngine(t)
	b := &stubbornBacking{release: make(chan struct{})}
	var logs logBuffer
	w := New(e, b, Options{FlushInterval: time.Millisecond, Logger: logs.logger()})
	hit(t, e, "k", 1)
	w.Start()
	waitFor(t, "the loop in Save", func() bool { return e.Pending() == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the deadline", err)
	}
	if !strings.Contains(logs.String(), `msg="ran out of time flushing to the backing store; changes lost"`) {
		t.Errorf("log:\n%s", logs.String())
	}
	close(b.release) // the loop ends; the key is marked again
	<-w.done
	if n := e.Pending(); n != 1 {
		t.Errorf("pending after the failed Save = %d, want 1", n)
	}
}

// TestWriterDeleteWhileLoadPending: keys deleted while the load waits for
// the store, one in memory and one only in the store, are not brought back
// by the load, and are deleted in the store by the flush after it.
func TestWriterDeleteWhileLoadPending(t *testing.T) {
	src := newEngine(t)
	hit(t, src, "a", 3)
	hit(t, src, "b", 3)
	hit(t, src, "c", 3)
	e := newEngine(t)
	f := &fakeBacking{loadErr: []error{errDown}, stored: src.Changes(nil, 10)}
	w := New(e, f, Options{FlushInterval: time.Hour})
	ctx := context.Background()
	if err := w.Load(ctx); err == nil || !w.needLoad {
		t.Fatalf("Load = %v, needLoad %v: want a failed load to retry", err, w.needLoad)
	}
	hit(t, e, "a", 1)
	if !e.Delete(nil, []byte("a")) || e.Delete(nil, []byte("b")) {
		t.Fatal("DEL a (in memory) and b (only in the store) answered wrong")
	}
	w.round(ctx)
	for _, k := range []string{"a", "b"} {
		if _, ok := e.Get(nil, []byte(k)); ok {
			t.Errorf("%s deleted while the load waited is back in memory", k)
		}
	}
	if _, ok := e.Get(nil, []byte("c")); !ok {
		t.Error("c, never deleted, was not loaded")
	}
	deleted := map[string]bool{}
	for _, r := range f.written() {
		if r.Deleted {
			deleted[r.Key] = true
		}
	}
	if !deleted["a"] || !deleted["b"] || deleted["c"] {
		t.Errorf("deleted in the store: %v, want a and b", deleted)
	}
}
