package main

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// envMap returns an environment lookup over m, as os.Getenv would answer.
func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseConfig(t *testing.T) {
	defaults := config{addr: defaultAddr, logLevel: slog.LevelInfo, logFormat: "text", protoMaxBulkLen: 512 << 20, flushInterval: 250 * time.Millisecond,
		shutdownFlushTimeout: 5 * time.Second, maxClients: 10000, protectedMode: true, slowlogSlowerThan: 10000, slowlogMaxLen: 128, eventLoops: 1,
		backingMode: modeWriteBehind, sharedFallback: fallbackLocal, sharedTimeout: 250 * time.Millisecond, sharedDenyCache: true}
	with := func(f func(*config)) config {
		c := defaults
		f(&c)
		return c
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want config
	}{
		{name: "defaults", want: defaults},
		{name: "addr flag", args: []string{"--addr", ":7000"}, want: with(func(c *config) { c.addr = ":7000" })},
		{name: "addr flag with =", args: []string{"-addr=127.0.0.1:0"}, want: with(func(c *config) { c.addr = "127.0.0.1:0" })},
		{name: "addr env", env: map[string]string{"CELLSERVER_ADDR": "0.0.0.0:6380"}, want: with(func(c *config) { c.addr = "0.0.0.0:6380" })},
		{name: "ipv6 addr", args: []string{"--addr", "[::1]:6379"}, want: with(func(c *config) { c.addr = "[::1]:6379" })},
		{name: "flag beats env", args: []string{"--addr", ":1"}, env: map[string]string{"CELLSERVER_ADDR": ":2"}, want: with(func(c *config) { c.addr = ":1" })},
		{name: "empty env is unset", env: map[string]string{"CELLSERVER_ADDR": "", "CELLSERVER_SHARDS": ""}, want: defaults},
		{name: "shards flag", args: []string{"--shards", "16"}, want: with(func(c *config) { c.shards = 16 })},
		{name: "timeout at its bound", args: []string{"--timeout", "2147483647"}, want: with(func(c *config) { c.timeout = 2147483647 })},
		{name: "shards env", env: map[string]string{"CELLSERVER_SHARDS": "3"}, want: with(func(c *config) { c.shards = 3 })},
		{name: "shards zero", args: []string{"--shards=0"}, want: defaults},
		{name: "shards flag beats bad env", args: []string{"--shards=8"}, env: map[string]string{"CELLSERVER_SHARDS": "many"}, want: with(func(c *config) { c.shards = 8 })},
		{name: "log level flag", args: []string{"--log-level", "debug"}, want: with(func(c *config) { c.logLevel = slog.LevelDebug })},
		{name: "log level env upper case", env: map[string]string{"CELLSERVER_LOG_LEVEL": "WARN"}, want: with(func(c *config) { c.logLevel = slog.LevelWarn })},
		{name: "log level error", args: []string{"--log-level=error"}, want: with(func(c *config) { c.logLevel = slog.LevelError })},
		{name: "log format json", args: []string{"--log-format", "json"}, want: with(func(c *config) { c.logFormat = "json" })},
		{name: "log format env", env: map[string]string{"CELLSERVER_LOG_FORMAT": "json"}, want: with(func(c *config) { c.logFormat = "json" })},
		{name: "bulk len bytes", args: []string{"--proto-max-bulk-len", "1048576"}, want: with(func(c *config) { c.protoMaxBulkLen = 1 << 20 })},
		{name: "bulk len mb", args: []string{"--proto-max-bulk-len", "64mb"}, want: with(func(c *config) { c.protoMaxBulkLen = 64 << 20 })},
		{name: "bulk len env GB", env: map[string]string{"CELLSERVER_PROTO_MAX_BULK_LEN": "1GB"}, want: with(func(c *config) { c.protoMaxBulkLen = 1 << 30 })},
		{name: "bulk len m is decimal", args: []string{"--proto-max-bulk-len=2m"}, want: with(func(c *config) { c.protoMaxBulkLen = 2_000_000 })},
		{name: "version", args: []string{"--version"}, want: with(func(c *config) { c.showVersion = true })},
		{name: "version ignores bad env", args: []string{"--version"}, env: map[string]string{"CELLSERVER_SHARDS": "x"}, want: with(func(c *config) { c.showVersion = true })},
		{name: "backing redis", args: []string{"--backing-redis", "redis://:pw@cache:6380/1"}, want: with(func(c *config) { c.backingRedis = "redis://:pw@cache:6380/1" })},
		{name: "backing cluster env", env: map[string]string{"CELLSERVER_BACKING_REDIS": "a:7000,b:7001"}, want: with(func(c *config) { c.backingRedis = "a:7000,b:7001" })},
		{name: "backing prefix", args: []string{"--backing-redis=h:1", "--backing-prefix", "cell:"}, want: with(func(c *config) { c.backingRedis, c.backingPrefix = "h:1", "cell:" })},
		{name: "backing prefix env", env: map[string]string{"CELLSERVER_BACKING_PREFIX": "rl:"}, want: with(func(c *config) { c.backingPrefix = "rl:" })},
		{name: "flush interval", args: []string{"--flush-interval", "1s"}, want: with(func(c *config) { c.flushInterval = time.Second })},
		{name: "flush interval env", env: map[string]string{"CELLSERVER_FLUSH_INTERVAL": "50ms"}, want: with(func(c *config) { c.flushInterval = 50 * time.Millisecond })},
		{name: "backing required alone", args: []string{"--backing-redis=h:1", "--backing-required"}, want: with(func(c *config) { c.backingRedis, c.backingRequired = "h:1", true })},
		{name: "backing required env", env: map[string]string{"CELLSERVER_BACKING_REDIS": "h:1", "CELLSERVER_BACKING_REQUIRED": "true"}, want: with(func(c *config) { c.backingRedis, c.backingRequired = "h:1", true })},
		{name: "backing required flag beats env", args: []string{"--backing-required=false"}, env: map[string]string{"CELLSERVER_BACKING_REQUIRED": "1"}, want: defaults},
		{name: "all env", env: map[string]string{
			"CELLSERVER_ADDR": "127.0.0.1:7001", "CELLSERVER_SHARDS": "64", "CELLSERVER_LOG_LEVEL": "error",
			"CELLSERVER_LOG_FORMAT": "json", "CELLSERVER_PROTO_MAX_BULK_LEN": "2mb",
			"CELLSERVER_BACKING_REDIS": "rediss://u:p@h:1", "CELLSERVER_BACKING_PREFIX": "p:",
			"CELLSERVER_FLUSH_INTERVAL": "2s", "CELLSERVER_BACKING_REQUIRED": "true",
			"CELLSERVER_REQUIREPASS": "pw", "CELLSERVER_USERS_FILE": "/u", "CELLSERVER_TLS_CERT_FILE": "/c",
			"CELLSERVER_TLS_KEY_FILE": "/k", "CELLSERVER_TLS_CA_CERT_FILE": "/ca", "CELLSERVER_PROTECTED_MODE": "no",
			"CELLSERVER_TIMEOUT": "30", "CELLSERVER_MAXMEMORY": "100mb", "CELLSERVER_SLOWLOG_LOG_SLOWER_THAN": "-1",
			"CELLSERVER_SLOWLOG_MAX_LEN": "5", "CELLSERVER_METRICS_ADDR": ":9121", "CELLSERVER_EVENT_LOOPS": "2",
			"CELLSERVER_SHUTDOWN_FLUSH_TIMEOUT": "3s", "CELLSERVER_MAXCLIENTS": "500",
		}, want: config{addr: "127.0.0.1:7001", shards: 64, logLevel: slog.LevelError, logFormat: "json", protoMaxBulkLen: 2 << 20,
			backingRedis: "rediss://u:p@h:1", backingPrefix: "p:", flushInterval: 2 * time.Second, backingRequired: true,
			requirepass: "pw", usersFile: "/u", tlsCertFile: "/c", tlsKeyFile: "/k", tlsCAFile: "/ca",
			timeout: 30, maxmemory: 100 << 20, slowlogSlowerThan: -1, slowlogMaxLen: 5, metricsAddr: ":9121", eventLoops: 2,
			backingMode: modeWriteBehind, sharedFallback: fallbackLocal, sharedTimeout: 250 * time.Millisecond, sharedDenyCache: true,
			shutdownFlushTimeout: 3 * time.Second, maxClients: 500}},
		{name: "shared mode", args: []string{"--backing-redis", "redis://h:1", "--backing-mode", "SHARED", "--shared-fallback", "error",
			"--shared-timeout", "1s", "--shared-deny-cache=false"}, want: with(func(c *config) {
			c.backingRedis, c.backingMode, c.sharedFallback, c.sharedTimeout, c.sharedDenyCache = "redis://h:1", modeShared, fallbackError, time.Second, false
		})},
		{name: "shared mode env", env: map[string]string{"CELLSERVER_BACKING_REDIS": "redis://h:1", "CELLSERVER_BACKING_MODE": "shared",
			"CELLSERVER_SHARED_FALLBACK": "local", "CELLSERVER_SHARED_TIMEOUT": "100ms", "CELLSERVER_SHARED_DENY_CACHE": "false"},
			want: with(func(c *config) {
				c.backingRedis, c.backingMode, c.sharedTimeout, c.sharedDenyCache = "redis://h:1", modeShared, 100*time.Millisecond, false
			})},
		{name: "no event loops", args: []string{"--event-loops", "0"}, want: with(func(c *config) { c.eventLoops = 0 })},
		{name: "protected mode flag", args: []string{"--protected-mode", "no"}, want: with(func(c *config) { c.protectedMode = false })},
		{name: "maxmemory zero", args: []string{"--maxmemory", "0"}, want: defaults},
		{name: "maxmemory small", args: []string{"--maxmemory", "1kb"}, want: with(func(c *config) { c.maxmemory = 1024 })},
		{name: "shutdown flush timeout", args: []string{"--shutdown-flush-timeout", "30s"}, want: with(func(c *config) { c.shutdownFlushTimeout = 30 * time.Second })},
		{name: "maxclients", args: []string{"--maxclients", "20"}, want: with(func(c *config) { c.maxClients = 20 })},
		{name: "maxclients env", env: map[string]string{"CELLSERVER_MAXCLIENTS": "1"}, want: with(func(c *config) { c.maxClients = 1 })},
		{name: "ping", args: []string{"ping"}, want: with(func(c *config) { c.command = commandPing })},
		{name: "ping then flags", args: []string{"ping", "--addr", ":7000", "--requirepass", "pw"}, env: map[string]string{"CELLSERVER_ADDR": ":1"},
			want: with(func(c *config) { c.command, c.addr, c.requirepass = commandPing, ":7000", "pw" })},
		{name: "flags then ping", args: []string{"--addr", ":7000", "ping", "--tls-cert-file", "/c", "--tls-key-file", "/k"},
			want: with(func(c *config) { c.command, c.addr, c.tlsCertFile, c.tlsKeyFile = commandPing, ":7000", "/c", "/k" })},
		{name: "ping env", args: []string{"ping"}, env: map[string]string{"CELLSERVER_ADDR": ":7000"},
			want: with(func(c *config) { c.command, c.addr = commandPing, ":7000" })},
		{name: "slowlog every command", args: []string{"--slowlog-log-slower-than", "0"}, want: with(func(c *config) { c.slowlogSlowerThan = 0 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseConfig(tt.args, envMap(tt.env), &stderr)
			if err != nil {
				t.Fatalf("parseConfig: %v; stderr:\n%s", err, stderr.String())
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if stderr.Len() != 0 {
				t.Errorf("unexpected stderr: %q", stderr.String())
			}
		})
	}
}

func TestParseConfigRejects(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		stderr string // a part of what stderr must say
	}{
		{name: "unknown flag", args: []string{"--port", "1"}, stderr: "flag provided but not defined: -port"},
		{name: "positional argument", args: []string{"serve"}, stderr: `unexpected argument "serve"`},
		{name: "addr without port", args: []string{"--addr", "localhost"}, stderr: `invalid value "localhost" for flag -addr: want host:port`},
		{name: "addr bad port", args: []string{"--addr", ":http"}, stderr: `port "http" is not a number`},
		{name: "addr port too big", args: []string{"--addr", ":65536"}, stderr: `port "65536"`},
		{name: "shards negative", args: []string{"--shards", "-1"}, stderr: "want a whole number from 0 to 65536"},
		{name: "shards too many", args: []string{"--shards", "65537"}, stderr: "want a whole number from 0 to 65536"},
		{name: "log level", args: []string{"--log-level", "verbose"}, stderr: "want debug, info, warn or error"},
		{name: "log format", args: []string{"--log-format", "xml"}, stderr: "want text or json"},
		{name: "bulk len word", args: []string{"--proto-max-bulk-len", "big"}, stderr: "want a size in bytes"},
		{name: "bulk len too small", args: []string{"--proto-max-bulk-len", "1kb"}, stderr: "below the minimum of 1mb"},
		{name: "bulk len overflow", args: []string{"--proto-max-bulk-len", "9223372036854775807gb"}, stderr: "want a size in bytes"},
		{name: "missing flag value", args: []string{"--addr"}, stderr: "flag needs an argument: -addr"},
		{name: "env addr", env: map[string]string{"CELLSERVER_ADDR": "nowhere"},
			stderr: `cellserver: invalid value "nowhere" for environment variable CELLSERVER_ADDR: want host:port`},
		{name: "env shards", env: map[string]string{"CELLSERVER_SHARDS": "lots"},
			stderr: `cellserver: invalid value "lots" for environment variable CELLSERVER_SHARDS: want a whole number`},
		{name: "env log level", env: map[string]string{"CELLSERVER_LOG_LEVEL": "trace"},
			stderr: `invalid value "trace" for environment variable CELLSERVER_LOG_LEVEL`},
		{name: "env log format", env: map[string]string{"CELLSERVER_LOG_FORMAT": "yaml"},
			stderr: `invalid value "yaml" for environment variable CELLSERVER_LOG_FORMAT: want text or json`},
		{name: "env bulk len", env: map[string]string{"CELLSERVER_PROTO_MAX_BULK_LEN": "-5"},
			stderr: `invalid value "-5" for environment variable CELLSERVER_PROTO_MAX_BULK_LEN`},
		{name: "shared without a store", args: []string{"--backing-mode", "shared"}, stderr: "--backing-mode shared needs a store"},
		{name: "backing mode word", args: []string{"--backing-mode", "cluster"}, stderr: "want write-behind or shared"},
		{name: "shared fallback word", args: []string{"--shared-fallback", "open"}, stderr: "want local or error"},
		{name: "shared timeout zero", args: []string{"--shared-timeout", "0s"}, stderr: "want a positive duration"},
		{name: "bad env even with other flags", args: []string{"--addr", ":1"}, env: map[string]string{"CELLSERVER_SHARDS": "1.5"},
			stderr: "CELLSERVER_SHARDS"},
		{name: "flush interval zero", args: []string{"--flush-interval", "0s"}, stderr: "want a positive duration"},
		{name: "flush interval negative", args: []string{"--flush-interval=-1s"}, stderr: "want a positive duration"},
		{name: "flush interval no unit", env: map[string]string{"CELLSERVER_FLUSH_INTERVAL": "250"}, stderr: `invalid value "250" for environment variable CELLSERVER_FLUSH_INTERVAL: want a positive duration`},
		{name: "backing required without redis", args: []string{"--backing-required"}, stderr: "--backing-required needs a backing Redis"},
		{name: "backing required env bad", env: map[string]string{"CELLSERVER_BACKING_REDIS": "h:1", "CELLSERVER_BACKING_REQUIRED": "yes"}, stderr: "CELLSERVER_BACKING_REQUIRED: want true or false"},
		{name: "backing redis scheme", args: []string{"--backing-redis", "http://h"}, stderr: `cellserver: invalid --backing-redis (CELLSERVER_BACKING_REDIS): node 1: scheme "http"`},
		{name: "tls cert without key", args: []string{"--tls-cert-file", "/c"}, stderr: "TLS needs both --tls-cert-file and --tls-key-file"},
		{name: "tls ca alone", env: map[string]string{"CELLSERVER_TLS_CA_CERT_FILE": "/ca"}, stderr: "TLS needs both"},
		{name: "protected mode word", args: []string{"--protected-mode", "maybe"}, stderr: "want yes or no"},
		{name: "timeout negative", args: []string{"--timeout", "-1"}, stderr: "want a whole number from 0"},
		// Redis's bound, INT_MAX seconds: 18446744074 s overflowed a
		// time.Duration to about 0.29 s, past 9.2e9 s to a negative one.
		{name: "timeout past int", args: []string{"--timeout", "2147483648"}, stderr: "want a whole number from 0 to 2147483647"},
		{name: "timeout overflowing", args: []string{"--timeout", "18446744074"}, stderr: "want a whole number from 0 to 2147483647"},
		{name: "timeout env overflowing", env: map[string]string{"CELLSERVER_TIMEOUT": "9300000000"}, stderr: "want a whole number from 0 to 2147483647"},
		{name: "maxmemory word", args: []string{"--maxmemory", "lots"}, stderr: "want a size in bytes"},
		{name: "slowlog max len negative", env: map[string]string{"CELLSERVER_SLOWLOG_MAX_LEN": "-1"}, stderr: "CELLSERVER_SLOWLOG_MAX_LEN: want a whole number from 0"},
		{name: "maxclients zero", args: []string{"--maxclients", "0"}, stderr: "want a whole number from 1"},
		{name: "maxclients env word", env: map[string]string{"CELLSERVER_MAXCLIENTS": "many"}, stderr: "CELLSERVER_MAXCLIENTS: want a whole number from 1"},
		{name: "shutdown flush timeout zero", args: []string{"--shutdown-flush-timeout", "0s"}, stderr: "want a positive duration"},
		{name: "ping twice", args: []string{"ping", "ping"}, stderr: `unexpected argument "ping"`},
		{name: "ping with an argument", args: []string{"ping", "--addr", ":1", "now"}, stderr: `unexpected argument "now"`},
		{name: "metrics addr", args: []string{"--metrics-addr", "nowhere"}, stderr: "invalid --metrics-addr"},
		{name: "backing redis env cluster db", env: map[string]string{"CELLSERVER_BACKING_REDIS": "redis://a:1/3,b:2"}, stderr: "a Redis Cluster has database 0 only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseConfig(tt.args, envMap(tt.env), &stderr)
			if !errors.Is(err, errUsage) {
				t.Fatalf("err = %v, want errUsage", err)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}

func TestParseConfigHelp(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseConfig([]string{"-h"}, envMap(nil), &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"Usage: cellserver", "-addr", "CELLSERVER_ADDR", "CELLSERVER_PROTO_MAX_BULK_LEN", "-version"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"536870912", 512 << 20, true},
		{"512mb", 512 << 20, true},
		{"512MB", 512 << 20, true},
		{"512Mb", 512 << 20, true},
		{"1kb", 1024, true},
		{"1k", 1000, true},
		{"3m", 3_000_000, true},
		{"2gb", 2 << 30, true},
		{"2g", 2_000_000_000, true},
		{"100b", 100, true},
		{"9223372036854775807", 1<<63 - 1, true},
		{"8589934591gb", 8589934591 << 30, true},
		{"8589934592gb", 0, false}, // overflows int64
		{"", 0, false},
		{"mb", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5mb", 0, false},
		{" 1mb", 0, false},
		{"1 mb", 0, false},
		{"1tb", 0, false},
		{"9223372036854775808", 0, false},
	}
	for _, tt := range tests {
		got, err := parseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestParseConfigHidesPassword: a backing Redis URL that cannot be used is
// refused without printing its password.
func TestParseConfigHidesPassword(t *testing.T) {
	for _, url := range []string{"redis://u:hunter2@h:port", "redis://u:hunter2@h:1/x", "redis://u:hunter2@h:1?bad=1", "redis://u:hunter2@a:1/2,b:1"} {
		for _, args := range [][]string{{"--backing-redis", url}, nil} {
			var stderr bytes.Buffer
			_, err := parseConfig(args, envMap(map[string]string{"CELLSERVER_BACKING_REDIS": url}), &stderr)
			if !errors.Is(err, errUsage) {
				t.Errorf("%q: err = %v, want errUsage", url, err)
			}
			if strings.Contains(stderr.String(), "hunter2") || !strings.Contains(stderr.String(), "invalid --backing-redis") {
				t.Errorf("%q: stderr = %q", url, stderr.String())
			}
		}
	}
}
