package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Servers a test runs on, as the table names them.
const (
	onCellserver = "cellserver"
	onBaseline   = "cellserver-base" // -baseline-bin
	onShared     = "cellserver shared"
	onSharedBase = "cellserver shared-base" // -baseline-bin in shared mode
	onRedis      = "redis"
	onRedisCell  = "redis+redis-cell"
)

// isShared reports whether server is a cellserver in shared mode.
func isShared(server string) bool { return server == onShared || server == onSharedBase }

// baselineSuffix ends the name of a test run on the -baseline-bin
// cellserver: CL.THROTTLE@base.
const baselineSuffix = "@base"

// optionalServers are the servers a run adds when it can.
type optionalServers struct {
	redisCell bool // Redis has loaded redis-cell
	baseline  bool // -baseline-bin names a second cellserver binary
	// envoyRatelimit: ENVOY_RATELIMIT_BIN names envoyproxy/ratelimit's
	// binary
	envoyRatelimit bool
}

// benchTest is one test: a command redis-benchmark sends to one server.
type benchTest struct {
	name    string   // unique; what -only matches and ratios refer to
	server  string   // onCellserver, onBaseline, onShared, onSharedBase, onRedis, onRedisCell or onEnvoyRatelimit
	command []string // __rand_int__ becomes a random 12-digit number
	group   int      // the tests of a group run in turn, A B A B, round by round
	versus  []string // the Redis tests this one's ratios are taken against
	// grpc: the test calls the server's RLS (gRPC) with bench's own load
	// generator, runRLS, not redis-benchmark; command is only its legend.
	grpc bool
}

// Test groups.
const (
	groupGCRA   = iota // CL.THROTTLE and what it replaces
	groupWindow        // the window families and the ZSET script
	groupRLS           // RLS over gRPC and the same limit over RESP, at -P 1 only
)

// Names of the RLS test and its RESP counterpart: -only '^RLS' selects
// both.
const (
	testRLS     = "RLS"
	testRLSRESP = "RLS FW.THROTTLE"
)

// pipelinesOf are the -P depths group runs at: RLS has no pipelining, so
// its group runs at 1 only, if -pipelines has 1.
func (o options) pipelinesOf(group int) []int {
	if group != groupRLS {
		return o.pipelines
	}
	if slices.Contains(o.pipelines, 1) {
		return []int{1}
	}
	return nil
}

// benchTests are the tests in the table's order: CL.THROTTLE against Redis
// SET (the speed limit), the GCRA script and redis-cell (when loaded);
// SW.THROTTLE against the ZSET script, and SWC and FW with the scripts'
// figures as reference. Shared mode's CL.THROTTLE and SW.THROTTLE, deciding
// in the Redis that runs the scripts, are compared with the script each
// replaces there. With a baseline binary, each cellserver test runs on it
// too, right after, and the current one's ratio to it is shown: a shared
// one on the baseline in shared mode, on the same Redis. Quotas are
// the README's (CL: 16 at once, then 30 a minute) and 100 a minute for the
// windows, so that most requests are admitted and recorded.
func benchTests(sc scripts, with optionalServers) []benchTest {
	var tests []benchTest
	// add appends tc and, with a baseline, tc on the baseline.
	add := func(tc benchTest) {
		baseServer := map[string]string{onCellserver: onBaseline, onShared: onSharedBase}[tc.server]
		if baseServer == "" || !with.baseline {
			tests = append(tests, tc)
			return
		}
		base := tc
		base.name, base.server = tc.name+baselineSuffix, baseServer
		if baseServer == onSharedBase {
			// The same Redis as the current one's: keys of its own.
			base.command = slices.Clone(tc.command)
			base.command[1] = baseKey(tc.command[1])
		}
		tc.versus = append(append([]string(nil), tc.versus...), base.name)
		tests = append(tests, tc, base)
	}
	add(benchTest{name: "CL.THROTTLE", server: onCellserver, group: groupGCRA,
		command: []string{"CL.THROTTLE", "cl:__rand_int__", "15", "30", "60"},
		versus:  []string{"SET", "GCRA.lua", "redis-cell"}})
	add(benchTest{name: "SET", server: onRedis, group: groupGCRA,
		command: []string{"SET", "set:__rand_int__", "1795340811174919210"}})
	add(benchTest{name: "GCRA.lua", server: onRedis, group: groupGCRA,
		command: []string{"EVALSHA", sc.gcra, "1", "gcra:__rand_int__", "15", "30", "60"}})
	if with.redisCell {
		add(benchTest{name: "redis-cell", server: onRedisCell, group: groupGCRA,
			command: []string{"CL.THROTTLE", "cell:__rand_int__", "15", "30", "60"}})
	}
	add(benchTest{name: "shared CL.THROTTLE", server: onShared, group: groupGCRA,
		command: []string{"CL.THROTTLE", "shcl:__rand_int__", "15", "30", "60"},
		versus:  []string{"GCRA.lua"}})
	windowVersus := []string{"ZSET.lua", "GCRA.lua"}
	add(benchTest{name: "SW.THROTTLE", server: onCellserver, group: groupWindow,
		command: []string{"SW.THROTTLE", "sw:__rand_int__", "100", "60"},
		versus:  []string{"ZSET.lua"}})
	add(benchTest{name: "ZSET.lua", server: onRedis, group: groupWindow,
		command: []string{"EVALSHA", sc.zset, "1", "zset:__rand_int__", "100", "60000"}})
	add(benchTest{name: "shared SW.THROTTLE", server: onShared, group: groupWindow,
		command: []string{"SW.THROTTLE", "shsw:__rand_int__", "100", "60"},
		versus:  []string{"ZSET.lua"}})
	add(benchTest{name: "SWC.THROTTLE", server: onCellserver, group: groupWindow,
		command: []string{"SWC.THROTTLE", "swc:__rand_int__", "100", "60"},
		versus:  windowVersus})
	add(benchTest{name: "FW.THROTTLE", server: onCellserver, group: groupWindow,
		command: []string{"FW.THROTTLE", "fw:__rand_int__", "100", "60"},
		versus:  windowVersus})
	// Not on the baseline, which may not serve RLS.
	rlsCall := []string{"ShouldRateLimit", "domain", rlsDomain, "descriptor", rlsEntry + "=__rand_int__"}
	rlsVersus := []string{testRLSRESP}
	if with.envoyRatelimit {
		rlsVersus = append(rlsVersus, testRLSEnvoy)
	}
	tests = append(tests,
		benchTest{name: testRLS, server: onCellserver, group: groupRLS, grpc: true,
			command: rlsCall, versus: rlsVersus},
		benchTest{name: testRLSRESP, server: onCellserver, group: groupRLS,
			command: []string{"FW.THROTTLE", rlsKey + "__rand_int__", strconv.Itoa(rlsLimit), "3600"}})
	if with.envoyRatelimit {
		tests = append(tests, benchTest{name: testRLSEnvoy, server: onEnvoyRatelimit, group: groupRLS, grpc: true,
			command: rlsCall})
	}
	return tests
}

// displayCommand is t's command as the table's legend shows it.
func (t benchTest) displayCommand() string {
	c := append([]string(nil), t.command...)
	if t.grpc {
		config := "fixed_window, --rls-config"
		if t.server == onEnvoyRatelimit {
			config = "its config file, counted in redis-server"
		}
		return fmt.Sprintf("%s {%s: %s} over gRPC; limit %s per hour (%s)",
			c[0], c[2], c[4], formatCount(rlsLimit), config)
	}
	if c[0] == "EVALSHA" {
		c[1] = "<" + strings.TrimSuffix(t.name, ".lua") + " sha>"
	}
	if c[0] == "SET" {
		c[2] = "<19 digits>"
	}
	return strings.Join(c, " ")
}

// runKey names the figures of one test at one pipeline depth.
type runKey struct {
	test     string
	pipeline int
}

// serverProc is where a server a test runs on answers, and its process
// and, in shared mode, its store's, whose CPU time each run reads.
type serverProc struct {
	addr     string
	rlsAddr  string // its RLS (gRPC) address; "" when it serves none
	pid      int    // the process bench started
	storePID int    // shared mode: the redis-server; 0 otherwise
}

// throughput runs every test at every pipeline depth, rounds times, the
// tests of a group in turn (A B A B), and returns each one's runs, and a
// note for each shared-mode run some of whose decisions were made without
// the store (it timed out): its figures are not shared mode's. Each run's
// figures include the CPU time its server (and store) used during it.
func throughput(ctx context.Context, o options, t tools, servers map[string]serverProc, tests []benchTest, progress io.Writer) (map[runKey][]figures, []string, error) {
	total := 0
	for _, tc := range tests {
		total += len(o.pipelinesOf(tc.group)) * o.rounds
	}
	done := 0
	runs := map[runKey][]figures{}
	var notes []string
	for _, group := range []int{groupGCRA, groupWindow, groupRLS} {
		var members []benchTest
		for _, tc := range tests {
			if tc.group == group {
				members = append(members, tc)
			}
		}
		for _, p := range o.pipelinesOf(group) {
			for round := 1; round <= o.rounds; round++ {
				for _, tc := range members {
					srv := servers[tc.server]
					var before sharedCounters
					var err error
					if isShared(tc.server) {
						if before, err = readSharedCounters(ctx, srv.addr); err != nil {
							return nil, nil, fmt.Errorf("%s: %w", tc.name, err)
						}
					}
					cpu0, storeCPU0 := processCPU(srv.pid), processCPU(srv.storePID)
					spec := benchSpec{
						addr: srv.addr, clients: o.clients, pipeline: p,
						requests: o.requests, keyspace: o.keyspace, command: tc.command,
					}
					var f figures
					if tc.grpc {
						spec.addr = srv.rlsAddr
						f, err = runRLS(ctx, spec)
					} else {
						f, err = runBenchmark(ctx, t.redisBenchmark, spec)
					}
					if err != nil {
						return nil, nil, fmt.Errorf("%s on %s: %w", tc.name, tc.server, err)
					}
					f.cpu = cpuPerRequest(cpu0, processCPU(srv.pid), o.requests)
					if srv.storePID != 0 {
						f.storeCPU = cpuPerRequest(storeCPU0, processCPU(srv.storePID), o.requests)
					}
					perTrip := ""
					if isShared(tc.server) {
						after, err := readSharedCounters(ctx, srv.addr)
						if err != nil {
							return nil, nil, fmt.Errorf("%s: %w", tc.name, err)
						}
						f.perTrip = before.perRoundTrip(after)
						perTrip = fmt.Sprintf("  %.1f decisions/round trip", f.perTrip)
						if n := after.local - before.local; n > 0 {
							notes = append(notes, fmt.Sprintf("%s at -P %d, round %d: %d decisions made locally: the store did not answer in time",
								tc.name, p, round, n))
						}
					}
					done++
					fmt.Fprintf(progress, "[%d/%d] -P %d round %d/%d %-24s on %-20s %12s rps  p50 %s  p99 %s ms  %s µs CPU/request%s%s\n",
						done, total, p, round, o.rounds, tc.name, tc.server, formatCount(f.rps),
						formatMs(f.p50), formatMs(f.p99), formatCPU(f.cpu), storeNote(f), perTrip)
					k := runKey{tc.name, p}
					runs[k] = append(runs[k], f)
				}
			}
		}
	}
	return runs, notes, nil
}

// storeNote is the progress line's word on the store's CPU, "" but in
// shared mode.
func storeNote(f figures) string {
	if f.storeCPU == 0 {
		return ""
	}
	return " (store " + formatCPU(f.storeCPU) + ")"
}

// throughputRows are the table's lines: for each pipeline depth, each test's
// medians and its ratios to the Redis tests it is compared with: of
// requests/s, and of CPU per request, where a shared-mode test's CPU is its
// cellserver's and its store's together, since the store does the script
// work that the Redis test's server does alone; and so is
// envoyproxy/ratelimit's, whose counters are in its redis-server.
func throughputRows(o options, tests []benchTest, runs map[runKey][]figures) []resultRow {
	var rows []resultRow
	for _, p := range o.pipelines {
		med := map[string]figures{}
		for _, tc := range tests {
			if r, ok := runs[runKey{tc.name, p}]; ok {
				med[tc.name] = medianFigures(r)
			}
		}
		for _, tc := range tests {
			f, ok := med[tc.name]
			if !ok {
				continue
			}
			row := resultRow{pipeline: p, test: tc.name, server: tc.server, figures: f}
			for _, v := range tc.versus {
				if ref, ok := med[v]; ok && ref.rps > 0 {
					row.ratios = append(row.ratios, ratio{of: v, x: f.rps / ref.rps, cpu: (f.cpu + f.storeCPU) / (ref.cpu + ref.storeCPU)})
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}
