package rls

import (
	"sync/atomic"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/cellserver/cellserver/engine"
)

// Entry is one key/value pair of a request's descriptor.
type Entry struct{ Key, Value string }

// Limit is what the service needs of one configured limit that a
// descriptor matched. The configuration (package rls/config) is adapted to
// it, so that this package neither parses nor watches configurations.
type Limit struct {
	// Name is the limit's name, reported in current_limit and matched by
	// other limits' Replaces.
	Name string
	// RequestsPerUnit and Unit are reported in current_limit (and in the
	// RateLimit-Limit header).
	RequestsPerUnit uint32
	Unit            rlsv3.RateLimitResponse_RateLimit_Unit
	// Unlimited answers OK without counting.
	Unlimited bool
	// Blocks admits nothing (requests_per_unit: 0, envoyproxy/ratelimit's
	// "black list"): a hit is OVER_LIMIT without asking the Decider (Rule is
	// not used), and a request with such a hit counts nothing under its
	// other descriptors either.
	Blocks bool
	// ShadowMode counts the hit but answers OK even when over the limit.
	ShadowMode bool
	// QuotaMode is as ShadowMode (envoyproxy/ratelimit's quota_mode: the
	// request is not limited by it), its descriptor's status OK too.
	QuotaMode bool
	// Replaces names limits that this one, when matched in the same
	// request, makes the service ignore.
	Replaces []string
	// MetricKey is the descriptor label of the limit's metrics, as the
	// configuration builds it for the request: the limit's path (domain
	// and descriptor keys, with the values the configuration names), or
	// the request's own values where detailed_metric or value_to_metric
	// ask for them, within the service's bound on label sets.
	MetricKey string
	// Rule is the engine rule for the matched key, its Key set.
	Rule engine.Rule
}

// Matcher finds the limit for one descriptor: nil when none applies,
// including when domain is unknown. It must be safe for concurrent use.
type Matcher interface {
	Match(domain string, entries []Entry) *Limit
}

// Overrider is a Matcher that also answers for a descriptor that carries
// its own limit (RateLimitDescriptor.limit, which Envoy sets from a route's
// rate_limits limit override), as envoyproxy/ratelimit applies it in place
// of the configured one. Override returns nil when the override does not
// apply (an unknown domain, an unknown unit); the configured limit, Match's,
// then does. The service uses Override when its Matcher has it.
type Overrider interface {
	Override(domain string, entries []Entry, unit rlsv3.RateLimitResponse_RateLimit_Unit, requestsPerUnit uint32) *Limit
}

// limits holds the current Matcher, swapped whole on reload.
type limits struct{ p atomic.Pointer[matcherBox] }

type matcherBox struct{ m Matcher }

func (l *limits) load() Matcher {
	if b := l.p.Load(); b != nil {
		return b.m
	}
	return nil
}

func (l *limits) store(m Matcher) { l.p.Store(&matcherBox{m}) }

// limitsNothing reports whether the limit never limits the request
// (ShadowMode, QuotaMode): it is decided apart from the others, whose all
// or nothing it does not take part in.
func (l *Limit) limitsNothing() bool { return l.ShadowMode || l.QuotaMode }
