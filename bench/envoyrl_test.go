package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/cellserver/cellserver/internal/testenv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEnvoyRatelimitEnv: envoyproxy/ratelimit gets its usual settings and
// nothing of bench's environment, and finds the RLS limit where they say.
func TestEnvoyRatelimitEnv(t *testing.T) {
	t.Setenv("REDIS_POOL_SIZE", "1") // the user's shell: not passed on
	got := envoyRatelimitEnv("/tmp/x", "127.0.0.1:6400", envoyRatelimitPorts{grpc: 1001, http: 1002, debug: 1003})
	want := []string{
		"USE_STATSD=false", "LOG_LEVEL=warn", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL=127.0.0.1:6400",
		"RUNTIME_ROOT=/tmp/x", "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false", "RUNTIME_IGNOREDOTFILES=true",
		"GRPC_HOST=127.0.0.1", "GRPC_PORT=1001", "HOST=127.0.0.1", "PORT=1002", "DEBUG_HOST=127.0.0.1", "DEBUG_PORT=1003",
	}
	if !slices.Equal(got, want) {
		t.Errorf("environment\n got %q\nwant %q", got, want)
	}

	root := t.TempDir()
	if err := writeEnvoyRatelimitConfig(root); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "ratelimit", "config", "bench.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"domain: bench\n", "- key: user\n", "unit: hour", "requests_per_unit: 1000000000"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("bench.yaml has no %q:\n%s", want, b)
		}
	}
}

// TestEnvoyRatelimitBinMustBeExecutable: a wrong ENVOY_RATELIMIT_BIN stops
// bench before it starts anything, as a missing tool does; unset, it is
// not needed.
func TestEnvoyRatelimitBinMustBeExecutable(t *testing.T) {
	fakePath(t, "go", "redis-server", "redis-benchmark")
	notExec := filepath.Join(t.TempDir(), "service_cmd")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"/nonexistent/service_cmd", t.TempDir(), notExec} {
		var stderr bytes.Buffer
		env := func(k string) string {
			if k == envEnvoyRatelimit {
				return bin
			}
			return ""
		}
		if code := run(context.Background(), nil, env, &bytes.Buffer{}, &stderr); code != exitMissing ||
			!strings.Contains(stderr.String(), "ENVOY_RATELIMIT_BIN="+bin+" is not an executable file") {
			t.Errorf("ENVOY_RATELIMIT_BIN=%s: exit %d, stderr %q", bin, code, stderr.String())
		}
	}
	if err := checkEnvoyRatelimitBin(""); err != nil {
		t.Errorf("unset: %v", err)
	}
	tl, err := findTools("redis-server", "", "")
	if err != nil || tl.envoyRatelimit != "" {
		t.Errorf("unset: tools %+v, %v", tl, err)
	}
}

// TestEnvoyRatelimitTests: with ENVOY_RATELIMIT_BIN, its test joins the RLS
// group and cellserver's RLS is compared with it; without, the report says
// how to add it.
func TestEnvoyRatelimitTests(t *testing.T) {
	var rls, envoy *benchTest
	tests := benchTests(scripts{}, optionalServers{envoyRatelimit: true})
	for i := range tests {
		switch tests[i].name {
		case testRLS:
			rls = &tests[i]
		case testRLSEnvoy:
			envoy = &tests[i]
		}
	}
	if rls == nil || envoy == nil {
		t.Fatalf("tests %v have no %s or %s", tests, testRLS, testRLSEnvoy)
	}
	if envoy.server != onEnvoyRatelimit || envoy.group != groupRLS || !envoy.grpc {
		t.Errorf("%s: %+v", testRLSEnvoy, *envoy)
	}
	if !slices.Equal(rls.versus, []string{testRLSRESP, testRLSEnvoy}) {
		t.Errorf("%s is compared with %v", testRLS, rls.versus)
	}
	if got, want := envoy.displayCommand(), "ShouldRateLimit {bench: user=__rand_int__} over gRPC; limit 1,000,000,000 per hour (its config file, counted in redis-server)"; got != want {
		t.Errorf("its command shows as %q, want %q", got, want)
	}
	for _, tc := range benchTests(scripts{}, optionalServers{}) {
		if tc.server == onEnvoyRatelimit {
			t.Errorf("%s without ENVOY_RATELIMIT_BIN", tc.name)
		}
	}

	// Its CPU per decision counts its redis-server's.
	o := defaultOptions()
	o.pipelines = []int{1}
	runs := map[runKey][]figures{
		{testRLS, 1}:      {{rps: 40000, cpu: 25}},
		{testRLSEnvoy, 1}: {{rps: 20000, cpu: 60, storeCPU: 40}},
	}
	rows := throughputRows(o, tests, runs)
	if len(rows) != 2 || len(rows[0].ratios) != 1 || rows[0].ratios[0].x != 2 || rows[0].ratios[0].cpu != 0.25 {
		t.Errorf("rows %+v, want RLS at 2× the rate and 0.25× the CPU of %s", rows, testRLSEnvoy)
	}

	rep := &report{opts: o, tests: []benchTest{*rls}, rows: rows[:1]}
	if out := rep.String(); !strings.Contains(out, "envoyproxy/ratelimit: not measured (set ENVOY_RATELIMIT_BIN to envoyproxy/ratelimit's service_cmd to add it).\n") {
		t.Errorf("without ENVOY_RATELIMIT_BIN the report says:\n%s", out)
	}
}

// TestQuickRunWithEnvoyRatelimit runs the RLS group with
// envoyproxy/ratelimit when ENVOY_RATELIMIT_BIN names it.
func TestQuickRunWithEnvoyRatelimit(t *testing.T) {
	bin := os.Getenv(envEnvoyRatelimit)
	if bin == "" {
		testenv.SkipOrFail(t, fmt.Sprintf("%s is not set: set it to envoyproxy/ratelimit's service_cmd (%s) to run this test", envEnvoyRatelimit, envoyRatelimitInstall))
	}
	needTool(t, "redis-server")
	needTool(t, "redis-benchmark")
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-skip-memory", "-only", "^RLS"}
	if code := run(context.Background(), args, os.Getenv, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	matchAll(t, out,
		`(?m)^ 1  RLS +cellserver +[0-9,]+ .*× RLS FW\.THROTTLE, [0-9.]+× RLS envoyproxy/ratelimit .*× RLS envoyproxy/ratelimit$`,
		`(?m)^ 1  RLS envoyproxy/ratelimit +envoyproxy/ratelimit +[0-9,]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$`,
		`(?m)^RLS envoyproxy/ratelimit: the reference RLS, `)
	if strings.Contains(out, "not run:") {
		t.Errorf("some tests did not run:\n%s", out)
	}
	checkNoChildren(t)
}
