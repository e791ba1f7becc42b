package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
)

// testPKI is a CA with a server and a client certificate it signed, on
// disk as PEM files, and the client-side TLS configurations to use them.
type testPKI struct {
	caFile, certFile, keyFile string
	caPool                    *x509.CertPool
	client                    tls.Certificate // signed by the CA
	stranger                  tls.Certificate // self-signed
}

// newTestPKI generates the certificates (ECDSA P-256) in a temporary
// directory.
func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(0)
	sign := func(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, []byte) {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return cert, der
	}
	pair := func(der []byte, key *ecdsa.PrivateKey) tls.Certificate {
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	caKey := newKey()
	ca, caDER := sign(&x509.Certificate{
		Subject: pkix.Name{CommonName: "cellserver test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, caKey, nil, nil)

	serverKey := newKey()
	_, serverDER := sign(&x509.Certificate{
		Subject: pkix.Name{CommonName: "cellserver"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, serverKey, ca, caKey)

	clientKey := newKey()
	_, clientDER := sign(&x509.Certificate{
		Subject:  pkix.Name{CommonName: "app"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, clientKey, ca, caKey)

	strangerKey := newKey()
	_, strangerDER := sign(&x509.Certificate{
		Subject:  pkix.Name{CommonName: "stranger"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, strangerKey, nil, nil)

	serverKeyDER, err := x509.MarshalECPrivateKey(serverKey)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{
		caFile:   write("ca.pem", "CERTIFICATE", caDER),
		certFile: write("server.pem", "CERTIFICATE", serverDER),
		keyFile:  write("server-key.pem", "EC PRIVATE KEY", serverKeyDER),
		caPool:   x509.NewCertPool(),
		client:   pair(clientDER, clientKey),
		stranger: pair(strangerDER, strangerKey),
	}
	p.caPool.AddCert(ca)
	return p
}

// clientTLS is a client configuration that trusts the test CA and presents
// certs.
func (p *testPKI) clientTLS(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{RootCAs: p.caPool, Certificates: certs, MinVersion: tls.VersionTLS12}
}

// startTLS serves the real commands over TLS with the test PKI; with
// requireClientCert, clients must present a certificate the CA signed.
func startTLS(t *testing.T, p *testPKI, requireClientCert bool, cfg Config) *harness {
	t.Helper()
	caFile := ""
	if requireClientCert {
		caFile = p.caFile
	}
	tlsCfg, err := LoadTLS(p.certFile, p.keyFile, caFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = tlsCfg
	return startCommands(t, nil, cfg, commands.Options{})
}

// dialTLS connects a raw TLS client to h.
func (h *harness) dialTLS(cfg *tls.Config) *client {
	h.t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: testTimeout}, "tcp", h.addr, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return &client{t: h.t, Conn: c}
}

func TestLoadTLS(t *testing.T) {
	p := newTestPKI(t)
	cfg, err := LoadTLS(p.certFile, p.keyFile, "")
	if err != nil || cfg.MinVersion != tls.VersionTLS12 || cfg.ClientAuth != tls.NoClientCert || len(cfg.Certificates) != 1 {
		t.Fatalf("LoadTLS without CA = %+v, %v", cfg, err)
	}
	cfg, err = LoadTLS(p.certFile, p.keyFile, p.caFile)
	if err != nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.ClientCAs == nil {
		t.Fatalf("LoadTLS with CA = %+v, %v", cfg, err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, c := range []struct {
		name                string
		cert, key, ca, want string
	}{
		{"no key", p.certFile, "", "", "needs both a certificate file and a key file"},
		{"no cert", "", p.keyFile, "", "needs both"},
		{"key for cert", p.keyFile, p.certFile, "", "TLS certificate " + p.keyFile},
		{"missing cert", missing, p.keyFile, "", "missing.pem"},
		{"missing CA", p.certFile, p.keyFile, missing, "missing.pem"},
		{"CA not PEM", p.certFile, p.keyFile, p.keyFile, "no PEM certificate in " + p.keyFile},
	} {
		if _, err := LoadTLS(c.cert, c.key, c.ca); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestTLSThrottleWithGoRedis(t *testing.T) {
	ctx := context.Background()
	p := newTestPKI(t)
	for _, require := range []bool{false, true} {
		h := startTLS(t, p, require, Config{})
		rdb := h.goRedis("", "", p.clientTLS(p.client))
		got, err := rdb.Do(ctx, "CL.THROTTLE", "user123", "15", "30", "60").Int64Slice()
		if err != nil || len(got) != 5 || got[0] != 0 || got[1] != 16 || got[2] != 15 || got[3] != -1 {
			t.Fatalf("require client cert %v: CL.THROTTLE over TLS = %v, %v", require, got, err)
		}
	}
}

func TestTLSGuardSeesDecryptedBytes(t *testing.T) {
	p := newTestPKI(t)
	h := startTLS(t, p, true, Config{})
	c := h.dialTLS(p.clientTLS(p.client))
	c.send("PING\r\n" + cmd("ECHO", "a\r\nb") + "*1\r\n$-1\r\n")
	c.expect("+PONG\r\n$4\r\na\r\nb\r\n" + protoErr("invalid bulk length"))
	c.expectClosed()
}

func TestTLSClientCertificateRequired(t *testing.T) {
	ctx := context.Background()
	p := newTestPKI(t)
	h := startTLS(t, p, true, Config{})
	good := h.goRedis("", "", p.clientTLS(p.client))
	if err := good.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with a certificate: %v", err)
	}
	stranger := p.clientTLS()
	// Go's client offers only a certificate of a CA the server names;
	// this one insists.
	stranger.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &p.stranger, nil
	}
	for _, c := range []struct {
		name, want string
		cfg        *tls.Config
	}{
		{"no certificate", "certificate required", p.clientTLS()},
		{"certificate of another CA", "unknown certificate authority", stranger},
	} {
		// In TLS 1.3 the client finishes its handshake before the server
		// has checked its certificate: the refusal shows on first use.
		err := h.goRedis("", "", c.cfg).Ping(ctx).Err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: PING error %v, want %q", c.name, err, c.want)
		}
		h.logs.wait(t, "server: TLS handshake failed")
		if err := good.Ping(ctx).Err(); err != nil {
			t.Fatalf("after a refused client: %v", err)
		}
	}
	if n := h.srv.Stats().ConnectedClients; n != 1 {
		t.Errorf("%d clients connected, want 1", n)
	}
	if !strings.Contains(h.logs.String(), "DEBUG server: TLS handshake failed") {
		t.Errorf("handshake failures not logged at Debug:\n%s", h.logs)
	}
}

func TestTLSPlainClientFailsCleanly(t *testing.T) {
	p := newTestPKI(t)
	h := startTLS(t, p, false, Config{})
	tc := h.dialTLS(p.clientTLS())
	tc.send("PING\r\n")
	tc.expect("+PONG\r\n")

	plain := h.dial()
	plain.send("PING\r\n")
	if got := plain.drain(); strings.Contains(got, "PONG") {
		t.Fatalf("a plain client was answered %q", got)
	}
	h.logs.wait(t, "server: TLS handshake failed")

	tc.send("PING\r\n") // the TLS client never noticed
	tc.expect("+PONG\r\n")
	other := h.dialTLS(p.clientTLS())
	other.send("PING\r\n")
	other.expect("+PONG\r\n")
}

func TestTLSSilentClientHoldsNoOne(t *testing.T) {
	p := newTestPKI(t)
	h := startTLS(t, p, false, Config{TLSHandshakeTimeout: time.Hour})
	silent := h.dial() // never says hello
	tc := h.dialTLS(p.clientTLS())
	tc.send("PING\r\n")
	tc.expect("+PONG\r\n")
	if n := h.srv.Stats().ConnectedClients; n != 1 {
		t.Errorf("%d clients connected, want 1 (a handshake in progress is no client)", n)
	}
	// Close does not wait for the handshake: it closes the connection.
	done := make(chan struct{})
	go func() {
		h.srv.Close()
		close(done)
	}()
	silent.expectClosed()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("Close waited for a silent handshake")
	}
}

func TestTLSHandshakeTimeout(t *testing.T) {
	p := newTestPKI(t)
	h := startTLS(t, p, false, Config{TLSHandshakeTimeout: 100 * time.Millisecond})
	silent := h.dial()
	silent.expectClosed() // the server gave up on it
	h.logs.wait(t, "server: TLS handshake failed")
	if !strings.Contains(h.logs.String(), "timeout") {
		t.Errorf("log does not say the handshake timed out:\n%s", h.logs)
	}
	tc := h.dialTLS(p.clientTLS())
	tc.send("PING\r\n")
	tc.expect("+PONG\r\n")
}

func TestTLSMaxClients(t *testing.T) {
	p := newTestPKI(t)
	h := startTLS(t, p, false, Config{MaxClients: 1})
	first := h.dialTLS(p.clientTLS())
	first.send("PING\r\n")
	first.expect("+PONG\r\n")
	second := h.dialTLS(p.clientTLS())
	second.expect("-ERR max number of clients reached\r\n")
	second.expectClosed()
}
