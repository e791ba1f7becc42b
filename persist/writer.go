package persist

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// Options configures a Writer. The zero value works.
type Options struct {
	// FlushInterval is the time between two flushes; 0 means 250ms.
	FlushInterval time.Duration
	// Batch is the most records one Save writes; 0 means 1000.
	Batch int
	// MinBackoff and MaxBackoff bound the wait after a failure, which
	// doubles from MinBackoff up to MaxBackoff while the backing store stays
	// down; 0 means 250ms and 10s.
	MinBackoff, MaxBackoff time.Duration
	// Logger gets the writer's log: loads, the backing store going down and
	// coming back (once each, not per attempt), the final flush. Nil
	// discards it.
	Logger *slog.Logger
	// Required says the caller cannot serve without the backing store's
	// state: a failed Load is logged as an error and not retried. Otherwise
	// the writer retries the load once started, and merges the state when
	// it succeeds.
	Required bool
}

// Status is the state of the backing store, as a Writer sees it.
type Status int32

const (
	// StatusOK: the last load and the last flush succeeded.
	StatusOK Status = iota
	// StatusLoading: a load is under way.
	StatusLoading
	// StatusDown: the last load or flush failed; the writer is retrying.
	StatusDown
)

// String is the status as INFO shows it.
func (s Status) String() string {
	switch s {
	case StatusLoading:
		return "loading"
	case StatusDown:
		return "down"
	}
	return "ok"
}

// Stats are a Writer's counters, for INFO.
type Stats struct {
	Status Status
	// PendingKeys is the number of keys changed and not yet written.
	PendingKeys int
	// FlushedKeys is the number of records written since the start.
	FlushedKeys int64
	// FailedFlushes is the number of Save calls that failed.
	FailedFlushes int64
	// Flushes is the number of flushes that wrote at least one record.
	Flushes int64
	// LastFlush is when a flush last ended with nothing left to write that
	// it had found pending: the time up to which the backing store is known
	// to hold everything. Zero before the first.
	LastFlush time.Time
	// LoadTime is how long the last successful load took.
	LoadTime time.Duration
	// LoadedKeys is the number of keys the last successful load took into
	// the keyspace.
	LoadedKeys int64
	// SkippedKeys is the number of keys the last load skipped because they
	// held something other than cellserver's state.
	SkippedKeys int64
}

// skipCounter is a backing store that counts the keys its last Load
// skipped (Redis does).
type skipCounter interface{ Skipped() int64 }

// Writer copies an engine's changed keys to a backing store, behind the
// requests: the engine only notes which keys changed; one goroutine takes
// them every FlushInterval and saves them in batches. A key changed many
// times between two flushes is written once. It is safe for concurrent use.
type Writer struct {
	eng     *engine.Engine
	backing Backing
	opts    Options
	log     *slog.Logger

	// mu guards the fields below it: one load or flush at a time.
	mu        sync.Mutex
	buf       []engine.Record
	keys      []string
	needLoad  bool          // the initial load failed and is to be retried
	down      bool          // the last attempt failed
	downSince time.Time     // when the current outage began
	backoff   time.Duration // the last wait after a failure; 0 when up

	status    atomic.Int32 // a Status
	flushed   atomic.Int64
	failed    atomic.Int64
	flushes   atomic.Int64
	lastFlush atomic.Int64 // unix nanoseconds; 0 before the first
	loadTime  atomic.Int64 // nanoseconds
	loaded    atomic.Int64
	skipped   atomic.Int64

	// ctx is the context of the loop's calls, cancelled by Close.
	ctx       context.Context
	cancel    context.CancelFunc
	stop      chan struct{}
	done      chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	started   atomic.Bool
}

// Backing is a store that keeps a copy of an engine's keyspace, written
// behind and read back at start: what a Writer writes to. Redis implements
// it over Redis; tests implement it in memory.
type Backing interface {
	// Save writes each record: a live key's state with its expiry, or the
	// key's deletion. It returns an error if any record may not have been
	// written; the caller then marks them all changed again.
	Save(ctx context.Context, recs []engine.Record) error
	// Load calls fn for every key the store holds, with its expiry.
	Load(ctx context.Context, fn func(engine.Record)) error
}

// New returns a Writer of eng's changes to b. eng must track changes
// (engine.Options.TrackChanges). Call Load, then Start, and Close at the end.
func New(eng *engine.Engine, b Backing, opts Options) *Writer {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 250 * time.Millisecond
	}
	if opts.Batch <= 0 {
		opts.Batch = 1000
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 10 * time.Second
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Writer{
		eng: eng, backing: b, opts: opts, log: log,
		ctx: ctx, cancel: cancel,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// Load reads the backing store into the keyspace; a key also in memory
// keeps the conservative state (the later TAT for a CL key; see
// engine.Engine.Restore). It logs how many keys it took and how long it took.
// If it fails, and Options.Required is not set, the writer retries it once
// started (and flushes nothing before it succeeds); the caller may serve from
// memory meanwhile. A load cancelled through ctx is not logged.
func (w *Writer) Load(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.load(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// Cancelled (the process is stopping): not an outage to log.
		w.status.Store(int32(StatusDown))
		w.needLoad = !w.opts.Required
		return err
	}
	if w.opts.Required {
		w.status.Store(int32(StatusDown))
		w.log.Error("cannot load the backing store", "err", err)
		return err
	}
	w.needLoad = true
	w.fail(err)
	return err
}

// load reads the backing store into the keyspace. w.mu must be held.
func (w *Writer) load(ctx context.Context) error {
	w.status.Store(int32(StatusLoading))
	start := time.Now()
	var n int64
	err := w.backing.Load(ctx, func(rec engine.Record) {
		if w.eng.Restore(rec) {
			n++
		}
	})
	if err != nil {
		return err
	}
	took := time.Since(start)
	var skipped int64
	if sc, ok := w.backing.(skipCounter); ok {
		skipped = sc.Skipped()
	}
	w.loaded.Store(n)
	w.skipped.Store(skipped)
	w.loadTime.Store(int64(took))
	w.status.Store(int32(StatusOK))
	w.log.Info("loaded the backing store", "keys", n, "took", took.Round(time.Millisecond))
	if skipped > 0 {
		w.log.Warn("skipped keys in the backing store that hold no limit's state (another type, or neither a decimal TAT nor cellserver's format)",
			"keys", skipped)
	}
	return nil
}

// Start launches the goroutine that flushes every FlushInterval (and
// retries a failed load first). Close stops it.
func (w *Writer) Start() {
	w.startOnce.Do(func() {
		w.started.Store(true)
		go w.loop()
	})
}

func (w *Writer) loop() {
	defer close(w.done)
	t := time.NewTimer(w.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		t.Reset(w.round(w.ctx))
	}
}

// round loads if the load is pending, then flushes, and returns the wait
// before the next round: the flush interval, or a growing backoff while the
// backing store is down.
func (w *Writer) round(ctx context.Context) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.sync(ctx)
	switch {
	case ctx.Err() != nil:
		return w.opts.FlushInterval // closing: Close takes over
	case err != nil:
		return w.fail(err)
	}
	w.recover()
	return w.opts.FlushInterval
}

// sync runs the pending load, if any, then a flush. w.mu must be held.
func (w *Writer) sync(ctx context.Context) error {
	if w.needLoad {
		if err := w.load(ctx); err != nil {
			return err
		}
		w.needLoad = false
	}
	return w.flush(ctx)
}

// flush writes the keys pending when it starts, Batch records per Save. It
// stops there, so that a key hit all the time is written at most once per
// flush. On a failed Save, the keys of that batch are marked changed again.
// w.mu must be held.
func (w *Writer) flush(ctx context.Context) error {
	limit := w.eng.Pending()
	written := 0
	for written < limit {
		w.buf = w.eng.Changes(w.buf[:0], min(w.opts.Batch, limit-written))
		if len(w.buf) == 0 {
			break
		}
		err := w.backing.Save(ctx, w.buf)
		if err != nil {
			w.keys = w.keys[:0]
			for i := range w.buf {
				w.keys = append(w.keys, w.buf[i].Key)
			}
			w.eng.MarkChanged(w.keys)
			clear(w.keys)
		}
		n := len(w.buf)
		clear(w.buf) // let go of the keys
		if err != nil {
			if ctx.Err() == nil {
				w.failed.Add(1)
			}
			return err
		}
		written += n
		w.flushed.Add(int64(n))
	}
	if written > 0 {
		w.flushes.Add(1)
	}
	w.lastFlush.Store(time.Now().UnixNano())
	return nil
}

// fail notes a failed load or flush, logs the outage when it begins, and
// returns the wait before the next attempt. w.mu must be held.
func (w *Writer) fail(err error) time.Duration {
	w.status.Store(int32(StatusDown))
	if !w.down {
		w.down, w.downSince = true, time.Now()
		w.log.Warn("backing store is down; serving from memory, keeping changes and retrying",
			"err", err, "pending_keys", w.eng.Pending())
	} else {
		w.log.Debug("backing store still down", "err", err)
	}
	w.backoff = min(max(2*w.backoff, w.opts.MinBackoff), w.opts.MaxBackoff)
	// Jitter: wait between 3/4 of the backoff and all of it.
	return w.backoff - rand.N(w.backoff/4+1)
}

// recover notes a successful round and logs the end of an outage. w.mu must
// be held.
// The line is logged before the status turns OK, so that whoever sees the
// status sees the line.
func (w *Writer) recover() {
	if w.down {
		w.log.Info("backing store is back", "down_for", time.Since(w.downSince).Round(time.Millisecond))
		w.down, w.backoff = false, 0
	}
	w.status.Store(int32(StatusOK))
}

// Close stops the flushing goroutine and writes everything still pending
// (after the load, if it never succeeded), retrying until ctx is done. If
// ctx ends first it logs how many keys were left unwritten and returns the
// error. With nothing pending it returns at once, without a round trip, so
// that a backing store that is down holds up no shutdown that has nothing
// to lose. Requests must have stopped: keys changed during Close may be
// left.
func (w *Writer) Close(ctx context.Context) error {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.cancel()
	})
	if w.started.Load() {
		// The loop's call in progress has been cancelled; a store that
		// does not heed cancellation may still hold it for a while.
		select {
		case <-w.done:
		case <-ctx.Done():
			w.log.Error("ran out of time flushing to the backing store; changes lost",
				"unwritten_keys", w.eng.Pending(), "err", ctx.Err())
			return ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	start := time.Now()
	pending := w.eng.Pending()
	if pending == 0 {
		// A load still pending can be left: it would only read.
		w.log.Info("nothing to flush to the backing store")
		return nil
	}
	w.log.Info("flushing to the backing store", "pending_keys", pending)
	for {
		err := w.sync(ctx)
		if err == nil {
			w.recover()
			w.log.Info("flushed to the backing store", "keys", pending, "took", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if ctx.Err() == nil {
			wait := time.NewTimer(w.fail(err))
			select {
			case <-wait.C:
				continue
			case <-ctx.Done():
				wait.Stop()
			}
		}
		w.log.Error("ran out of time flushing to the backing store; changes lost",
			"unwritten_keys", w.eng.Pending(), "err", err)
		return err
	}
}

// Stats returns the writer's counters.
func (w *Writer) Stats() Stats {
	s := Stats{
		Status:        Status(w.status.Load()),
		PendingKeys:   w.eng.Pending(),
		FlushedKeys:   w.flushed.Load(),
		FailedFlushes: w.failed.Load(),
		Flushes:       w.flushes.Load(),
		LoadTime:      time.Duration(w.loadTime.Load()),
		LoadedKeys:    w.loaded.Load(),
		SkippedKeys:   w.skipped.Load(),
	}
	if ns := w.lastFlush.Load(); ns != 0 {
		s.LastFlush = time.Unix(0, ns)
	}
	return s
}
