// Command bench measures cellserver against Redis, side by side, on this
// machine: requests per second and latency under redis-benchmark, and the
// memory each key costs.
//
// Run it from the repository:
//
//	go run ./bench
//
// It builds cellserver into a temporary directory, starts it and a
// redis-server (both from scratch, on free loopback ports), loads into Redis
// the Lua scripts that teams use where they cannot load redis-cell (a GCRA
// and a ZSET sliding window), and runs redis-benchmark pair by pair, A B A B,
// for -rounds rounds at each -pipelines depth. A second cellserver, in
// shared mode on that Redis, runs CL.THROTTLE and SW.THROTTLE beside the
// scripts they replace; -baseline-bin adds another cellserver binary to
// compare with. The cellserver also serves Envoy's rate limit service
// (RLS, gRPC) when the RLS test is selected: bench's own client calls it
// (-clients streams over a few connections, -n calls, at -P 1 only: gRPC has
// no pipelining) beside the same limit through FW.THROTTLE over RESP.
// Around each run it reads the server's CPU time from
// /proc/PID/stat (and, in shared mode, the store's) for the CPU per request.
// It prints one table of medians over the rounds, each cellserver figure's
// ratios to its Redis counterparts, of requests/s and of CPU per request,
// then the bytes per
// key of each family, and the machine it ran on. When
// REDIS_CELL_MODULE names redis-cell's shared library, Redis loads it and
// Redis + redis-cell joins the table. When ENVOY_RATELIMIT_BIN names
// envoyproxy/ratelimit's binary (service_cmd, the reference RLS), bench
// starts it on the same redis-server, its backend, with the same limit, and
// RLS envoyproxy/ratelimit joins the RLS pair, called by the same client;
// its CPU per decision counts the redis-server's, where its state lives.
//
// redis-server and redis-benchmark come from PATH (Debian's redis-server and
// redis-tools packages); when one is missing bench says which package
// provides it and exits with status 2. Every process it starts is stopped
// before it exits, on SIGINT too.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1 // a server or a benchmark failed
	exitMissing = 2 // bad flags, or a program bench needs is not installed
)

// options are bench's flags.
type options struct {
	rounds     int
	requests   int            // -n: requests per redis-benchmark run
	clients    int            // -c
	pipelines  []int          // -P depths, each a column of runs
	keyspace   int            // -r: random keys per test
	keys       int            // memory: keys of each family
	swKeys     int            // memory: sliding-log keys, each holding swRequests requests
	skipMemory bool           // no memory phase
	only       *regexp.Regexp // tests to run, by name; nil for all
	// baselineBin is a second cellserver binary whose tests run beside the
	// current one's, "" for none.
	baselineBin string
	quick       bool
	// redisServer is the server of the Redis rows and the shared-mode
	// store (-redis-server).
	redisServer string
}

// defaultOptions are the defaults: 3 rounds of 500,000 requests keep the
// whole run within about 10 minutes on 2 cores.
func defaultOptions() options {
	return options{
		rounds:    3,
		requests:  500_000,
		clients:   50,
		pipelines: []int{1, 16},
		keyspace:  100_000,
		keys:      1_000_000,
		swKeys:    100_000,
	}
}

// quickOptions are what -quick changes, unless the flag is given too: a run
// of seconds, for tests and CI smoke runs, whose figures mean nothing.
func quickOptions(o options, given map[string]bool) options {
	set := func(name string, p *int, v int) {
		if !given[name] {
			*p = v
		}
	}
	set("rounds", &o.rounds, 1)
	set("n", &o.requests, 2_000)
	set("r", &o.keyspace, 1_000)
	set("keys", &o.keys, 2_000)
	set("sw-keys", &o.swKeys, 100)
	return o
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is bench's whole life: it parses args, measures, prints the report to
// stdout and progress to stderr, stops every process it started and returns
// the exit status. A cancelled ctx (SIGINT) stops the run.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return exitMissing
	}
	tools, err := findTools(opts.redisServer, getenv("REDIS_CELL_MODULE"), getenv(envEnvoyRatelimit))
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return exitMissing
	}

	started := time.Now()
	procs := newSupervisor(stderr)
	defer procs.stopAll()
	rep, err := measure(ctx, opts, tools, procs, stderr)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "bench: interrupted")
		} else {
			fmt.Fprintln(stderr, "bench:", err)
		}
		return exitFailed
	}
	rep.took = time.Since(started)
	rep.command = commandLine(args)
	fmt.Fprint(stdout, rep.String())
	return exitOK
}

// parseFlags reads bench's flags; usage and errors go to stderr.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := defaultOptions()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./bench [flags]\n\n"+
			"Measures cellserver against Redis side by side (see the package doc). Flags:")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nEnvironment:\n"+
			"  REDIS_CELL_MODULE\n    \tredis-cell's shared library (libredis_cell.so): Redis loads it and redis-cell joins the table\n"+
			"  "+envEnvoyRatelimit+"\n    \tenvoyproxy/ratelimit's binary ("+envoyRatelimitInstall+"):\n"+
			"    \tstarted on bench's redis-server, it joins the RLS rows as "+testRLSEnvoy)
	}
	fs.IntVar(&o.rounds, "rounds", o.rounds, "rounds of every test; the table shows medians")
	fs.IntVar(&o.requests, "n", o.requests, "requests per redis-benchmark run")
	fs.IntVar(&o.clients, "clients", o.clients, "redis-benchmark's parallel connections (-c)")
	pipelines := fs.String("pipelines", "1,16", "redis-benchmark pipeline depths (-P), comma-separated")
	fs.IntVar(&o.keyspace, "r", o.keyspace, "random keys per test (redis-benchmark -r)")
	fs.IntVar(&o.keys, "keys", o.keys, "memory: keys of each family")
	fs.IntVar(&o.swKeys, "sw-keys", o.swKeys,
		fmt.Sprintf("memory: sliding-log keys, each holding %d requests", swRequests))
	fs.BoolVar(&o.skipMemory, "skip-memory", false, "skip the memory measurement")
	only := fs.String("only", "", "run only the tests whose name matches this regexp (CL.THROTTLE, SET, GCRA.lua, RLS, ...)")
	fs.StringVar(&o.baselineBin, "baseline-bin", "", "a cellserver `binary` (say, an older commit's) run beside the current one, test by test, in memory and in shared mode (CL.THROTTLE@base, shared CL.THROTTLE@base ...)")
	fs.StringVar(&o.redisServer, "redis-server", "redis-server", "the Redis-compatible `server` of the Redis rows and the shared-mode store: a name on PATH or a path (say, valkey-server)")
	fs.BoolVar(&o.quick, "quick", false, "a tiny run (1 round, few requests and keys) for smoke tests; figures mean nothing")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.pipelines, err = parseInts(*pipelines); err != nil {
		return o, fmt.Errorf("-pipelines: %v", err)
	}
	if *only != "" {
		if o.only, err = regexp.Compile(*only); err != nil {
			return o, fmt.Errorf("-only: %v", err)
		}
	}
	if o.baselineBin != "" {
		if st, err := os.Stat(o.baselineBin); err != nil || st.IsDir() {
			return o, fmt.Errorf("-baseline-bin %s is not a file", o.baselineBin)
		}
	}
	if o.quick {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		o = quickOptions(o, given)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"rounds", o.rounds}, {"n", o.requests}, {"clients", o.clients}, {"r", o.keyspace}, {"keys", o.keys}, {"sw-keys", o.swKeys}} {
		if c.v < 1 {
			return o, fmt.Errorf("-%s must be at least 1, not %d", c.name, c.v)
		}
	}
	return o, nil
}

// parseInts reads a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// selected reports whether the test or memory row called name runs.
func (o options) selected(name string) bool {
	return o.only == nil || o.only.MatchString(name)
}

// commandLine is the shell command that runs bench with args, each quoted
// when the shell would otherwise split or expand it.
func commandLine(args []string) string {
	line := "go run ./bench"
	for _, a := range args {
		plain := a != ""
		for _, c := range a {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./,=:+", c)) {
				plain = false
			}
		}
		if !plain {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		line += " " + a
	}
	return line
}
