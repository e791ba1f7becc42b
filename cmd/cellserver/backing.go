package main

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/metrics"
	"github.com/cellserver/cellserver/persist"
)

// backing is the backing Redis and the writer that keeps it up to date.
type backing struct {
	store  *persist.Redis
	writer *persist.Writer
	lease  *persist.Lease // warns when a second write-behind instance shares the store
}

// openBacking connects to the backing Redis that cfg names, loads it into
// eng and starts writing behind; nil when there is none. eng must track
// changes. If the load fails it returns the error when the backing Redis is
// required or ctx is done; otherwise the writer has logged it and retries,
// and the server serves from memory meanwhile.
func openBacking(ctx context.Context, cfg config, eng *engine.Engine, log *slog.Logger) (*backing, error) {
	if cfg.backingRedis == "" || cfg.shared() {
		return nil, nil
	}
	store, err := persist.Dial(cfg.backingRedis, cfg.backingPrefix)
	if err != nil { // parseConfig has checked the address
		return nil, err
	}
	log.Info("loading the backing store", "url", persist.Redact(cfg.backingRedis), "prefix", cfg.backingPrefix,
		"flush_interval", cfg.flushInterval, "required", cfg.backingRequired)
	w := persist.New(eng, store, persist.Options{
		FlushInterval: cfg.flushInterval,
		Logger:        log,
		Required:      cfg.backingRequired,
	})
	if err := w.Load(ctx); err != nil && (cfg.backingRequired || ctx.Err() != nil) {
		store.Close()
		return nil, err
	}
	w.Start()
	lease := persist.StartLease(store.Client(), cfg.backingPrefix, log)
	return &backing{store: store, writer: w, lease: lease}, nil
}

// close writes every change still pending, within timeout, frees the
// lease and closes the connection. It returns the error that left changes
// unwritten. The lease is freed beside the final write, not after it: its
// own short bound then adds nothing to a shutdown whose store is down.
func (b *backing) close(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	leaseFreed := make(chan struct{})
	go func() {
		defer close(leaseFreed)
		b.lease.Close()
	}()
	err := b.writer.Close(ctx)
	<-leaseFreed
	b.store.Close()
	return err
}

// info returns the fields INFO's persistence section adds.
func (b *backing) info() []commands.Setting {
	return persistenceInfo(b.writer.Stats(), time.Now())
}

// persistenceInfo renders a writer's counters as INFO fields at time now.
// The last flush age is -1 before the first flush.
func persistenceInfo(s persist.Stats, now time.Time) []commands.Setting {
	age := int64(-1)
	if !s.LastFlush.IsZero() {
		age = max(now.Sub(s.LastFlush).Milliseconds(), 0)
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []commands.Setting{
		{Name: "backing_status", Value: s.Status.String()},
		{Name: "backing_pending_keys", Value: strconv.Itoa(s.PendingKeys)},
		{Name: "backing_flushed_keys", Value: i64(s.FlushedKeys)},
		{Name: "backing_failed_flushes", Value: i64(s.FailedFlushes)},
		{Name: "backing_last_flush_age_ms", Value: i64(age)},
		{Name: "backing_load_time_ms", Value: i64(s.LoadTime.Milliseconds())},
		{Name: "backing_loaded_keys", Value: i64(s.LoadedKeys)},
		{Name: "backing_skipped_keys", Value: i64(s.SkippedKeys)},
	}
}

// samples returns the writer's counters for /metrics.
func (b *backing) samples() []metrics.Sample {
	s := b.writer.Stats()
	up := 0.0
	if s.Status == persist.StatusOK {
		up = 1
	}
	age := -1.0
	if !s.LastFlush.IsZero() {
		age = max(time.Since(s.LastFlush).Seconds(), 0)
	}
	return []metrics.Sample{
		{Name: "up", Help: "1 while the backing store takes writes, 0 while it is down or loading.", Value: up},
		{Name: "pending_keys", Help: "Keys changed and not yet written to the backing store.", Value: float64(s.PendingKeys)},
		{Name: "flushed_keys_total", Help: "Key records written to the backing store.", Value: float64(s.FlushedKeys), Counter: true},
		{Name: "failed_flushes_total", Help: "Writes to the backing store that failed and were retried.", Value: float64(s.FailedFlushes), Counter: true},
		{Name: "last_flush_age_seconds", Help: "Seconds since a flush last left nothing pending; -1 before the first.", Value: age},
		{Name: "load_time_seconds", Help: "How long loading the backing store took at start.", Value: s.LoadTime.Seconds()},
		{Name: "loaded_keys", Help: "Keys loaded from the backing store at start.", Value: float64(s.LoadedKeys)},
		{Name: "skipped_keys", Help: "Keys in the backing store that could not be read as limits.", Value: float64(s.SkippedKeys)},
	}
}
