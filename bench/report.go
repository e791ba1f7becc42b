package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// report is everything bench prints at the end.
type report struct {
	opts      options
	tests     []benchTest // the tests that ran, in the table's order
	rows      []resultRow
	skipped   []string // tests that could not run, and why
	notes     []string // what makes some figures doubtful
	memory    []memoryResult
	machine   machine
	took      time.Duration
	redisCell bool
	// envoyRatelimit is envoyproxy/ratelimit's binary (ENVOY_RATELIMIT_BIN),
	// or "".
	envoyRatelimit string
	memSkipped     bool
	command        string // the command line that reproduces the run
}

// measure builds cellserver, runs the throughput tests and the memory
// measurements, and returns the report. Every server it starts is stopped
// before it returns.
func measure(ctx context.Context, o options, t tools, sup *supervisor, progress io.Writer) (*report, error) {
	dir, err := os.MkdirTemp("", "cellserver-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	defer sup.stopAll() // before the directory goes: Redis runs in it

	fmt.Fprintln(progress, "building cellserver")
	bin, err := buildCellserver(ctx, t.goCmd, dir)
	if err != nil {
		return nil, err
	}
	rep := &report{opts: o, machine: describeMachine(t, bin), redisCell: t.cellModule != "", envoyRatelimit: t.envoyRatelimit, memSkipped: o.skipMemory}

	if err := rep.throughputPhase(ctx, t, sup, bin, dir, progress); err != nil {
		return nil, err
	}
	if !o.skipMemory {
		if rep.memory, err = memoryPhase(ctx, o, t, sup, bin, dir, progress); err != nil {
			return nil, err
		}
	}
	rep.machine.loadEnd = loadAverage()
	return rep, nil
}

// throughputPhase starts one Redis and the cellservers the selected tests
// run on (the current one, the -baseline-bin one, one in shared mode on
// that Redis), checks that every selected test's command is answered, and
// runs the tests.
func (rep *report) throughputPhase(ctx context.Context, t tools, sup *supervisor, bin, dir string, progress io.Writer) error {
	with := optionalServers{redisCell: t.cellModule != "", baseline: rep.opts.baselineBin != "", envoyRatelimit: t.envoyRatelimit != ""}
	needed := map[string]bool{}
	rlsNeeded := false
	for _, tc := range benchTests(scripts{}, with) {
		if rep.opts.selected(tc.name) && rep.opts.pipelinesOf(tc.group) != nil {
			needed[tc.server] = true
			rlsNeeded = rlsNeeded || tc.grpc
		}
	}
	if len(needed) == 0 {
		return nil
	}
	rds, err := sup.startRedis(ctx, t.redisServer, t.cellModule, dir)
	if err != nil {
		return err
	}
	defer sup.stopOne(rds)
	redisProc := serverProc{addr: rds.addr, pid: rds.pid()}
	servers := map[string]serverProc{onRedis: redisProc, onRedisCell: redisProc}
	var cellArgs []string
	rlsAddr := ""
	if rlsNeeded {
		if cellArgs, rlsAddr, err = rlsArgs(dir); err != nil {
			return err
		}
	}
	unstarted := map[string]error{} // servers that may fail to start, and why they did
	for _, c := range []struct {
		server, bin string
		args        []string
	}{
		{onCellserver, bin, cellArgs},
		{onBaseline, rep.opts.baselineBin, nil},
		{onShared, bin, sharedArgs(rds.addr)},
		{onSharedBase, rep.opts.baselineBin, sharedArgs(rds.addr)},
	} {
		if !needed[c.server] {
			continue
		}
		p, err := sup.startCellserver(ctx, c.server, c.bin, c.args)
		if err != nil && c.server == onSharedBase && strings.Contains(err.Error(), "flag provided but not defined") {
			// A baseline from before shared mode: its shared tests are
			// left out, the others still run. Any other failure stops
			// the run, as it does for the other servers.
			unstarted[c.server] = err
			continue
		}
		if err != nil {
			return err
		}
		defer sup.stopOne(p)
		srv := serverProc{addr: p.addr, pid: p.pid()}
		if isShared(c.server) {
			srv.storePID = rds.pid()
		}
		if c.server == onCellserver {
			srv.rlsAddr = rlsAddr
		}
		servers[c.server] = srv
		fmt.Fprintf(progress, "%s at %s\n", c.server, p.addr)
		if c.server == onCellserver && rlsAddr != "" {
			fmt.Fprintf(progress, "%s RLS (gRPC) at %s\n", c.server, rlsAddr)
		}
	}
	if needed[onEnvoyRatelimit] {
		p, err := sup.startEnvoyRatelimit(ctx, t.envoyRatelimit, rds.addr, dir)
		if err != nil {
			return err
		}
		defer sup.stopOne(p)
		// Its state is in the redis-server: its CPU is counted too.
		servers[onEnvoyRatelimit] = serverProc{rlsAddr: p.addr, pid: p.pid(), storePID: rds.pid()}
		fmt.Fprintf(progress, "%s (gRPC) at %s, on redis-server at %s\n", onEnvoyRatelimit, p.addr, rds.addr)
	}
	fmt.Fprintf(progress, "redis-server at %s\n", rds.addr)

	sc, err := loadScripts(ctx, rds.addr)
	if err != nil {
		return err
	}
	for _, tc := range benchTests(sc, with) {
		if !rep.opts.selected(tc.name) {
			continue
		}
		if rep.opts.pipelinesOf(tc.group) == nil {
			rep.skipped = append(rep.skipped, tc.name+": runs at -P 1 only (gRPC has no pipelining), and -pipelines has no 1")
			continue
		}
		if err := unstarted[tc.server]; err != nil {
			rep.skipped = append(rep.skipped, fmt.Sprintf("%s: %s did not start: %v", tc.name, tc.server, err))
			continue
		}
		if err := tryOnce(ctx, servers[tc.server], tc); err != nil {
			if tc.server == onRedis || tc.server == onRedisCell {
				return fmt.Errorf("%s on %s: %w", tc.name, tc.server, err)
			}
			// A command this cellserver does not have yet: the others
			// still run.
			rep.skipped = append(rep.skipped, fmt.Sprintf("%s: %v", tc.name, err))
			continue
		}
		rep.tests = append(rep.tests, tc)
	}
	runs, notes, err := throughput(ctx, rep.opts, t, servers, rep.tests, progress)
	if err != nil {
		return err
	}
	rep.notes = notes
	rep.rows = throughputRows(rep.opts, rep.tests, runs)
	return nil
}

// hasServer reports whether a test that ran ran on server.
func (rep *report) hasServer(server string) bool {
	for _, tc := range rep.tests {
		if tc.server == server {
			return true
		}
	}
	return false
}

// hasTest reports whether the test called name ran.
func (rep *report) hasTest(name string) bool {
	for _, tc := range rep.tests {
		if tc.name == name {
			return true
		}
	}
	return false
}

// tryOnce sends tc's command once to srv, with a fixed key, and returns
// the error it gets, if any; for a shared-mode server, also the error of
// reading the shared-mode counters of its INFO, which the run reads.
func tryOnce(ctx context.Context, srv serverProc, tc benchTest) error {
	if tc.grpc {
		return tryRLS(ctx, srv.rlsAddr)
	}
	rdb := newClient(srv.addr, 1)
	defer rdb.Close()
	args := make([]any, len(tc.command))
	for i, a := range tc.command {
		args[i] = strings.ReplaceAll(a, "__rand_int__", "000000000000")
	}
	if err := rdb.Do(ctx, args...).Err(); err != nil {
		return err
	}
	if isShared(tc.server) {
		// The run reads the shared-mode counters of INFO.
		_, err := readSharedCounters(ctx, srv.addr)
		return err
	}
	return nil
}

func (rep *report) String() string {
	o := rep.opts
	var b strings.Builder
	pipelines := make([]string, len(o.pipelines))
	for i, p := range o.pipelines {
		pipelines[i] = strconv.Itoa(p)
	}
	if len(rep.rows) > 0 {
		fmt.Fprintf(&b, "cellserver against Redis, side by side: medians of %d round(s) of redis-benchmark -c %d -n %s -r %s --csv at -P %s\n\n",
			o.rounds, o.clients, formatCount(float64(o.requests)), formatCount(float64(o.keyspace)), strings.Join(pipelines, ", "))
		b.WriteString(formatThroughput(rep.rows))
		fmt.Fprintf(&b, "\ncommands (__rand_int__ is a random key among %s):\n", formatCount(float64(o.keyspace)))
		var cmdRows [][]string
		for _, tc := range rep.tests {
			cmdRows = append(cmdRows, []string{"  " + tc.name, tc.displayCommand()})
		}
		b.WriteString(formatTable([]column{{title: "", left: true}, {title: "", left: true}}, cmdRows))
		b.WriteString("CPU µs/req is the CPU time (utime + stime in /proc/PID/stat, in clock ticks, usually 10 ms) the server used during the run,\n" +
			"per request; CPU ratios compare it, a shared-mode row counting its store's too. On a shared machine it is\n" +
			"steadier than requests/s, which moves with what else runs.\n")
		b.WriteString("GCRA.lua is redis-cell's GCRA as a script (GET + SET PX); ZSET.lua the hand-written sliding window\n" +
			"(ZREMRANGEBYSCORE + ZCARD + ZADD + PEXPIRE); both in bench/scripts.go, loaded with SCRIPT LOAD.\n")
		if rep.hasTest(testRLS) {
			fmt.Fprintf(&b, "RLS: Envoy's rate limit service (gRPC, --rls-addr, --rls-config) of the same cellserver, called by bench's\n"+
				"own Go client, not redis-benchmark: %d concurrent streams (-clients) over %d HTTP/2 connections, %s calls\n"+
				"(-n), each with one descriptor, waiting for its answer (gRPC has no pipelining, so RLS runs at -P 1 only);\n"+
				"requests/s are decisions/s. Every call is admitted and counted. Its ratios are to %s, the same\n"+
				"limit on the same key over RESP, alternated with it; its CPU µs/req is the server's per decision.\n",
				o.clients, rlsConns, formatCount(float64(o.requests)), testRLSRESP)
			switch {
			case rep.hasServer(onEnvoyRatelimit):
				fmt.Fprintf(&b, "%s: the reference RLS, %s\n(%s), started on bench's redis-server as its\n"+
					"backend (REDIS_SOCKET_TYPE=tcp, its defaults otherwise) with the same limit in its config file, called by\n"+
					"the same client, alternated with the pair. Its state lives in that redis-server, so its CPU per decision\n"+
					"is its own (CPU µs/req) plus the redis-server's (store µs/req); %s's CPU ratio to it is to their sum.\n",
					testRLSEnvoy, rep.envoyRatelimit, moduleVersion(rep.envoyRatelimit), testRLS)
			case rep.envoyRatelimit == "":
				fmt.Fprintf(&b, "%s: not measured (set %s to envoyproxy/ratelimit's service_cmd to add it).\n",
					onEnvoyRatelimit, envEnvoyRatelimit)
			}
		}
		if rep.hasServer(onShared) {
			b.WriteString("shared: a cellserver in shared mode (" + strings.Join(sharedArgs("<that redis-server>"), " ") + ", no key prefix,\n" +
				"so its keys there are named as the client names them, as long as the scripts'): every decision is checked\n" +
				"and written by its compare-and-set script on the Redis that runs the scripts,\n" +
				"batched per round trip; decisions/trip is INFO persistence's shared_decisions / shared_round_trips over the run;\n" +
				"store µs/req is that redis-server's CPU per request over the run.\n")
		}
		if rep.hasServer(onBaseline) {
			fmt.Fprintf(&b, "%s: the cellserver built as %s (%s), tests named %s, run right after the current one's",
				onBaseline, o.baselineBin, binaryVersion(o.baselineBin), "<test>"+baselineSuffix)
			if rep.hasServer(onSharedBase) {
				fmt.Fprintf(&b, "; %s: it in shared mode on the same Redis, on keys of its own (a %q for the current one's first letter)", onSharedBase, baseKey("s"))
			}
			b.WriteString(".\n")
		}
		if !rep.redisCell {
			b.WriteString("redis-cell: not measured (set REDIS_CELL_MODULE to its .so to add it).\n")
		}
	}
	for _, n := range rep.notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, s := range rep.skipped {
		fmt.Fprintf(&b, "not run: %s\n", s)
	}
	if len(rep.memory) > 0 {
		fmt.Fprintf(&b, "\nmemory: growth of INFO's used_memory per key on a fresh server, key names of %d bytes, expiry 1 h\n\n", memoryKeyLen)
		b.WriteString(formatMemory(rep.memory))
		b.WriteString("\ncellserver's used_memory is the Go heap's HeapAlloc (live objects and garbage not yet collected;\n" +
			"INFO runs no GC), so its processes here run with " + memoryGOGC + ": the figure is the live heap to within ~1%.\n" +
			"estimate/key is the growth of used_memory_dataset, the keyspace estimate that --maxmemory bounds.\n" +
			"per request is (bytes/key with " + strconv.Itoa(swRequests) + " requests − with 1) / " + strconv.Itoa(swRequests-1) + ".\n" +
			"Redis's used_memory is what its allocator (jemalloc) has handed out. ZSET keys are filled with one\n" +
			"ZADD + PEXPIRE each, members as ZSET.lua writes them.\n")
	} else if rep.memSkipped {
		b.WriteString("\nmemory: skipped (-skip-memory)\n")
	}
	fmt.Fprintf(&b, "\n%s\n", rep.machine)
	if rep.command != "" {
		fmt.Fprintf(&b, "command: %s", rep.command)
		if rep.took > 0 {
			fmt.Fprintf(&b, " (took %v)", rep.took.Round(time.Second))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// formatMemory is the memory table.
func formatMemory(results []memoryResult) string {
	cols := []column{
		{title: "test", left: true}, {title: "server", left: true}, {title: "keys"}, {title: "requests/key"},
		{title: "bytes/key"}, {title: "beyond the name"}, {title: "per request"}, {title: "estimate/key"},
	}
	one := map[string]float64{} // bytes/key with one request, by test
	for _, r := range results {
		if r.requests == 1 {
			one[r.name] = r.bytesPerKey
		}
	}
	var cells [][]string
	for _, r := range results {
		perRequest := "-"
		if b1, ok := one[r.name]; ok && r.requests > 1 {
			perRequest = strconv.FormatFloat((r.bytesPerKey-b1)/float64(r.requests-1), 'f', 1, 64)
		}
		estimate := "-"
		if !math.IsNaN(r.datasetPerKey) {
			estimate = formatCount(r.datasetPerKey)
		}
		cells = append(cells, []string{
			r.name, r.server, formatCount(float64(r.keys)), strconv.Itoa(r.requests),
			formatCount(r.bytesPerKey), formatCount(r.bytesPerKey - memoryKeyLen), perRequest, estimate,
		})
	}
	return formatTable(cols, cells)
}
