package rls

import (
	"sync"
	"sync/atomic"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellserver/cellserver/engine"
)

// MaxMetricSeries bounds the (domain, descriptor) label pairs the per-rule
// counters keep: a limit's configuration path is bounded by the
// configuration, but a MetricKey built from detailed_metric or
// value_to_metric carries request values, which are not. Past the bound, new pairs are counted together under the domain
// "" and the descriptor OverflowLabel.
const MaxMetricSeries = 1000

// OverflowLabel is the descriptor label of the hits past MaxMetricSeries.
const OverflowLabel = "_overflow"

// nearLimitRatio is envoyproxy/ratelimit's NEAR_LIMIT_RATIO: an admitted
// hit is near the limit when it leaves less than 20% of it.
const nearLimitRatio = 0.8

// ruleCounters are one rule's figures, in hits (hits_addend units).
type ruleCounters struct {
	total, over, near, within, shadow atomic.Uint64
}

type seriesKey struct{ domain, descriptor string }

// serviceMetrics are the service's figures, read by its collector at
// scrape time.
type serviceMetrics struct {
	mu    sync.Mutex // guards rules
	rules map[seriesKey]*ruleCounters

	ok, over, invalid, failed atomic.Uint64
	latency                   prometheus.Histogram

	totalDesc, overDesc, nearDesc, withinDesc, shadowDesc, requestsDesc *prometheus.Desc
}

func newServiceMetrics() *serviceMetrics {
	labels := []string{"domain", "descriptor"}
	return &serviceMetrics{
		rules: map[seriesKey]*ruleCounters{},
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cellserver_rls_request_duration_seconds",
			Help:    "How long ShouldRateLimit requests took, from the decoded request to the response.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		totalDesc:  prometheus.NewDesc("cellserver_rls_total_hits_total", "Hits (hits_addend units) per limit.", labels, nil),
		overDesc:   prometheus.NewDesc("cellserver_rls_over_limit_total", "Hits refused per limit.", labels, nil),
		nearDesc:   prometheus.NewDesc("cellserver_rls_near_limit_total", "Hits admitted that left less than 20% of the limit.", labels, nil),
		withinDesc: prometheus.NewDesc("cellserver_rls_within_limit_total", "Hits admitted per limit.", labels, nil),
		shadowDesc: prometheus.NewDesc("cellserver_rls_shadow_mode_total", "Hits over a shadow-mode limit, answered OK.", labels, nil),
		requestsDesc: prometheus.NewDesc("cellserver_rls_requests_total",
			"ShouldRateLimit requests by outcome: ok, over_limit, invalid (InvalidArgument), error.", []string{"outcome"}, nil),
	}
}

// request counts one request by outcome.
func (m *serviceMetrics) request(took time.Duration, resp *rlsv3.RateLimitResponse, err error) {
	m.latency.Observe(took.Seconds())
	switch {
	case err != nil:
		if _, ok := err.(errInvalid); ok {
			m.invalid.Add(1)
		} else {
			m.failed.Add(1)
		}
	case resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT:
		m.over.Add(1)
	default:
		m.ok.Add(1)
	}
}

// descriptor counts one decided descriptor's hits under its limit's
// MetricKey.
func (m *serviceMetrics) descriptor(domain string, l *Limit, hits int64, d engine.Decision) {
	c := m.counters(seriesKey{domain, l.MetricKey})
	n := uint64(max(hits, 0))
	c.total.Add(n)
	switch {
	case d.Limited && l.ShadowMode:
		c.shadow.Add(n)
		c.over.Add(n)
	case d.Limited:
		c.over.Add(n)
	default:
		c.within.Add(n)
		// Of the hits, those past the threshold are near the limit, as
		// envoyproxy/ratelimit counts them.
		threshold := int64(nearLimitRatio * float64(d.Limit))
		if used := d.Limit - d.Remaining; d.Limit > 0 && used > threshold {
			c.near.Add(min(n, uint64(used-threshold)))
		}
	}
}

// counters returns key's counters, made on first use within the bound.
func (m *serviceMetrics) counters(key seriesKey) *ruleCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.rules[key]; ok {
		return c
	}
	if len(m.rules) >= MaxMetricSeries {
		key = seriesKey{"", OverflowLabel}
		if c, ok := m.rules[key]; ok {
			return c
		}
	}
	c := &ruleCounters{}
	m.rules[key] = c
	return c
}

// Collector returns the service's metrics, for the metrics handler's
// registry.
func (s *Service) Collector() prometheus.Collector { return s.metrics }

// Describe sends the metrics' descriptors.
func (m *serviceMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.totalDesc, m.overDesc, m.nearDesc, m.withinDesc, m.shadowDesc, m.requestsDesc} {
		ch <- d
	}
	m.latency.Describe(ch)
}

// Collect reads every counter once. It holds the series' lock only to list
// them, not while it sends.
func (m *serviceMetrics) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(m.requestsDesc, m.ok.Load(), "ok")
	counter(m.requestsDesc, m.over.Load(), "over_limit")
	counter(m.requestsDesc, m.invalid.Load(), "invalid")
	counter(m.requestsDesc, m.failed.Load(), "error")
	m.latency.Collect(ch)
	// The series are listed under the lock and sent after it: a scrape
	// that reads slowly must not hold back the requests' counters. Series
	// are never removed, and their counters are atomic.
	type series struct {
		key seriesKey
		c   *ruleCounters
	}
	m.mu.Lock()
	all := make([]series, 0, len(m.rules))
	for k, c := range m.rules {
		all = append(all, series{k, c})
	}
	m.mu.Unlock()
	for _, s := range all {
		k, c := s.key, s.c
		counter(m.totalDesc, c.total.Load(), k.domain, k.descriptor)
		counter(m.overDesc, c.over.Load(), k.domain, k.descriptor)
		counter(m.nearDesc, c.near.Load(), k.domain, k.descriptor)
		counter(m.withinDesc, c.within.Load(), k.domain, k.descriptor)
		counter(m.shadowDesc, c.shadow.Load(), k.domain, k.descriptor)
	}
}
