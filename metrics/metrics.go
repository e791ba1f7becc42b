// Package metrics exposes cellserver's figures to Prometheus: a collector
// that reads the commands', the engine's and the server's counters when
// scraped, so that requests pay nothing for it, and an HTTP handler serving
// /metrics, /healthz and /readyz.
package metrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
)

// Options says where the figures come from. Every field may be nil; the
// figures of a nil source are left out.
type Options struct {
	// Commands gives the command counts by outcome and their latencies.
	Commands *commands.Commands
	// Engine gives the keys, expired and evicted keys, and memory.
	Engine *engine.Engine
	// Host gives the connection counters (the server).
	Host commands.Host
	// Persistence, if set, returns the backing store's figures at each
	// scrape, each exported as cellserver_persist_<Name>.
	Persistence func() []Sample
	// TopKeys is how many of the keys refused most often (THROTTLE.TOP)
	// to export, per window, as cellserver_top_refused_keys; 0 exports
	// none. It bounds the series: at most 2*TopKeys.
	TopKeys int
	// Ready reports whether start-up is done (the backing store loaded), for
	// /readyz; nil means ready from the start.
	Ready func() bool
	// Collectors are registered beside cellserver's own (the rate limit
	// service's, package rls).
	Collectors []prometheus.Collector
}

// Sample is one figure a hook (Options.Persistence) reports.
type Sample struct {
	// Name is the metric's name after its prefix, in Prometheus's
	// conventions ("flushes_total", "pending_keys").
	Name string
	// Help is the metric's description; empty gives a generic one.
	Help  string
	Value float64
	// Counter says the figure only grows; otherwise it is a gauge.
	Counter bool
	// Histogram, when set, makes the figure a histogram (Value and Counter
	// are then unused).
	Histogram *Histogram
}

// Histogram is a figure's distribution: how many observations, their sum,
// and for each bucket's upper bound how many were at most that
// (cumulative, as Prometheus's buckets are).
type Histogram struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64
}

// NewHandler returns the HTTP handler for the metrics address: GET /metrics
// in Prometheus's text format, from a registry of its own holding
// NewCollector(opts), opts.Collectors, and the Go runtime's and the
// process's collectors;
// /healthz, 200 "ok" as long as the process serves it; /readyz, 200 "ready"
// once opts.Ready says so and 503 before.
func NewHandler(opts Options) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		NewCollector(opts),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	reg.MustRegister(opts.Collectors...)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if opts.Ready != nil && !opts.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("loading\n"))
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}

// NewCollector returns a prometheus.Collector of cellserver's figures,
// read from opts's sources at each scrape.
func NewCollector(opts Options) prometheus.Collector {
	c := &collector{opts: opts}
	c.commands = prometheus.NewDesc("cellserver_commands_total",
		"Commands run, by command and outcome: allowed or limited (rate-limit commands), ok (other commands), error.",
		[]string{"command", "outcome"}, nil)
	c.duration = prometheus.NewDesc("cellserver_command_duration_seconds",
		"How long commands ran, from the parsed request to the written reply.", []string{"command"}, nil)
	c.connected = prometheus.NewDesc("cellserver_connected_clients", "Client connections open.", nil, nil)
	c.connections = prometheus.NewDesc("cellserver_connections_total", "Client connections accepted.", nil, nil)
	c.rejected = prometheus.NewDesc("cellserver_rejected_connections_total",
		"Client connections refused (maxclients).", nil, nil)
	c.keys = prometheus.NewDesc("cellserver_keys", "Live keys, by limit family.", []string{"family"}, nil)
	c.expired = prometheus.NewDesc("cellserver_expired_keys_total", "Keys removed because they expired.", nil, nil)
	c.evicted = prometheus.NewDesc("cellserver_evicted_keys_total",
		"Live keys evicted to stay within maxmemory, the soonest to expire first.", nil, nil)
	c.used = prometheus.NewDesc("cellserver_used_memory_bytes",
		"The keyspace's estimated size, which maxmemory bounds (INFO's used_memory_dataset).", nil, nil)
	c.maxmemory = prometheus.NewDesc("cellserver_maxmemory_bytes", "The maxmemory bound; 0 for none.", nil, nil)
	c.topKeys = prometheus.NewDesc("cellserver_top_refused_keys",
		"Refusals of the keys refused most often over the window (1m or 1h), estimated as THROTTLE.TOP does; "+
			"only the top --metrics-top-keys keys of each window.",
		[]string{"key", "family", "window"}, nil)
	return c
}

// collector reads the counters at scrape time.
type collector struct {
	opts Options

	commands, duration               *prometheus.Desc
	connected, connections, rejected *prometheus.Desc
	keys, expired, evicted           *prometheus.Desc
	used, maxmemory                  *prometheus.Desc
	topKeys                          *prometheus.Desc
}

// Describe sends every metric's descriptor. The persistence hook's figures
// are not known in advance, so they come unchecked (Collect only).
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	if c.opts.Persistence != nil {
		return // an unchecked collector describes nothing
	}
	for _, d := range []*prometheus.Desc{c.commands, c.duration, c.connected, c.connections, c.rejected,
		c.keys, c.expired, c.evicted, c.used, c.maxmemory, c.topKeys} {
		ch <- d
	}
}

// Collect reads every source once.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if c.opts.Commands != nil {
		c.collectCommands(ch)
		if c.opts.TopKeys > 0 {
			c.collectTopKeys(ch)
		}
	}
	if h := c.opts.Host; h != nil {
		st := h.Stats()
		ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, float64(st.ConnectedClients))
		ch <- prometheus.MustNewConstMetric(c.connections, prometheus.CounterValue, float64(st.TotalConnections))
		ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(st.RejectedConnections))
	}
	if e := c.opts.Engine; e != nil {
		counts := e.Counts(nil)
		for _, f := range engine.Families() {
			ch <- prometheus.MustNewConstMetric(c.keys, prometheus.GaugeValue, float64(counts[f]), f.Name())
		}
		ch <- prometheus.MustNewConstMetric(c.expired, prometheus.CounterValue, float64(e.ExpiredKeys()))
		ch <- prometheus.MustNewConstMetric(c.evicted, prometheus.CounterValue, float64(e.EvictedKeys()))
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(e.Used()))
		ch <- prometheus.MustNewConstMetric(c.maxmemory, prometheus.GaugeValue, float64(e.MaxMemory()))
	}
	if p := c.opts.Persistence; p != nil {
		collectSamples(ch, p())
	}
}

// collectCommands sends the counts and latency histogram of each command
// that has run, and of the rate-limit commands always, so that their
// series exist from the start.
func (c *collector) collectCommands(ch chan<- prometheus.Metric) {
	bounds := commands.LatencyBounds()
	for _, m := range c.opts.Commands.Metrics() {
		calls := m.Calls()
		if calls == 0 && !m.Decides {
			continue
		}
		counter := func(outcome string, n uint64) {
			ch <- prometheus.MustNewConstMetric(c.commands, prometheus.CounterValue, float64(n), m.Name, outcome)
		}
		if m.Decides {
			counter("allowed", m.Allowed)
			counter("limited", m.Limited)
		} else {
			counter("ok", m.OK)
		}
		counter("error", m.Errors)
		buckets := make(map[float64]uint64, len(bounds))
		cumulative := uint64(0)
		for i, b := range bounds {
			cumulative += m.Buckets[i]
			buckets[b.Seconds()] = cumulative
		}
		ch <- prometheus.MustNewConstHistogram(c.duration, calls, m.Sum.Seconds(), buckets, m.Name)
	}
}

// collectTopKeys sends the keys refused most often in each window. A key
// that is not UTF-8 is shown with U+FFFD for its bad bytes (Prometheus's
// labels are UTF-8); should two keys then look alike, the first, more
// refused, is sent.
func (c *collector) collectTopKeys(ch chan<- prometheus.Metric) {
	for _, w := range []struct {
		name string
		hour bool
	}{{"1m", false}, {"1h", true}} {
		seen := make(map[string]bool)
		for _, k := range c.opts.Commands.TopRefused(c.opts.TopKeys, w.hour) {
			key := strings.ToValidUTF8(k.Key, "\uFFFD")
			if seen[key] {
				continue
			}
			seen[key] = true
			ch <- prometheus.MustNewConstMetric(c.topKeys, prometheus.GaugeValue, float64(k.Refusals),
				key, k.Family.Name(), w.name)
		}
	}
}

// collectSamples sends the hook's figures as cellserver_persist_<name>. A
// figure with a bad name is reported as an error of the scrape, without
// hiding the others.
func collectSamples(ch chan<- prometheus.Metric, samples []Sample) {
	for _, s := range samples {
		help := s.Help
		if help == "" {
			help = "Persistence figure " + s.Name + "."
		}
		desc := prometheus.NewDesc("cellserver_persist_"+s.Name, help, nil, nil)
		kind := prometheus.GaugeValue
		if s.Counter {
			kind = prometheus.CounterValue
		}
		var m prometheus.Metric
		var err error
		if h := s.Histogram; h != nil {
			m, err = prometheus.NewConstHistogram(desc, h.Count, h.Sum, h.Buckets)
		} else {
			m, err = prometheus.NewConstMetric(desc, kind, s.Value)
		}
		if err != nil {
			m = prometheus.NewInvalidMetric(desc, err)
		}
		ch <- m
	}
}
