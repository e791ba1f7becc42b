package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// pingTimeout bounds the whole health check.
const pingTimeout = 3 * time.Second

// ping is `cellserver ping`: a health check that needs no shell or client
// in the image. It reads the server's own environment (CELLSERVER_ADDR,
// CELLSERVER_REQUIREPASS, CELLSERVER_TLS_*), connects over loopback when the
// server listens on every interface, authenticates if a password is set,
// sends PING and exits 0 on PONG, 1 otherwise.
func ping(args []string, env func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "cellserver ping: takes no arguments; it reads the CELLSERVER_* environment\n")
		return exitUsage
	}
	addr := env("CELLSERVER_ADDR")
	if addr == "" {
		addr = defaultAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "cellserver ping: CELLSERVER_ADDR %q: want host:port\n", addr)
		return exitUsage
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	target := net.JoinHostPort(host, port)

	conn, err := dialForPing(target, env)
	if err != nil {
		fmt.Fprintf(stderr, "cellserver ping: %v\n", err)
		return exitError
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(pingTimeout))
	rd := bufio.NewReader(conn)
	if pass := env("CELLSERVER_REQUIREPASS"); pass != "" {
		if reply, err := roundTrip(conn, rd, "AUTH", pass); err != nil || reply != "+OK" {
			fmt.Fprintf(stderr, "cellserver ping: AUTH failed: %s\n", describe(reply, err))
			return exitError
		}
	}
	reply, err := roundTrip(conn, rd, "PING")
	if err != nil || reply != "+PONG" {
		fmt.Fprintf(stderr, "cellserver ping: %s\n", describe(reply, err))
		return exitError
	}
	fmt.Fprintln(stdout, "PONG")
	return exitOK
}

// dialForPing connects to target, over TLS when the server speaks it. The
// check runs next to the server, so the server's certificate is not
// verified; when clients must present a certificate, the server's own is
// presented.
func dialForPing(target string, env func(string) string) (net.Conn, error) {
	d := &net.Dialer{Timeout: pingTimeout}
	certFile, keyFile := env("CELLSERVER_TLS_CERT_FILE"), env("CELLSERVER_TLS_KEY_FILE")
	if certFile == "" {
		return d.Dial("tcp", target)
	}
	cfg := &tls.Config{InsecureSkipVerify: true} // loopback health check of our own server
	if env("CELLSERVER_TLS_CA_CERT_FILE") != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the TLS certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return tls.DialWithDialer(d, "tcp", target, cfg)
}

// roundTrip sends one command and reads a one-line reply.
func roundTrip(w io.Writer, rd *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return "", err
	}
	line, err := rd.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// describe words a failed reply for the log.
func describe(reply string, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("unexpected reply %q", reply)
}
