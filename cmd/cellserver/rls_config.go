package main

import (
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/cellserver/cellserver/rls"
	rlsconfig "github.com/cellserver/cellserver/rls/config"
)

// The rate limit configuration, read by rls/config and adapted to what the
// service needs (rls.Matcher).

// configMatcher adapts a *rlsconfig.Config to rls.Matcher and
// rls.Overrider.
type configMatcher struct{ c *rlsconfig.Config }

func (m configMatcher) Match(domain string, entries []rls.Entry) *rls.Limit {
	return rlsLimit(m.c.Match(domain, configEntries(entries)))
}

// Override is a descriptor's own limit, in a fixed window.
func (m configMatcher) Override(domain string, entries []rls.Entry, unit rlsv3.RateLimitResponse_RateLimit_Unit, requestsPerUnit uint32) *rls.Limit {
	return rlsLimit(m.c.Override(domain, configEntries(entries), rlsconfig.Unit(unit), requestsPerUnit))
}

func configEntries(entries []rls.Entry) []rlsconfig.Entry {
	es := make([]rlsconfig.Entry, len(entries))
	for i, e := range entries {
		es[i] = rlsconfig.Entry{Key: e.Key, Value: e.Value}
	}
	return es
}

// rlsLimit is the service's view of a configured limit and its state key;
// nil for none.
func rlsLimit(l *rlsconfig.Limit, key string) *rls.Limit {
	if l == nil {
		return nil
	}
	return &rls.Limit{
		Name:            l.Name,
		RequestsPerUnit: l.RequestsPerUnit,
		Unit:            rlsv3.RateLimitResponse_RateLimit_Unit(l.Unit), // the proto's numbers
		Unlimited:       l.Unlimited,
		Blocks:          l.Blocks(),
		ShadowMode:      l.ShadowMode,
		QuotaMode:       l.QuotaMode,
		Replaces:        l.Replaces,
		MetricKey:       l.FullKey,
		Rule:            l.Rule([]byte(key)),
	}
}
