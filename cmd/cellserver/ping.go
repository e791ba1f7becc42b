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
// in the image. cfg is read from the server's own flags and environment
// (--addr, --requirepass, --tls-*, or their CELLSERVER_* twins), so the
// check finds the server the same settings start. It connects over
// loopback when the server listens on every interface, authenticates if a
// password is set, sends PING and exits 0 on PONG, 1 otherwise.
func ping(cfg config, stdout, stderr io.Writer) int {
	host, port, err := net.SplitHostPort(cfg.addr)
	if err != nil { // parseConfig has checked it
		fmt.Fprintf(stderr, "cellserver ping: --addr %q: want host:port\n", cfg.addr)
		return exitUsage
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	target := net.JoinHostPort(host, port)

	conn, err := dialForPing(target, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "cellserver ping: %v\n", err)
		return exitError
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(pingTimeout))
	rd := bufio.NewReader(conn)
	if pass := cfg.requirepass; pass != "" {
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
func dialForPing(target string, cfg config) (net.Conn, error) {
	d := &net.Dialer{Timeout: pingTimeout}
	if cfg.tlsCertFile == "" {
		return d.Dial("tcp", target)
	}
	tc := &tls.Config{InsecureSkipVerify: true} // loopback health check of our own server
	if cfg.tlsCAFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.tlsCertFile, cfg.tlsKeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the TLS certificate: %v", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tls.DialWithDialer(d, "tcp", target, tc)
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
