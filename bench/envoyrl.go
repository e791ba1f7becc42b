package main

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// envoyproxy/ratelimit, the reference RLS (a Go service that keeps its
// counters in Redis), joins the RLS group when ENVOY_RATELIMIT_BIN names its
// binary (service_cmd): bench starts it on its own redis-server, with the
// same limit as cellserver's RLS, and drives it with the same client.
const (
	envEnvoyRatelimit = "ENVOY_RATELIMIT_BIN"
	onEnvoyRatelimit  = "envoyproxy/ratelimit"
	testRLSEnvoy      = "RLS envoyproxy/ratelimit"
	// envoyRatelimitInstall is how its binary is installed, for the
	// report's and the error's words.
	envoyRatelimitInstall = "go install github.com/envoyproxy/ratelimit/src/service_cmd@v1.4.1-0.20260122083618-3fb702589d36"
)

// envoyRatelimitPorts are the ports envoyproxy/ratelimit listens on.
type envoyRatelimitPorts struct{ grpc, http, debug int }

// envoyRatelimitEnv is its whole environment (nothing of bench's, so that
// the user's shell does not change what is measured): its usual settings
// for a Redis at redisAddr over TCP, no statsd, and the runtime (config)
// directory root/ratelimit/config, read once, on loopback ports.
func envoyRatelimitEnv(root, redisAddr string, ports envoyRatelimitPorts) []string {
	return []string{
		"USE_STATSD=false",
		"LOG_LEVEL=warn",
		"REDIS_SOCKET_TYPE=tcp",
		"REDIS_URL=" + redisAddr,
		"RUNTIME_ROOT=" + root,
		"RUNTIME_SUBDIRECTORY=ratelimit",
		"RUNTIME_WATCH_ROOT=false",
		"RUNTIME_IGNOREDOTFILES=true",
		"GRPC_HOST=127.0.0.1",
		"GRPC_PORT=" + strconv.Itoa(ports.grpc),
		"HOST=127.0.0.1",
		"PORT=" + strconv.Itoa(ports.http),
		"DEBUG_HOST=127.0.0.1",
		"DEBUG_PORT=" + strconv.Itoa(ports.debug),
	}
}

// writeEnvoyRatelimitConfig writes the RLS limit (rlsConfig: its format is
// envoyproxy/ratelimit's) where envoyRatelimitEnv(root, ...) has the
// service read it.
func writeEnvoyRatelimitConfig(root string) error {
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, rlsDomain+".yaml"), []byte(rlsConfig), 0o644)
}

// checkEnvoyRatelimitBin is the check of ENVOY_RATELIMIT_BIN's value: ""
// (not measured) or an executable file.
func checkEnvoyRatelimitBin(path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s=%s is not an executable file: set it to envoyproxy/ratelimit's service_cmd (%s) or unset it",
			envEnvoyRatelimit, path, envoyRatelimitInstall)
	}
	return nil
}

// startEnvoyRatelimit starts envoyproxy/ratelimit's binary bin on the Redis
// at redisAddr, its config under dir, and waits until its gRPC port accepts
// connections; p.addr is that port's address. The ports are found free a
// moment before, so a start that fails is tried again on others.
func (s *supervisor) startEnvoyRatelimit(ctx context.Context, bin, redisAddr, dir string) (*process, error) {
	root := filepath.Join(dir, "envoy-ratelimit")
	if err := writeEnvoyRatelimitConfig(root); err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 {
		var ports envoyRatelimitPorts
		for _, p := range []*int{&ports.grpc, &ports.http, &ports.debug} {
			var err error
			if *p, err = freePort(); err != nil {
				return nil, err
			}
		}
		p, err := s.start(onEnvoyRatelimit, bin, nil, envoyRatelimitEnv(root, redisAddr, ports), nil)
		if err != nil {
			return nil, err
		}
		p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.grpc))
		if lastErr = waitListen(ctx, p); lastErr == nil {
			return p, nil
		}
		s.stopOne(p)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, lastErr
}

// waitListen polls p.addr until it accepts a TCP connection, p exits, ctx
// ends or startTimeout passes.
func waitListen(ctx context.Context, p *process) error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		lastErr = err
		if p.exited() {
			return p.failure(errors.New("exited before it listened"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p.failure(fmt.Errorf("not listening at %s within %v: %v", p.addr, startTimeout, lastErr))
}

// moduleVersion is the main module and version bin was built from, with
// the Go that built it ("go install m@v" records them), or what
// binaryVersion says when it has no version.
func moduleVersion(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil || info.Main.Version == "" || info.Main.Version == "(devel)" {
		return binaryVersion(bin)
	}
	return info.Main.Path + " " + info.Main.Version + ", " + info.GoVersion
}
