package config

import (
	"strings"
)

// Entry is one key and value of a request's descriptor.
type Entry struct{ Key, Value string }

// Match returns the limit for one descriptor of domain, and the key under
// which its state is kept (see the package doc). It returns nil and "" for
// an unknown domain and for a descriptor no rule matches.
//
// It walks the domain's tree as envoyproxy/ratelimit's GetLimit does: at
// each level the entry's "key_value" exactly, else the first wildcard of
// that level (in file order) whose text before '*' begins "key_value",
// else "key" alone; a limit is found only when the descriptor's last entry
// matches a descriptor with a rate_limit. The returned limit is the
// configuration's own unless the request's metric key differs
// (detailed_metric, value_to_metric), in which case it is a copy with that
// FullKey. Either way it is read-only.
func (c *Config) Match(domain string, entries []Entry) (limit *Limit, key string) {
	d := c.domains[domain]
	if d == nil {
		return nil, ""
	}
	level := &d.node
	var patterns []string // share_threshold patterns by entry, nil when none
	var detailed, valueMetric strings.Builder
	detailed.WriteString(domain)
	valueMetric.WriteString(domain)
	for i, e := range entries {
		finalKey := e.Key + "_" + e.Value
		detailed.WriteString(".")
		detailed.WriteString(e.Key + "_" + shortValue(e.Value)) // "key_" for an empty value, as envoyproxy/ratelimit's
		next := level.children[finalKey]
		wildcard := ""
		if next == nil {
			for _, w := range level.wildcards {
				if strings.HasPrefix(finalKey, strings.TrimSuffix(w, "*")) {
					next, wildcard = level.children[w], w
					break
				}
			}
		}
		byValue := next != nil
		if next == nil {
			next = level.children[e.Key]
		}
		if wildcard != "" && next.shareThreshold && next.wildcardPattern != "" {
			if patterns == nil {
				patterns = make([]string, len(entries))
			}
			patterns[i] = strings.TrimPrefix(next.wildcardPattern, e.Key+"_")
		}
		valueMetric.WriteString(".")
		valueMetric.WriteString(metricPart(e, next, wildcard, byValue, patterns, i))
		if next != nil && next.limit != nil && i == len(entries)-1 {
			limit = next.limit
		}
		if next == nil || len(next.children) == 0 {
			break
		}
		level = next
	}
	if limit == nil {
		return nil, ""
	}
	var fullKey string
	switch {
	case limit.DetailedMetric && patterns != nil:
		var b strings.Builder
		b.WriteString(domain)
		for i, e := range entries {
			b.WriteString(".")
			if patterns[i] != "" {
				b.WriteString(e.Key + "_" + patterns[i])
			} else {
				b.WriteString(keyValue(e))
			}
		}
		fullKey = b.String()
	case limit.DetailedMetric:
		fullKey = detailed.String()
	default:
		fullKey = valueMetric.String()
	}
	if fullKey != limit.FullKey {
		copied := *limit
		copied.FullKey = fullKey
		limit = &copied
	}
	return limit, stateKey(limit.Algorithm, domain, entries, patterns)
}

// metricPart is one entry's part of the value_to_metric metric key, as
// envoyproxy/ratelimit builds it: a wildcard match names the pattern
// unless value_to_metric asks for the value (share_threshold always names
// the pattern); a key-only match names the key unless value_to_metric asks
// for the value.
func metricPart(e Entry, next *node, wildcard string, byValue bool, patterns []string, i int) string {
	shared := patterns != nil && patterns[i] != ""
	switch {
	case next == nil:
		return e.Key
	case shared:
		return e.Key + "_" + patterns[i]
	case wildcard != "" && !next.valueToMetric:
		return e.Key + "_" + strings.TrimPrefix(wildcard, e.Key+"_")
	case wildcard != "", byValue, next.valueToMetric:
		return keyValue(e)
	}
	return e.Key
}

// keyValue is "key_value", or "key" for an empty value, for a metric's
// label (a long value as its digest, shortValue).
func keyValue(e Entry) string {
	if e.Value == "" {
		return e.Key
	}
	return e.Key + "_" + shortValue(e.Value)
}

// Override returns the limit a request's descriptor sets for itself (the
// RLS descriptor's limit field), which envoyproxy/ratelimit applies in
// place of the configuration's for a known domain, without shadow mode,
// name or replaces, in fixed windows; and its state key. It returns nil
// and "" for an unknown domain or unit.
func (c *Config) Override(domain string, entries []Entry, unit Unit, requestsPerUnit uint32) (*Limit, string) {
	if c.domains[domain] == nil || unit.Duration() == 0 {
		return nil, ""
	}
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = keyValue(e)
	}
	l := &Limit{
		FullKey:         domain + "." + strings.Join(parts, "."),
		Unit:            unit,
		UnitMultiplier:  1,
		RequestsPerUnit: requestsPerUnit,
	}
	return l, stateKey(FixedWindow, domain, entries, nil)
}
