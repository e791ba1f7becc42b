package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellserver/cellserver/persist/redistest"
)

// rlsCall asks the rate limit service at addr about one descriptor.
func rlsCall(t *testing.T, addr string, creds credentials.TransportCredentials) (*rlsv3.RateLimitResponse, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d",
		Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}})
}

// TestRunRLS: --rls-addr serves the rate limit service over gRPC, /json and
// its metrics on the metrics address, and stops with the server.
func TestRunRLS(t *testing.T) {
	rlsAddr, metricsAddr := freeAddr(t), freeAddr(t)
	r := startRun(t, []string{"--addr", "127.0.0.1:0", "--metrics-addr", metricsAddr}, map[string]string{"CELLSERVER_RLS_ADDR": rlsAddr})
	resp, err := rlsCall(t, rlsAddr, insecure.NewCredentials())
	if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("ShouldRateLimit: %v %v", resp, err)
	}
	post, err := http.Post("http://"+metricsAddr+"/json", "application/json",
		strings.NewReader(`{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(post.Body)
	post.Body.Close()
	if post.StatusCode != 200 || !strings.Contains(string(body), `"overallCode":"OK"`) {
		t.Errorf("/json: %d %s", post.StatusCode, body)
	}
	if code, metrics := httpGet(t, "http://"+metricsAddr+"/metrics"); code != 200 ||
		!strings.Contains(metrics, `cellserver_rls_requests_total{outcome="ok"} 2`) {
		t.Errorf("/metrics: %d, no cellserver_rls_requests_total of 2:\n%s", code, metrics)
	}
	if code := r.stop(t); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderr.String())
	}
	if _, err := rlsCall(t, rlsAddr, insecure.NewCredentials()); err == nil {
		t.Error("the rate limit service still answers after shutdown")
	}
}

// TestRunRLSTLS: the rate limit service speaks TLS with the server's TLS
// flags.
func TestRunRLSTLS(t *testing.T) {
	cert, key := writeCert(t, t.TempDir())
	rlsAddr := freeAddr(t)
	startRun(t, []string{"--addr", "127.0.0.1:0", "--rls-addr", rlsAddr, "--tls-cert-file", cert, "--tls-key-file", key}, nil)
	pemBytes, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	if resp, err := rlsCall(t, rlsAddr, credentials.NewTLS(&tls.Config{RootCAs: pool})); err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("over TLS: %v %v", resp, err)
	}
	if _, err := rlsCall(t, rlsAddr, insecure.NewCredentials()); err == nil {
		t.Error("plaintext accepted on the TLS port")
	}
}

// TestRLSFlags: --rls-config needs --rls-addr, and --rls-addr a port.
func TestRLSFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--rls-config", "limits.yaml"},
		{"--rls-addr", "nowhere"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, envMap(nil), io.Discard, &stderr, nil); code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", args, code, exitUsage, stderr.String())
		}
	}
}

// TestRunRLSConfigReload: --rls-config's limits decide, a changed file
// applies to the next requests with the state of unchanged keys kept, a bad
// file keeps the old limits, and the RLS key reads with the Redis commands;
// the same in shared mode on a real Redis.
func TestRunRLSConfigReload(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "shared"}[shared], func(t *testing.T) {
			dir := t.TempDir()
			path := dir + "/d.yaml"
			write := func(s string) {
				t.Helper()
				if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			limit := func(n int) string {
				return "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: hour\n      requests_per_unit: " +
					strconv.Itoa(n) + "\n"
			}
			write(limit(2))
			rlsAddr := freeAddr(t)
			args := []string{"--addr", "127.0.0.1:0", "--rls-addr", rlsAddr, "--rls-config", path}
			if shared {
				args = append(args, sharedArgs(redistest.Start(t).URL())[2:]...)
			}
			r := startRun(t, args, nil)
			codes := func(n int) string {
				var s []string
				for range n {
					resp, err := rlsCall(t, rlsAddr, insecure.NewCredentials())
					if err != nil {
						t.Fatal(err)
					}
					s = append(s, resp.OverallCode.String())
				}
				return strings.Join(s, " ")
			}
			if got := codes(3); got != "OK OK OVER_LIMIT" {
				t.Fatalf("limit 2: %s", got)
			}
			rdb := newClient(t, r.addr)
			keys, err := rdb.Keys(context.Background(), "rls:*").Result()
			if err != nil || len(keys) != 1 {
				t.Fatalf("KEYS rls:* = %q, %v", keys, err)
			}
			// Bigger limit, same key: the 2 hits are kept, so 2 more pass.
			write(limit(4) + "\n") // another size: the poll sees the change
			deadline := time.Now().Add(5 * time.Second)
			for codes(1) == "OVER_LIMIT" {
				if time.Now().After(deadline) {
					t.Fatal("the new limit did not apply within 5 s")
				}
				time.Sleep(100 * time.Millisecond)
			}
			if got := codes(2); got != "OK OVER_LIMIT" {
				t.Errorf("limit 4 after 3 hits: %s, want OK then OVER_LIMIT", got)
			}
			// A bad file is refused and logged; the old limits still answer.
			write("domain: d\ndescriptors: [[[\n")
			deadline = time.Now().Add(5 * time.Second)
			for !strings.Contains(r.stderr.String(), "rate limit configuration not loaded") {
				if time.Now().After(deadline) {
					t.Fatalf("the bad file was not refused within 5 s:\n%s", r.stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if log := r.stderr.String(); !strings.Contains(log, "error loading config file") {
				t.Errorf("the refusal does not say what is wrong with the file:\n%s", log)
			}
			if got := codes(1); got != "OVER_LIMIT" {
				t.Errorf("after a bad file: %s, want the old limit's OVER_LIMIT", got)
			}
			if n, err := rdb.Del(context.Background(), keys[0]).Result(); err != nil || n != 1 {
				t.Fatalf("DEL %s = %d, %v", keys[0], n, err)
			}
			if got := codes(1); got != "OK" {
				t.Errorf("after DEL of the RLS key: %s, want OK", got)
			}
		})
	}
}

// hourlyLimit is an RLS configuration of one limit: n requests an hour on
// descriptor k of domain d.
func hourlyLimit(n int) string {
	return "domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: " + strconv.Itoa(n) + " }\n"
}

// hourlyLimitFile writes hourlyLimit(n) to a file of the test's and
// returns its path.
func hourlyLimitFile(t *testing.T, n int) string {
	t.Helper()
	path := t.TempDir() + "/d.yaml"
	if err := os.WriteFile(path, []byte(hourlyLimit(n)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunRLSConfigSIGHUP: SIGHUP reloads the configuration though the
// file's size and modification time are as they were, so no poll sees the
// change, and logs the reload.
func TestRunRLSConfigSIGHUP(t *testing.T) {
	path := hourlyLimitFile(t, 1)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	rlsAddr := freeAddr(t)
	r := startRun(t, []string{"--addr", "127.0.0.1:0", "--rls-addr", rlsAddr, "--rls-config", path}, nil)
	code := func() string {
		t.Helper()
		resp, err := rlsCall(t, rlsAddr, insecure.NewCredentials())
		if err != nil {
			t.Fatal(err)
		}
		return resp.OverallCode.String()
	}
	if got := code() + " " + code(); got != "OK OVER_LIMIT" {
		t.Fatalf("limit 1: %s", got)
	}
	// Limit 3 in a file of the same size with the same modification time.
	if err := os.WriteFile(path, []byte(hourlyLimit(3)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	loads := func() int { return strings.Count(r.stderr.String(), "rate limit configuration loaded") }
	before := loads()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for loads() == before {
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not reload within 5 s:\n%s", r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The one hit that passed is kept, so 2 more pass.
	if got := code() + " " + code() + " " + code(); got != "OK OK OVER_LIMIT" {
		t.Errorf("limit 3 after a hit: %s, want OK OK OVER_LIMIT", got)
	}
}

// TestRunRLSBlocks: requests_per_unit 0 answers OVER_LIMIT, as
// envoyproxy/ratelimit does, and counts nothing: no key is written.
func TestRunRLSBlocks(t *testing.T) {
	path := hourlyLimitFile(t, 0)
	rlsAddr := freeAddr(t)
	r := startRun(t, []string{"--addr", "127.0.0.1:0", "--rls-addr", rlsAddr, "--rls-config", path}, nil)
	for range 2 {
		resp, err := rlsCall(t, rlsAddr, insecure.NewCredentials())
		if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("requests_per_unit 0: %v %v, want OVER_LIMIT", resp, err)
		}
		if s := resp.Statuses[0]; s.CurrentLimit == nil || s.CurrentLimit.RequestsPerUnit != 0 || s.LimitRemaining != 0 {
			t.Errorf("status %v, want a current_limit of 0 and nothing remaining", s)
		}
	}
	if keys, err := newClient(t, r.addr).Keys(context.Background(), "rls:*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("KEYS rls:* = %q, %v; a blocking limit wrote state", keys, err)
	}
}

// TestRunRLSOverride: a descriptor's own limit (RateLimitDescriptor.limit)
// applies in place of the configured one, as envoyproxy/ratelimit applies
// it; with an unknown unit the configured limit applies, and an unknown
// domain limits nothing.
func TestRunRLSOverride(t *testing.T) {
	path := hourlyLimitFile(t, 100)
	rlsAddr := freeAddr(t)
	startRun(t, []string{"--addr", "127.0.0.1:0", "--rls-addr", rlsAddr, "--rls-config", path}, nil)
	conn, err := grpc.NewClient(rlsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := rlsv3.NewRateLimitServiceClient(conn)
	call := func(domain, value string, limit *ratelimitv3.RateLimitDescriptor_RateLimitOverride) *rlsv3.RateLimitResponse_DescriptorStatus {
		t.Helper()
		resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: domain,
			Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "k", Value: value}}, Limit: limit}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Statuses[0]
	}
	twoAMinute := &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
	var got []string
	for range 3 {
		s := call("d", "o", twoAMinute)
		got = append(got, s.Code.String())
		if s.CurrentLimit == nil || s.CurrentLimit.RequestsPerUnit != 2 || s.CurrentLimit.Unit != rlsv3.RateLimitResponse_RateLimit_MINUTE {
			t.Errorf("override's current_limit %v, want 2 a minute", s.CurrentLimit)
		}
	}
	if strings.Join(got, " ") != "OK OK OVER_LIMIT" {
		t.Errorf("override of 2 a minute: %v", got)
	}
	if s := call("d", "u", &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2}); s.CurrentLimit == nil || s.CurrentLimit.RequestsPerUnit != 100 || s.LimitRemaining != 99 {
		t.Errorf("override without a unit: %v, want the configured 100 an hour", s)
	}
	if s := call("elsewhere", "o", twoAMinute); s.Code != rlsv3.RateLimitResponse_OK || s.CurrentLimit != nil {
		t.Errorf("override in an unknown domain: %v, want OK without a limit", s)
	}
	if s := call("d", "z", &ratelimitv3.RateLimitDescriptor_RateLimitOverride{Unit: typev3.RateLimitUnit_HOUR}); s.Code != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Errorf("override of 0 an hour: %v, want OVER_LIMIT", s)
	}
}
