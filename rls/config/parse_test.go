package config

import (
	"errors"
	"strings"
	"testing"
)

// TestParseAccepted loads files envoyproxy/ratelimit accepts (its README's
// examples among them) and cellserver's extensions.
func TestParseAccepted(t *testing.T) {
	tests := []struct {
		name, yaml string
		domains    []string
	}{
		{"readme example 2", `
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`, []string{"messaging"}},
		{"black list with zero", `
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: remote_address
    value: 50.0.0.5
    rate_limit: {unit: second, requests_per_unit: 0}
`, []string{"edge_proxy_per_ip"}},
		{"unlimited with an invalid unit, which envoyproxy/ratelimit ignores", `
domain: internal
descriptors:
  - key: ldap
    rate_limit: {unlimited: true, unit: fortnight}
`, []string{"internal"}},
		{"descriptor without rate_limit nor children", "domain: d\ndescriptors:\n  - key: k\n", []string{"d"}},
		{"no descriptors", "domain: d\n", []string{"d"}},
		{"units in any case", `
domain: d
descriptors:
  - {key: a, rate_limit: {unit: SECOND, requests_per_unit: 1}}
  - {key: b, rate_limit: {unit: Minute, requests_per_unit: 1}}
  - {key: c, rate_limit: {unit: week, requests_per_unit: 1}}
  - {key: e, rate_limit: {unit: month, requests_per_unit: 1}}
  - {key: f, rate_limit: {unit: year, requests_per_unit: 4294967295}}
`, []string{"d"}},
		{"yaml 1.1 booleans, as yaml.v2 reads them", `
domain: d
descriptors:
  - key: k
    shadow_mode: yes
    detailed_metric: on
    rate_limit: {unit: hour, requests_per_unit: 1}
`, []string{"d"}},
		{"a known key at a level without it is ignored, as yaml.v2 does", `
domain: d
descriptors:
  - key: k
    unit: second
    rate_limit: {unit: hour, requests_per_unit: 1}
`, []string{"d"}},
		{"replaces, shadow_mode, detailed_metric, value_to_metric, share_threshold", `
domain: d
descriptors:
  - key: files
    value: "files/*"
    share_threshold: true
    value_to_metric: true
    rate_limit:
      name: shared
      replaces: [{name: other}]
      unit: minute
      requests_per_unit: 5
`, []string{"d"}},
		{"cellserver extensions", `
domain: d
descriptors:
  - key: a
    rate_limit: {unit: minute, unit_multiplier: 5, requests_per_unit: 10, algorithm: sliding_window}
  - key: b
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: GCRA, burst: 4}
  - key: c
    rate_limit: {unit: year, unit_multiplier: 100, requests_per_unit: 1, algorithm: sliding_counter}
`, []string{"d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("f.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := strings.Join(c.Domains(), ","); got != strings.Join(tt.domains, ",") {
				t.Fatalf("Domains = %q, want %q", got, tt.domains)
			}
		})
	}
}

// TestParseRejected compares each refusal with envoyproxy/ratelimit's
// words (config_impl.go) where it has them, and checks the file and line.
func TestParseRejected(t *testing.T) {
	tests := []struct {
		name, yaml string
		line       int
		problem    string
	}{
		{"syntax", "domain: d\ndescriptors:\n  - key: a\n   value: b\n", 2, "error loading config file: yaml: line 2: did not find expected '-' indicator"},
		{"top level list", "- domain: d\n", 1, "error loading config file: cannot unmarshal !!seq into a mapping"},
		{"empty file", "", 0, "config file cannot have empty domain"},
		{"empty domain", "domain: \"\"\n", 1, "config file cannot have empty domain"},
		{"unknown key", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      foo: 1\n", 7, "config error, unknown key 'foo'"},
		{"unknown top key", "domain: d\nfoo: bar\n", 2, "config error, unknown key 'foo'"},
		{"extension outside rate_limit", "domain: d\ndescriptors:\n  - key: a\n    burst: 1\n", 4, "config error, unknown key 'burst'"},
		{"key not a string", "domain: d\n1: x\n", 2, "config error, key is not of type string: 1"},
		{"list of scalars", "domain: d\ndescriptors:\n  - a\n", 3, "config error, yaml file contains list of type other than map: a"},
		{"float leaf", "domain: d\ndescriptors:\n  - key: a\n    value: 1.5\n", 4, "error checking config"},
		{"negative requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: -1}\n", 4, "error loading config file: cannot unmarshal !!int `-1` into uint32"},
		{"requests beyond uint32", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 4294967296}\n", 4, "into uint32"},
		{"quoted number", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: \"5\"}\n", 4, "cannot unmarshal !!str `5` into uint32"},
		{"descriptors not a list", "domain: d\ndescriptors: x\n", 2, "cannot unmarshal !!str `x` into a list of descriptors"},
		{"bool not a bool", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n", 4, "cannot unmarshal !!str `maybe` into bool"},
		{"empty key", "domain: d\ndescriptors:\n  - value: v\n", 3, "descriptor has empty key"},
		{"duplicate composite key", "domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a\n    value: b\n", 5, "duplicate descriptor composite key 'd.a_b'"},
		{"duplicate composite key across key and value", "domain: d\ndescriptors:\n  - key: a_b\n    value: c\n  - key: a\n    value: b_c\n", 5, "duplicate descriptor composite key 'd.a_b_c'"},
		{"nested duplicate", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n      - key: b\n", 6, "duplicate descriptor composite key 'd.a.b'"},
		{"invalid unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n", 4, "invalid rate limit unit 'fortnight'"},
		{"unknown unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: unknown, requests_per_unit: 1}\n", 4, "invalid rate limit unit 'unknown'"},
		{"missing unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {requests_per_unit: 1}\n", 4, "invalid rate limit unit ''"},
		{"unit when unlimited", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: second\n", 6, "should not specify rate limit unit when unlimited"},
		{"empty replaces", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: \"\"\n", 8, "should not have an empty replaces entry"},
		{"replaces itself", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      name: x\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: x\n", 9, "replaces should not contain name of same descriptor"},
		{"share_threshold without wildcard", "domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n", 3, "share_threshold can only be used with wildcard values (ending with '*'), but found key 'a_b'"},
		{"invalid algorithm", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: leaky}\n", 4, "invalid rate limit algorithm 'leaky'"},
		{"burst without gcra", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, burst: 2}\n", 4, "rate limit burst is only for algorithm gcra"},
		{"zero multiplier", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, unit_multiplier: 0}\n", 4, "rate limit unit_multiplier must be at least 1"},
		{"window beyond the engine's", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: year, requests_per_unit: 1, unit_multiplier: 101}\n", 4, "longer than the engine's longest, 100 years"},
		{"algorithm when unlimited", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, algorithm: gcra}\n", 4, "should not specify rate limit algorithm when unlimited"},
		{"first problem in file order", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: bad, requests_per_unit: 1}\n  - key: \"\"\n", 4, "invalid rate limit unit 'bad'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("conf/f.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse accepted it: domains %v", c.Domains())
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v, want *Error", err, err)
			}
			if e.File != "conf/f.yaml" || e.Line != tt.line || !strings.Contains(e.Problem, tt.problem) {
				t.Fatalf("error %q (file %q line %d), want file conf/f.yaml line %d with %q", err, e.File, e.Line, tt.line, tt.problem)
			}
			if !strings.HasPrefix(err.Error(), "conf/f.yaml") {
				t.Fatalf("error %q does not start with the file", err)
			}
		})
	}
}
