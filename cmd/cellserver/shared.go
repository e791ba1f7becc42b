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
	"github.com/redis/go-redis/v9"
)

// sharedStore is shared mode's store as the commands see it: decisions
// through persist.Shared, keyspace commands through persist.StoreKeys.
type sharedStore struct {
	*persist.Shared
	*persist.StoreKeys
}

var _ commands.Store = sharedStore{}

// shared is shared mode's connection to the store, with what it runs.
type shared struct {
	store sharedStore
}

// openShared connects to the store cfg names and starts deciding there; eng
// decides while the store cannot be reached (--shared-fallback local). A
// store that does not answer at start is an error only with
// --shared-fallback error or --backing-required.
func openShared(ctx context.Context, cfg config, eng *engine.Engine, log *slog.Logger) (*shared, error) {
	client, unsure, err := persist.NewStoreClient(ctx, cfg.backingRedis)
	if err != nil { // parseConfig has checked the address
		return nil, err
	}
	if unsure {
		log.Info("the shared store did not answer at start: whether it is a Redis Cluster is asked when it first answers")
	}
	if _, ok := client.(*redis.ClusterClient); ok {
		log.Info("the shared store is a Redis Cluster")
	}
	fallback := persist.FallbackLocal
	if cfg.sharedFallback == fallbackError {
		fallback = persist.FallbackError
	}
	sh := persist.NewShared(client, persist.SharedOptions{
		Prefix:      cfg.backingPrefix,
		Timeout:     cfg.sharedTimeout,
		Fallback:    fallback,
		Local:       eng,
		NoDenyCache: !cfg.sharedDenyCache,
		Logger:      log,
	})
	log.Info("deciding in the shared store", "url", persist.Redact(cfg.backingRedis), "prefix", cfg.backingPrefix,
		"timeout", cfg.sharedTimeout, "fallback", cfg.sharedFallback, "deny_cache", cfg.sharedDenyCache)
	if cfg.maxmemory > 0 {
		log.Warn("--maxmemory does not bound shared mode's keys: the store's own maxmemory does (it bounds only the local fallback)")
	}
	if err := sh.Start(ctx); err != nil {
		sh.Close()
		return nil, err
	}
	if cfg.backingRequired && sh.Stats().StoreDown {
		sh.Close()
		return nil, errStoreDownAtStart
	}
	return &shared{store: sharedStore{sh, sh.Keyspace()}}, nil
}

// errStoreDownAtStart refuses to start with --backing-required when the
// shared store does not answer.
var errStoreDownAtStart = storeError("the shared store does not answer")

type storeError string

func (e storeError) Error() string { return string(e) }

// commandsStore is the store for commands.Options: nil without shared
// mode (a nil *shared), so that the commands keep every key in memory.
func (s *shared) commandsStore() commands.Store {
	if s == nil {
		return nil
	}
	return s.store
}

// close stops deciding in the store and closes the connection.
func (s *shared) close() { s.store.Shared.Close() }

// info returns the fields INFO's persistence section adds in shared mode.
func (s *shared) info() []commands.Setting {
	st := s.store.Stats()
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	status, fallback := "ok", "0"
	if st.StoreDown {
		status, fallback = "down", "1"
	}
	perTrip := "0"
	if st.RoundTrips > 0 {
		perTrip = strconv.FormatFloat(float64(st.Decisions)/float64(st.RoundTrips), 'f', 2, 64)
	}
	return []commands.Setting{
		{Name: "backing_mode", Value: modeShared},
		{Name: "backing_status", Value: status},
		{Name: "shared_round_trips", Value: i64(st.RoundTrips)},
		{Name: "shared_decisions", Value: i64(st.Decisions)},
		{Name: "shared_decisions_per_round_trip", Value: perTrip},
		{Name: "shared_store_latency_avg_us", Value: i64(avgMicros(st.StoreLatency, st.RoundTrips))},
		{Name: "shared_store_latency_max_us", Value: i64(st.StoreLatencyMax.Microseconds())},
		{Name: "shared_deny_cache_hits", Value: i64(st.DenyCacheHits)},
		{Name: "shared_conflicts", Value: i64(st.Conflicts)},
		{Name: "shared_native_sets", Value: i64(st.NativeSets)},
		{Name: "shared_timeouts", Value: i64(st.Timeouts)},
		{Name: "shared_fallback_active", Value: fallback},
		{Name: "shared_fallbacks", Value: i64(st.Downs)},
		{Name: "shared_local_decisions", Value: i64(st.LocalDecisions)},
		{Name: "shared_clock_offset_us", Value: i64(st.ClockOffset.Microseconds())},
		{Name: "shared_clock_bound_us", Value: i64(st.ClockBound.Microseconds())},
	}
}

// avgMicros is total/n in whole microseconds, 0 when n is.
func avgMicros(total time.Duration, n int64) int64 {
	if n == 0 {
		return 0
	}
	return total.Microseconds() / n
}

// samples returns shared mode's figures for /metrics.
func (s *shared) samples() []metrics.Sample {
	st := s.store.Stats()
	down := 0.0
	if st.StoreDown {
		down = 1
	}
	out := []metrics.Sample{
		{Name: "shared_round_trips_total", Help: "Round trips to the shared store that answered.", Value: float64(st.RoundTrips), Counter: true},
		{Name: "shared_decisions_total", Help: "Decisions made through the shared store.", Value: float64(st.Decisions), Counter: true},
		{Name: "shared_store_latency_seconds_total", Help: "Time spent in round trips to the shared store.", Value: st.StoreLatency.Seconds(), Counter: true},
		{Name: "shared_store_latency_max_seconds", Help: "The longest round trip to the shared store.", Value: st.StoreLatencyMax.Seconds()},
		{Name: "shared_deny_cache_hits_total", Help: "Requests refused from the deny cache without a round trip.", Value: float64(st.DenyCacheHits), Counter: true},
		{Name: "shared_conflicts_total", Help: "Compare-and-set conflicts with other writers (their decisions were made again).", Value: float64(st.Conflicts), Counter: true},
		{Name: "shared_native_sets_total", Help: "Single-key compare-and-sets sent as the store's own SET IFEQ or NX, not through the script.", Value: float64(st.NativeSets), Counter: true},
		{Name: "shared_timeouts_total", Help: "Decisions the store did not answer within --shared-timeout.", Value: float64(st.Timeouts), Counter: true},
		{Name: "shared_fallback_active", Help: "1 while the store cannot be reached and the fallback answers.", Value: down},
		{Name: "shared_local_decisions_total", Help: "Decisions made from local memory while the store could not be reached.", Value: float64(st.LocalDecisions), Counter: true},
		{Name: "shared_clock_bound_seconds", Help: "Bound on the error of this instance's estimate of the store's clock.", Value: st.ClockBound.Seconds()},
	}
	// Decisions per round trip, as a histogram whose bucket i holds the
	// round trips of at most 2^i decisions (the last, any more).
	h := &metrics.Histogram{Count: uint64(st.RoundTrips), Sum: float64(st.Decisions), Buckets: map[float64]uint64{}}
	cum := uint64(0)
	for i, n := range st.DecisionsPerRoundTrip[:len(st.DecisionsPerRoundTrip)-1] {
		cum += uint64(n)
		h.Buckets[float64(int64(1)<<i)] = cum
	}
	return append(out, metrics.Sample{Name: "shared_decisions_per_round_trip",
		Help: "Decisions carried by each round trip to the shared store.", Histogram: h})
}
