package persist

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in         string
		addrs      []string
		db         int
		user, pass string
		tls        bool
		serverName string
	}{
		{in: "redis://localhost:6379", addrs: []string{"localhost:6379"}},
		{in: "redis://10.0.0.5", addrs: []string{"10.0.0.5:6379"}},
		{in: "redis://:s3cret@cache:6380/2", addrs: []string{"cache:6380"}, db: 2, pass: "s3cret"},
		{in: "redis://app:p%40ss@cache:6380/0", addrs: []string{"cache:6380"}, user: "app", pass: "p@ss"},
		{in: "rediss://app:pw@cache.example.com:6380", addrs: []string{"cache.example.com:6380"}, user: "app", pass: "pw", tls: true, serverName: "cache.example.com"},
		{in: "cache:7000", addrs: []string{"cache:7000"}},
		{in: "cache", addrs: []string{"cache:6379"}},
		{in: "[::1]:7000", addrs: []string{"[::1]:7000"}},
		{in: " redis://a:1 ", addrs: []string{"a:1"}},
		// A list is a cluster.
		{in: "a:7000,b:7001,c:7002", addrs: []string{"a:7000", "b:7001", "c:7002"}},
		{in: "redis://u:pw@a:7000,b:7001, c:7002", addrs: []string{"a:7000", "b:7001", "c:7002"}, user: "u", pass: "pw"},
		{in: "a:7000,redis://u:pw@b:7001", addrs: []string{"a:7000", "b:7001"}, user: "u", pass: "pw"},
		{in: "rediss://:pw@a.example:7000,rediss://b.example:7001", addrs: []string{"a.example:7000", "b.example:7001"}, pass: "pw", tls: true},
		{in: "redis://u:pw@a:7000,redis://u:pw@b:7001", addrs: []string{"a:7000", "b:7001"}, user: "u", pass: "pw"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			o, err := ParseURL(tt.in)
			if err != nil {
				t.Fatalf("ParseURL: %v", err)
			}
			if !slices.Equal(o.Addrs, tt.addrs) || o.DB != tt.db || o.Username != tt.user || o.Password != tt.pass {
				t.Errorf("got addrs %v db %d user %q pass %q; want %v %d %q %q", o.Addrs, o.DB, o.Username, o.Password, tt.addrs, tt.db, tt.user, tt.pass)
			}
			if (o.TLSConfig != nil) != tt.tls {
				t.Fatalf("TLS = %v, want %v", o.TLSConfig != nil, tt.tls)
			}
			if tt.tls && (o.TLSConfig.ServerName != tt.serverName || o.TLSConfig.MinVersion != tls.VersionTLS12) {
				t.Errorf("TLS server name %q min version %x; want %q, TLS 1.2", o.TLSConfig.ServerName, o.TLSConfig.MinVersion, tt.serverName)
			}
			if !o.ContextTimeoutEnabled {
				t.Error("a context deadline does not bound calls")
			}
		})
	}
}

func TestParseURLOptions(t *testing.T) {
	o, err := ParseURL("redis://h:1/3?dial_timeout=2s&pool_size=4&max_retries=5")
	if err != nil {
		t.Fatal(err)
	}
	if o.DialTimeout != 2*time.Second || o.PoolSize != 4 || o.MaxRetries != 5 || o.DB != 3 {
		t.Errorf("options = dial %v pool %d retries %d db %d", o.DialTimeout, o.PoolSize, o.MaxRetries, o.DB)
	}
}

func TestParseURLRejects(t *testing.T) {
	const secret = "hunter2"
	tests := []struct{ in, err string }{
		{"", "node 1 of 1 is empty"},
		{"a:1,,b:2", "node 2 of 3 is empty"},
		{"http://" + secret + "@h", `scheme "http"`},
		{"redis://u:" + secret + "@h:port", "not a URL"},
		{"redis://u:" + secret + "@h:1/x", "invalid database number"},
		{"redis://u:" + secret + "@h:1/1/2", "invalid URL path"},
		{"redis://u:" + secret + "@h:1?bogus=1", "unexpected option"},
		{"h:0", "not a number from 1 to 65535"},
		{"h:x", "not a number"},
		{":7000", "no host"},
		{"a:b:c", "want host:port"},
		{"redis://a:1/2,b:2", "database 2: a Redis Cluster has database 0 only"},
		{"redis://a:1,rediss://b:2", "scheme rediss:// differs"},
		{"redis://u:" + secret + "@a:1,redis://u:other@b:2", "credentials differ"},
		{"redis://a:1,redis://b:2?pool_size=3", "options go on the first node"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseURL(tt.in)
			if err == nil {
				t.Fatalf("ParseURL(%q) succeeded", tt.in)
			}
			if !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %q, want it to contain %q", err, tt.err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "",
		"redis://localhost:6379/1":            "redis://localhost:6379/1",
		"redis://:hunter2@cache:6380/2":       "redis://:xxxxx@cache:6380/2",
		"rediss://app:hunter2@cache:6380":     "rediss://app:xxxxx@cache:6380",
		"redis://app:hunter2@a:1, b:2,c:3":    "redis://app:xxxxx@a:1,b:2,c:3",
		"redis://u:hunter2@h:port":            "(unreadable URL)",
		"a:1,rediss://:hunter2@b:2?x=1":       "a:1,rediss://:xxxxx@b:2?x=1",
		"redis://user@h:1":                    "redis://user@h:1",
		"redis://u:hunter2@h:1,redis://u:x@g": "redis://u:xxxxx@h:1,redis://u:xxxxx@g",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
