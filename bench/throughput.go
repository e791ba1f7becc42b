package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Servers a test runs on, as the table names them.
const (
	onCellserver = "cellserver"
	onRedis      = "redis"
	onRedisCell  = "redis+redis-cell"
)

// benchTest is one test: a command redis-benchmark sends to one server.
type benchTest struct {
	name    string   // unique; what -only matches and ratios refer to
	server  string   // onCellserver, onRedis or onRedisCell
	command []string // __rand_int__ becomes a random 12-digit number
	group   int      // the tests of a group run in turn, A B A B, round by round
	versus  []string // the Redis tests this one's ratios are taken against
}

// Test groups.
const (
	groupGCRA   = iota // CL.THROTTLE and what it replaces
	groupWindow        // the window families and the ZSET script
)

// benchTests are the tests in the table's order: CL.THROTTLE against Redis
// SET (the speed limit), the GCRA script and redis-cell (when loaded);
// SW.THROTTLE against the ZSET script, and SWC and FW with the scripts'
// figures as reference. Quotas are the README's (CL: 16 at once, then 30 a
// minute) and 100 a minute for the windows, so that most requests are
// admitted and recorded.
func benchTests(sc scripts, redisCell bool) []benchTest {
	tests := []benchTest{
		{name: "CL.THROTTLE", server: onCellserver, group: groupGCRA,
			command: []string{"CL.THROTTLE", "cl:__rand_int__", "15", "30", "60"},
			versus:  []string{"SET", "GCRA.lua", "redis-cell"}},
		{name: "SET", server: onRedis, group: groupGCRA,
			command: []string{"SET", "set:__rand_int__", "1795340811174919210"}},
		{name: "GCRA.lua", server: onRedis, group: groupGCRA,
			command: []string{"EVALSHA", sc.gcra, "1", "gcra:__rand_int__", "15", "30", "60"}},
	}
	if redisCell {
		tests = append(tests, benchTest{name: "redis-cell", server: onRedisCell, group: groupGCRA,
			command: []string{"CL.THROTTLE", "cell:__rand_int__", "15", "30", "60"}})
	}
	windowVersus := []string{"ZSET.lua", "GCRA.lua"}
	return append(tests,
		benchTest{name: "SW.THROTTLE", server: onCellserver, group: groupWindow,
			command: []string{"SW.THROTTLE", "sw:__rand_int__", "100", "60"},
			versus:  []string{"ZSET.lua"}},
		benchTest{name: "ZSET.lua", server: onRedis, group: groupWindow,
			command: []string{"EVALSHA", sc.zset, "1", "zset:__rand_int__", "100", "60000"}},
		benchTest{name: "SWC.THROTTLE", server: onCellserver, group: groupWindow,
			command: []string{"SWC.THROTTLE", "swc:__rand_int__", "100", "60"},
			versus:  windowVersus},
		benchTest{name: "FW.THROTTLE", server: onCellserver, group: groupWindow,
			command: []string{"FW.THROTTLE", "fw:__rand_int__", "100", "60"},
			versus:  windowVersus},
	)
}

// displayCommand is t's command as the table's legend shows it.
func (t benchTest) displayCommand() string {
	c := append([]string(nil), t.command...)
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

// throughput runs every test at every pipeline depth, rounds times, the
// tests of a group in turn (A B A B), and returns each one's runs.
func throughput(ctx context.Context, o options, t tools, addrs map[string]string, tests []benchTest, progress io.Writer) (map[runKey][]figures, error) {
	total := len(tests) * len(o.pipelines) * o.rounds
	done := 0
	runs := map[runKey][]figures{}
	for _, group := range []int{groupGCRA, groupWindow} {
		var members []benchTest
		for _, tc := range tests {
			if tc.group == group {
				members = append(members, tc)
			}
		}
		for _, p := range o.pipelines {
			for round := 1; round <= o.rounds; round++ {
				for _, tc := range members {
					f, err := runBenchmark(ctx, t.redisBenchmark, benchSpec{
						addr: addrs[tc.server], clients: o.clients, pipeline: p,
						requests: o.requests, keyspace: o.keyspace, command: tc.command,
					})
					if err != nil {
						return nil, fmt.Errorf("%s on %s: %w", tc.name, tc.server, err)
					}
					done++
					fmt.Fprintf(progress, "[%d/%d] -P %d round %d/%d %-12s on %-16s %12s rps  p50 %s  p99 %s ms\n",
						done, total, p, round, o.rounds, tc.name, tc.server, formatCount(f.rps),
						formatMs(f.p50), formatMs(f.p99))
					k := runKey{tc.name, p}
					runs[k] = append(runs[k], f)
				}
			}
		}
	}
	return runs, nil
}

// throughputRows are the table's lines: for each pipeline depth, each test's
// medians and its ratios to the Redis tests it is compared with.
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
					row.ratios = append(row.ratios, ratio{of: v, x: f.rps / ref.rps})
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}
