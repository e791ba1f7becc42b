package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestRunProductionFlags: the security, bounds and metrics flags reach the
// server they configure.
func TestRunProductionFlags(t *testing.T) {
	metricsAddr := freeAddr(t)
	r := startRun(t, []string{"--addr", "127.0.0.1:0"}, map[string]string{
		"CELLSERVER_REQUIREPASS":             "s3cret",
		"CELLSERVER_METRICS_ADDR":            metricsAddr,
		"CELLSERVER_MAXMEMORY":               "64mb",
		"CELLSERVER_SLOWLOG_LOG_SLOWER_THAN": "0",
		"CELLSERVER_TIMEOUT":                 "60",
	})
	ctx := context.Background()

	anon := newClient(t, r.addr)
	if err := anon.Do(ctx, "CL.THROTTLE", "k", "15", "30", "60").Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
		t.Fatalf("without AUTH: %v, want NOAUTH", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.addr, Password: "s3cret", MaxRetries: -1})
	defer rdb.Close()
	if got, err := rdb.Do(ctx, "CL.THROTTLE", "k", "15", "30", "60").Int64Slice(); err != nil || got[2] != 15 {
		t.Fatalf("with AUTH: %v %v", got, err)
	}
	for name, want := range map[string]string{"maxmemory": "67108864", "slowlog-log-slower-than": "0",
		"timeout": "60", "requirepass": "", "protected-mode": "yes"} {
		got, err := rdb.ConfigGet(ctx, name).Result()
		if err != nil || got[name] != want {
			t.Errorf("CONFIG GET %s = %v %v, want %q", name, got, err, want)
		}
	}
	if n, err := rdb.Do(ctx, "SLOWLOG", "LEN").Int64(); err != nil || n == 0 {
		t.Errorf("SLOWLOG LEN = %d %v, want entries with a threshold of 0", n, err)
	}

	if code, body := httpGet(t, "http://"+metricsAddr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d %q, want 200", code, body)
	}
	_, body := httpGet(t, "http://"+metricsAddr+"/metrics")
	if !regexp.MustCompile(`(?m)^cellserver_commands_total\{command="cl.throttle",outcome="allowed"\} 1$`).MatchString(body) {
		t.Errorf("/metrics lacks one allowed cl.throttle:\n%s", grepLines(body, "cellserver_commands_total"))
	}
	if !regexp.MustCompile(`(?m)^cellserver_maxmemory_bytes 6.7108864e\+07$`).MatchString(body) {
		t.Errorf("/metrics lacks maxmemory:\n%s", grepLines(body, "maxmemory"))
	}
	if strings.Contains(r.stderr.String(), "s3cret") {
		t.Error("the log shows the password")
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPing: `cellserver ping` answers 0 against a live server (with its
// password, and on 0.0.0.0 through loopback) and 1 when nothing listens or
// the password is wrong. It takes the server's flags before or after the
// word ping, and their environment twins, a flag beating its twin.
func TestPing(t *testing.T) {
	r := startRun(t, []string{"--addr", "0.0.0.0:0"}, map[string]string{"CELLSERVER_REQUIREPASS": "pw"})
	_, port, _ := net.SplitHostPort(r.addr)
	live, elsewhere := "127.0.0.1:"+port, freeAddr(t)
	cases := []struct {
		name string
		args []string
		env  map[string]string
		code int
	}{
		{"live", []string{"ping"}, map[string]string{"CELLSERVER_ADDR": "0.0.0.0:" + port, "CELLSERVER_REQUIREPASS": "pw"}, exitOK},
		{"wrong password", []string{"ping"}, map[string]string{"CELLSERVER_ADDR": live, "CELLSERVER_REQUIREPASS": "no"}, exitError},
		{"no password", []string{"ping"}, map[string]string{"CELLSERVER_ADDR": live}, exitError},
		{"nothing listens", []string{"ping"}, map[string]string{"CELLSERVER_ADDR": elsewhere}, exitError},
		{"flags after ping", []string{"ping", "--addr", live, "--requirepass", "pw"}, nil, exitOK},
		{"flags before ping", []string{"--addr", live, "--requirepass", "pw", "ping"}, nil, exitOK},
		{"flags on both sides", []string{"--requirepass", "pw", "ping", "--addr", "0.0.0.0:" + port}, nil, exitOK},
		{"flag beats env after ping", []string{"ping", "--addr", live}, map[string]string{"CELLSERVER_ADDR": elsewhere, "CELLSERVER_REQUIREPASS": "pw"}, exitOK},
		{"flag beats env before ping", []string{"--requirepass", "pw", "ping"}, map[string]string{"CELLSERVER_ADDR": live, "CELLSERVER_REQUIREPASS": "no"}, exitOK},
		{"wrong password flag", []string{"ping", "--addr", live, "--requirepass", "no"}, nil, exitError},
		{"flag to where nothing listens", []string{"--addr", elsewhere, "ping"}, map[string]string{"CELLSERVER_ADDR": live, "CELLSERVER_REQUIREPASS": "pw"}, exitError},
		{"unknown flag", []string{"ping", "--port", port}, nil, exitUsage},
	}
	for _, c := range cases {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), c.args, envMap(c.env), &stdout, &stderr, nil); code != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %q", c.name, code, c.code, stderr.String())
		}
		if c.code == exitOK && stdout.String() != "PONG\n" {
			t.Errorf("%s: stdout %q", c.name, stdout.String())
		}
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns their paths.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cellserver test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestPingTLS: ping speaks TLS when given the server's TLS flags, in
// either order, and fails against a TLS port without them.
func TestPingTLS(t *testing.T) {
	cert, key := writeCert(t, t.TempDir())
	r := startRun(t, []string{"--addr", "127.0.0.1:0", "--tls-cert-file", cert, "--tls-key-file", key}, nil)
	tlsFlags := []string{"--tls-cert-file", cert, "--tls-key-file", key}
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"flags after ping", append([]string{"ping", "--addr", r.addr}, tlsFlags...), exitOK},
		{"flags before ping", append(append([]string{"--addr", r.addr}, tlsFlags...), "ping"), exitOK},
		{"without TLS", []string{"ping", "--addr", r.addr}, exitError},
	}
	for _, c := range cases {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), c.args, envMap(nil), &stdout, &stderr, nil); code != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %q", c.name, code, c.code, stderr.String())
		}
	}
}
