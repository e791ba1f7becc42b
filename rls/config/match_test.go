package config

import (
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

const matchYAML = `
domain: d
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: remote_address
    value: 50.0.0.5
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: path
    value: /api/v1/*
    rate_limit: {unit: minute, requests_per_unit: 30}
  - key: path
    value: /api/exact
    rate_limit: {unit: hour, requests_per_unit: 40}
  - key: path
    rate_limit: {unit: day, requests_per_unit: 50}
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: week, requests_per_unit: 60}
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit: {unit: month, requests_per_unit: 5}
  - key: service
    descriptors:
      - key: user
        value: user-a
        shadow_mode: true
        rate_limit: {unit: year, requests_per_unit: 10}
  - key: quota
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: ldap
    rate_limit: {unlimited: true}
  - key: detail
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: v2m
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: algo
    value: sw
    rate_limit: {unit: minute, unit_multiplier: 5, requests_per_unit: 7, algorithm: sliding_window}
  - key: algo
    value: swc
    rate_limit: {unit: hour, requests_per_unit: 8, algorithm: sliding_counter}
  - key: algo
    value: gcra
    rate_limit: {unit: second, unit_multiplier: 2, requests_per_unit: 9, algorithm: gcra, burst: 3}
`

func e(kv ...string) []Entry {
	var out []Entry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Entry{kv[i], kv[i+1]})
	}
	return out
}

func TestMatch(t *testing.T) {
	c, err := Parse("m.yaml", []byte(matchYAML))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		domain  string
		entries []Entry
		rpu     uint32 // want; 0 with fullKey "" is no limit
		unit    Unit
		fullKey string
		key     string
		check   func(t *testing.T, l *Limit)
	}{
		{"key only", "d", e("remote_address", "1.2.3.4"), 10, UnitSecond, "d.remote_address", "rls:fw:{d}|remote_address=1.2.3.4", nil},
		{"exact before key only", "d", e("remote_address", "50.0.0.5"), 0, UnitSecond, "d.remote_address_50.0.0.5", "rls:fw:{d}|remote_address=50.0.0.5",
			func(t *testing.T, l *Limit) {
				if !l.Blocks() {
					t.Error("a zero limit should block")
				}
			}},
		{"exact before wildcard", "d", e("path", "/api/exact"), 40, UnitHour, "d.path_/api/exact", "rls:fw:{d}|path=/api/exact", nil},
		{"first wildcard in file order", "d", e("path", "/api/v1/x"), 20, UnitMinute, "d.path_/api/*", "rls:fw:{d}|path=/api/v1/x", nil},
		{"wildcard before key only", "d", e("path", "/api/"), 20, UnitMinute, "d.path_/api/*", "rls:fw:{d}|path=/api/", nil},
		{"key only after no wildcard", "d", e("path", "/other"), 50, UnitDay, "d.path", "rls:fw:{d}|path=/other", nil},
		{"share_threshold shares one key", "d", e("files", "files/a.pdf"), 60, UnitWeek, "d.files_files/*", "rls:fw:{d}|files=files/*", nil},
		{"share_threshold, another value", "d", e("files", "files/sub/b.csv"), 60, UnitWeek, "d.files_files/*", "rls:fw:{d}|files=files/*", nil},
		{"literal star value is not the shared pattern", "d", e("files", "files/*"), 60, UnitWeek, "d.files_files/*", "rls:fw:{d}|files=files/%2A", nil},
		{"nested", "d", e("message_type", "marketing", "to_number", "2061111111"), 5, UnitMonth, "d.message_type_marketing.to_number", "rls:fw:{d}|message_type=marketing|to_number=2061111111",
			func(t *testing.T, l *Limit) {
				if l.Window() != 30*24*time.Hour {
					t.Errorf("month window %v", l.Window())
				}
			}},
		{"nested parent alone has no limit", "d", e("message_type", "marketing"), 0, 0, "", "", nil},
		{"more entries than levels", "d", e("remote_address", "1.2.3.4", "x", "y"), 0, 0, "", "", nil},
		{"nested under key only", "d", e("service", "auth", "user", "user-a"), 10, UnitYear, "d.service.user_user-a", "rls:fw:{d}|service=auth|user=user-a",
			func(t *testing.T, l *Limit) {
				if !l.ShadowMode || l.Window() != 365*24*time.Hour {
					t.Errorf("shadow %v window %v", l.ShadowMode, l.Window())
				}
			}},
		{"quota mode", "d", e("quota", "q"), 3, UnitMinute, "d.quota", "rls:fw:{d}|quota=q",
			func(t *testing.T, l *Limit) {
				if !l.QuotaMode || l.ShadowMode {
					t.Errorf("quota %v shadow %v", l.QuotaMode, l.ShadowMode)
				}
			}},
		{"nested value not configured", "d", e("service", "auth", "user", "user-b"), 0, 0, "", "", nil},
		{"unlimited", "d", e("ldap", "x"), 0, UnitUnknown, "d.ldap", "rls:fw:{d}|ldap=x",
			func(t *testing.T, l *Limit) {
				if !l.Unlimited || l.Blocks() {
					t.Errorf("unlimited %v blocks %v", l.Unlimited, l.Blocks())
				}
			}},
		{"detailed_metric", "d", e("detail", "v1"), 10, UnitMinute, "d.detail_v1", "rls:fw:{d}|detail=v1", nil},
		// envoyproxy/ratelimit's detailed metric key has "key_value" for
		// every entry, "key_" for an empty value.
		{"detailed_metric, empty value", "d", e("detail", ""), 10, UnitMinute, "d.detail_", "rls:fw:{d}|detail=", nil},
		{"value_to_metric", "d", e("v2m", "v1"), 10, UnitMinute, "d.v2m_v1", "rls:fw:{d}|v2m=v1", nil},
		{"sliding window, multiplier", "d", e("algo", "sw"), 7, UnitMinute, "d.algo_sw", "rls:sw:{d}|algo=sw",
			func(t *testing.T, l *Limit) {
				r := l.Rule([]byte("k"))
				if r.Family != engine.FamilySW || r.Window != (engine.WindowQuota{Limit: 7, Window: int64(5 * time.Minute)}) {
					t.Errorf("rule %+v", r)
				}
			}},
		{"sliding counter", "d", e("algo", "swc"), 8, UnitHour, "d.algo_swc", "rls:swc:{d}|algo=swc",
			func(t *testing.T, l *Limit) {
				r := l.Rule([]byte("k"))
				if r.Family != engine.FamilySWC || r.Window != (engine.WindowQuota{Limit: 8, Window: int64(time.Hour)}) {
					t.Errorf("rule %+v", r)
				}
			}},
		{"gcra with burst", "d", e("algo", "gcra"), 9, UnitSecond, "d.algo_gcra", "rls:cl:{d}|algo=gcra",
			func(t *testing.T, l *Limit) {
				r := l.Rule([]byte("k"))
				if r.Family != engine.FamilyCL || r.GCRA != (engine.GCRAQuota{MaxBurst: 3, Count: 9, Period: 2}) {
					t.Errorf("rule %+v", r)
				}
			}},
		{"fixed window rule", "d", e("remote_address", "1.2.3.4"), 10, UnitSecond, "d.remote_address", "rls:fw:{d}|remote_address=1.2.3.4",
			func(t *testing.T, l *Limit) {
				r := l.Rule([]byte("k"))
				if r.Family != engine.FamilyFW || r.Window != (engine.WindowQuota{Limit: 10, Window: int64(time.Second)}) || string(r.Key) != "k" {
					t.Errorf("rule %+v", r)
				}
			}},
		{"unknown domain", "nope", e("remote_address", "1.2.3.4"), 0, 0, "", "", nil},
		{"unknown key", "d", e("nothing", "x"), 0, 0, "", "", nil},
		{"no entries", "d", nil, 0, 0, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, key := c.Match(tt.domain, tt.entries)
			if tt.fullKey == "" {
				if l != nil || key != "" {
					t.Fatalf("Match = %+v, %q; want none", l, key)
				}
				return
			}
			if l == nil {
				t.Fatal("Match found no limit")
			}
			if l.RequestsPerUnit != tt.rpu || l.Unit != tt.unit || l.FullKey != tt.fullKey || key != tt.key {
				t.Fatalf("Match = rpu %d unit %v FullKey %q key %q; want %d %v %q %q", l.RequestsPerUnit, l.Unit, l.FullKey, key, tt.rpu, tt.unit, tt.fullKey, tt.key)
			}
			if tt.check != nil {
				tt.check(t, l)
			}
		})
	}
}

// TestMatchWildcardNested: wildcards are looked up among the level's own
// descriptors, and share_threshold holds below a wildcard with children.
func TestMatchWildcardNested(t *testing.T) {
	c, err := Parse("w.yaml", []byte(`
domain: d
descriptors:
  - key: parent
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        detailed_metric: true
        rate_limit: {unit: second, requests_per_unit: 10}
  - key: top
    value: t*
    share_threshold: true
    descriptors:
      - key: sub
        rate_limit: {unit: second, requests_per_unit: 11}
`))
	if err != nil {
		t.Fatal(err)
	}
	l, key := c.Match("d", e("parent", "value1", "files", "nested/file1.txt"))
	if l == nil || key != "rls:fw:{d}|parent=value1|files=nested/*" || l.FullKey != "d.parent_value1.files_nested/*" {
		t.Fatalf("Match = %+v, %q", l, key)
	}
	if _, key2 := c.Match("d", e("parent", "value1", "files", "nested/file2.csv")); key2 != key {
		t.Fatalf("share_threshold keys differ: %q %q", key, key2)
	}
	if l, _ := c.Match("d", e("files", "nested/x")); l != nil {
		t.Fatal("a nested wildcard matched at the top level")
	}
	l, key = c.Match("d", e("top", "tea", "sub", "s1"))
	if l == nil || l.RequestsPerUnit != 11 || key != "rls:fw:{d}|top=t*|sub=s1" {
		t.Fatalf("Match = %+v, %q", l, key)
	}
}

func TestOverride(t *testing.T) {
	c, err := Parse("o.yaml", []byte("domain: d\n"))
	if err != nil {
		t.Fatal(err)
	}
	l, key := c.Override("d", e("k", "v", "k2", ""), UnitMinute, 3)
	if l == nil || l.FullKey != "d.k_v.k2" || l.Window() != time.Minute || l.RequestsPerUnit != 3 || key != "rls:fw:{d}|k=v|k2=" {
		t.Fatalf("Override = %+v, %q", l, key)
	}
	if l, _ := c.Override("x", e("k", "v"), UnitMinute, 3); l != nil {
		t.Fatal("override for an unknown domain")
	}
	if l, _ := c.Override("d", e("k", "v"), UnitUnknown, 3); l != nil {
		t.Fatal("override with an unknown unit")
	}
}

// TestLongValueKey: a value longer than LongValue is held in the state key
// and the metric key as its digest: keys stay bounded, equal values share
// theirs, and different ones do not.
func TestLongValueKey(t *testing.T) {
	c, err := Parse("m.yaml", []byte(matchYAML))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("p", 4000)
	l1, k1 := c.Match("d", e("detail", long))
	l2, k2 := c.Match("d", e("detail", long))
	_, k3 := c.Match("d", e("detail", long+"x"))
	if l1 == nil || k1 != k2 || k1 == k3 || len(k1) > 120 || len(l1.FullKey) > 120 || l1.FullKey != l2.FullKey {
		t.Fatalf("keys %q, %q, %q; metric key %q", k1, k2, k3, l1.FullKey)
	}
	if _, short := c.Match("d", e("detail", strings.Repeat("p", LongValue))); !strings.Contains(short, strings.Repeat("p", LongValue)) {
		t.Fatalf("a value of LongValue bytes is held as it is: %q", short)
	}
}
