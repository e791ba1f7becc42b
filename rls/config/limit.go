package config

import (
	"time"

	"github.com/cellserver/cellserver/engine"
)

// Limit is one rate_limit block of a configuration. A Config's limits are
// shared by every request and must not be changed; Match returns a copy
// when a request's metric key (FullKey) differs from the configured one.
type Limit struct {
	// FullKey names the limit in metrics as envoyproxy/ratelimit does: the
	// domain and the descriptor path, "domain.key_value.key2", or the
	// request's values where detailed_metric or value_to_metric ask for them.
	FullKey         string
	Name            string
	Unit            Unit
	UnitMultiplier  uint32 // at least 1
	RequestsPerUnit uint32 // 0 admits nothing (envoyproxy/ratelimit's "black list")
	Algorithm       Algorithm
	Burst           uint32 // GCRA only: redis-cell's max_burst
	Unlimited       bool   // admits everything; the engine is not asked
	ShadowMode      bool   // decided and counted, but always answered OK
	QuotaMode       bool   // as ShadowMode, its descriptor's status OK too (envoyproxy/ratelimit's quota_mode)
	Replaces        []string
	DetailedMetric  bool // Match puts the request's values in FullKey
}

// Window is the limit's period: its unit times its multiplier.
func (l *Limit) Window() time.Duration {
	return l.Unit.Duration() * time.Duration(l.UnitMultiplier)
}

// Blocks reports whether the limit admits no request at all
// (requests_per_unit: 0). The engine refuses such a quota, so the service
// answers it without the engine: over the limit for any hit.
func (l *Limit) Blocks() bool { return !l.Unlimited && l.RequestsPerUnit == 0 }

// Rule returns the engine rule for this limit on key: FW, SW or SWC with
// WindowQuota{Limit: RequestsPerUnit, Window: Window()}, or CL with
// GCRAQuota{MaxBurst: Burst, Count: RequestsPerUnit, Period: Window()
// in seconds}. Loading guarantees the quota is one the engine takes, except
// for an Unlimited limit and one that Blocks, which have no rule: the
// service must not ask the engine for them.
func (l *Limit) Rule(key []byte) engine.Rule {
	r := engine.Rule{Key: key, Family: l.Algorithm.Family()}
	if r.Family == engine.FamilyCL {
		r.GCRA = engine.GCRAQuota{
			MaxBurst: int64(l.Burst),
			Count:    int64(l.RequestsPerUnit),
			Period:   int64(l.Window() / time.Second),
		}
		return r
	}
	r.Window = engine.WindowQuota{Limit: int64(l.RequestsPerUnit), Window: l.Window().Nanoseconds()}
	return r
}

// Family is the engine family the algorithm runs on: FW for FixedWindow
// and for an unknown algorithm.
func (a Algorithm) Family() engine.Family {
	switch a {
	case GCRA:
		return engine.FamilyCL
	case SlidingWindow:
		return engine.FamilySW
	case SlidingCounter:
		return engine.FamilySWC
	}
	return engine.FamilyFW
}
