package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestFormatCount(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {7, "7"}, {999.4, "999"}, {999.5, "1,000"}, {1000, "1,000"},
		{48155.64, "48,156"}, {1234567.8, "1,234,568"}, {100000, "100,000"},
		{-1234, "-1,234"}, {math.NaN(), "-"}, {math.Inf(1), "-"},
	} {
		if got := formatCount(tc.in); got != tc.want {
			t.Errorf("formatCount(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatMs(t *testing.T) {
	for in, want := range map[float64]string{0.2: "0.200", 5.7: "5.700", 10.191: "10.191", 1.0005: "1.000"} {
		if got := formatMs(in); got != want {
			t.Errorf("formatMs(%v) = %q, want %q", in, got, want)
		}
	}
	if got := formatMs(math.NaN()); got != "-" {
		t.Errorf("formatMs(NaN) = %q, want -", got)
	}
}

func TestFormatTable(t *testing.T) {
	got := formatTable([]column{{title: "name", left: true}, {title: "n"}, {title: "note", left: true}}, [][]string{
		{"a", "1", "x"},
		{"longer", "1,000", ""},
		{"×", "22", "ünïcode"},
	})
	want := "" +
		"name        n  note\n" +
		"a           1  x\n" +
		"longer  1,000\n" +
		"×          22  ünïcode\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	untitled := formatTable([]column{{left: true}, {left: true}}, [][]string{{"a", "b"}})
	if untitled != "a  b\n" {
		t.Errorf("columns without titles: %q, want no title line", untitled)
	}
}

func TestThroughputTable(t *testing.T) {
	nan := math.NaN()
	o := defaultOptions()
	tests := benchTests(scripts{gcra: "g", zset: "z"}, optionalServers{})
	f := func(rps, p50, p99, cpu float64) figures { return figures{rps: rps, p50: p50, p99: p99, cpu: cpu} }
	runs := map[runKey][]figures{
		{"CL.THROTTLE", 1}:  {f(40000, 1, 2, 12), f(50000, 0.6, 1.5, 10), f(45000, 0.7, 9, 11)},
		{"SET", 1}:          {f(50000, 0.5, 1, 10)},
		{"GCRA.lua", 1}:     {f(25000, 1, 3, 20)},
		{"CL.THROTTLE", 16}: {f(350000, 2, 5.5, 2)},
		{"SET", 16}:         {f(350000, 2, 4, nan)},
		{"SW.THROTTLE", 16}: {f(333333.3, 2.063, 4.887, 3.126)},
		{"ZSET.lua", 16}:    {f(66666.7, 9.935, 10.863, 12.5)},
	}
	got := formatThroughput(throughputRows(o, tests, runs))
	want := "" +
		"-P  test         server      requests/s  p50 ms  p99 ms  CPU µs/req  ratios                     CPU ratios\n" +
		" 1  CL.THROTTLE  cellserver      45,000   0.700   2.000       11.00  0.90× SET, 1.80× GCRA.lua  1.10× SET, 0.55× GCRA.lua\n" +
		" 1  SET          redis           50,000   0.500   1.000       10.00\n" +
		" 1  GCRA.lua     redis           25,000   1.000   3.000       20.00\n" +
		"16  CL.THROTTLE  cellserver     350,000   2.000   5.500        2.00  1.00× SET\n" +
		"16  SET          redis          350,000   2.000   4.000           -\n" +
		"16  SW.THROTTLE  cellserver     333,333   2.063   4.887        3.13  5.00× ZSET.lua             0.25× ZSET.lua\n" +
		"16  ZSET.lua     redis           66,667   9.935  10.863       12.50\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestSharedAndBaselineTable: shared mode's rows add the store's CPU and
// the decisions per round trip and compare with the scripts, CPU counting
// the store's; a baseline's rows, in memory and in shared mode, follow the
// current ones', which show their ratio to them.
func TestSharedAndBaselineTable(t *testing.T) {
	o := defaultOptions()
	o.pipelines = []int{16}
	tests := benchTests(scripts{gcra: "g", zset: "z"}, optionalServers{baseline: true})
	f := func(rps, perTrip, cpu, store float64) figures {
		return figures{rps: rps, p50: 1, p99: 2, perTrip: perTrip, cpu: cpu, storeCPU: store}
	}
	runs := map[runKey][]figures{
		{"CL.THROTTLE", 16}:             {f(400000, 0, 2, 0)},
		{"CL.THROTTLE@base", 16}:        {f(380000, 0, 2.5, 0), f(420000, 0, 3, 0), f(500000, 0, 1, 0)},
		{"GCRA.lua", 16}:                {f(100000, 0, 8, 0)},
		{"shared CL.THROTTLE", 16}:      {f(150000, 40, 5, 4), f(250000, 60, 4, 3), f(200000, 50.04, 4.5, 3.5)},
		{"shared CL.THROTTLE@base", 16}: {f(160000, 30, 6, 4)},
		{"ZSET.lua", 16}:                {f(50000, 0, 10, 0)},
		{"shared SW.THROTTLE", 16}:      {f(100000, 7.25, 6, 4)},
	}
	got := formatThroughput(throughputRows(o, tests, runs))
	want := "" +
		"-P  test                     server                  requests/s  p50 ms  p99 ms  CPU µs/req  store µs/req  decisions/trip  ratios                                         CPU ratios\n" +
		"16  CL.THROTTLE              cellserver                 400,000   1.000   2.000        2.00                                4.00× GCRA.lua, 0.95× CL.THROTTLE@base         0.25× GCRA.lua, 0.80× CL.THROTTLE@base\n" +
		"16  CL.THROTTLE@base         cellserver-base            420,000   1.000   2.000        2.50                                4.20× GCRA.lua                                 0.31× GCRA.lua\n" +
		"16  GCRA.lua                 redis                      100,000   1.000   2.000        8.00\n" +
		"16  shared CL.THROTTLE       cellserver shared          200,000   1.000   2.000        4.50          3.50            50.0  2.00× GCRA.lua, 1.25× shared CL.THROTTLE@base  1.00× GCRA.lua, 0.80× shared CL.THROTTLE@base\n" +
		"16  shared CL.THROTTLE@base  cellserver shared-base     160,000   1.000   2.000        6.00          4.00            30.0  1.60× GCRA.lua                                 1.25× GCRA.lua\n" +
		"16  ZSET.lua                 redis                       50,000   1.000   2.000       10.00\n" +
		"16  shared SW.THROTTLE       cellserver shared          100,000   1.000   2.000        6.00          4.00             7.2  2.00× ZSET.lua                                 1.00× ZSET.lua\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestBenchTests(t *testing.T) {
	names := func(with optionalServers) string {
		var names []string
		for _, tc := range benchTests(scripts{}, with) {
			names = append(names, tc.name+"/"+tc.server)
		}
		return strings.Join(names, " ")
	}
	want := "CL.THROTTLE/cellserver SET/redis GCRA.lua/redis redis-cell/redis+redis-cell shared CL.THROTTLE/cellserver shared " +
		"SW.THROTTLE/cellserver ZSET.lua/redis shared SW.THROTTLE/cellserver shared SWC.THROTTLE/cellserver FW.THROTTLE/cellserver " +
		"RLS/cellserver RLS FW.THROTTLE/cellserver"
	if got := names(optionalServers{redisCell: true}); got != want {
		t.Errorf("tests with redis-cell:\n got %s\nwant %s", got, want)
	}
	want = "CL.THROTTLE/cellserver CL.THROTTLE@base/cellserver-base SET/redis GCRA.lua/redis " +
		"shared CL.THROTTLE/cellserver shared shared CL.THROTTLE@base/cellserver shared-base " +
		"SW.THROTTLE/cellserver SW.THROTTLE@base/cellserver-base ZSET.lua/redis " +
		"shared SW.THROTTLE/cellserver shared shared SW.THROTTLE@base/cellserver shared-base " +
		"SWC.THROTTLE/cellserver SWC.THROTTLE@base/cellserver-base FW.THROTTLE/cellserver FW.THROTTLE@base/cellserver-base " +
		"RLS/cellserver RLS FW.THROTTLE/cellserver" // RLS is not run on the baseline
	if got := names(optionalServers{baseline: true}); got != want {
		t.Errorf("tests with a baseline:\n got %s\nwant %s", got, want)
	}
	if got := benchTests(scripts{gcra: "abc"}, optionalServers{})[2].displayCommand(); got != "EVALSHA <GCRA sha> 1 gcra:__rand_int__ 15 30 60" {
		t.Errorf("GCRA.lua's command shows as %q", got)
	}
	for _, tc := range benchTests(scripts{}, optionalServers{}) {
		var want string
		switch tc.name {
		case testRLS:
			want = "ShouldRateLimit {bench: user=__rand_int__} over gRPC; limit 1,000,000,000 per hour (fixed_window, --rls-config)"
		case testRLSRESP:
			// The key rls/config gives the RLS limit, so that both count
			// on the same keys.
			want = "FW.THROTTLE rls:fw:{bench}|user=__rand_int__ 1000000000 3600"
		default:
			continue
		}
		if got := tc.displayCommand(); got != want {
			t.Errorf("%s's command shows as %q, want %q", tc.name, got, want)
		}
	}
}

// TestRLSAtPipelineOne: the RLS group runs at -P 1 only, and not at all
// when -pipelines has no 1; its row compares with the RESP one.
func TestRLSAtPipelineOne(t *testing.T) {
	o := defaultOptions()
	for _, c := range []struct {
		pipelines []int
		want      string
	}{{[]int{1, 16}, "[1]"}, {[]int{16, 1}, "[1]"}, {[]int{4, 16}, "[]"}} {
		o.pipelines = c.pipelines
		if got := fmt.Sprint(o.pipelinesOf(groupRLS)); got != c.want {
			t.Errorf("-pipelines %v: RLS runs at %s, want %s", c.pipelines, got, c.want)
		}
		if got := fmt.Sprint(o.pipelinesOf(groupWindow)); got != fmt.Sprint(c.pipelines) {
			t.Errorf("-pipelines %v: the windows run at %s", c.pipelines, got)
		}
	}
	o.pipelines = []int{1, 16}
	f := func(rps, cpu float64) figures { return figures{rps: rps, p50: 1, p99: 2, cpu: cpu} }
	runs := map[runKey][]figures{
		{testRLS, 1}:     {f(30000, 30)},
		{testRLSRESP, 1}: {f(75000, 12)},
		{"SET", 16}:      {f(500000, 1)},
	}
	got := formatThroughput(throughputRows(o, benchTests(scripts{}, optionalServers{}), runs))
	want := "" +
		"-P  test             server      requests/s  p50 ms  p99 ms  CPU µs/req  ratios                 CPU ratios\n" +
		" 1  RLS              cellserver      30,000   1.000   2.000       30.00  0.40× RLS FW.THROTTLE  2.50× RLS FW.THROTTLE\n" +
		" 1  RLS FW.THROTTLE  cellserver      75,000   1.000   2.000       12.00\n" +
		"16  SET              redis          500,000   1.000   2.000        1.00\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestMemoryTable(t *testing.T) {
	nan := math.NaN()
	results := []memoryResult{
		{memoryTest: memoryTest{name: "CL.THROTTLE", server: onCellserver, keys: 1000000, requests: 1}, bytesPerKey: 208.4, datasetPerKey: 176},
		{memoryTest: memoryTest{name: "SET", server: onRedis, keys: 1000000, requests: 1}, bytesPerKey: 129, datasetPerKey: nan},
		{memoryTest: memoryTest{name: "SW.THROTTLE", server: onCellserver, keys: 100000, requests: 1}, bytesPerKey: 333, datasetPerKey: 254},
		{memoryTest: memoryTest{name: "SW.THROTTLE", server: onCellserver, keys: 100000, requests: 100}, bytesPerKey: 1843, datasetPerKey: 1742},
		{memoryTest: memoryTest{name: "ZSET.lua", server: onRedis, keys: 100000, requests: 100}, bytesPerKey: 3718, datasetPerKey: nan},
	}
	want := "" +
		"test         server           keys  requests/key  bytes/key  beyond the name  per request  estimate/key\n" +
		"CL.THROTTLE  cellserver  1,000,000             1        208              192            -           176\n" +
		"SET          redis       1,000,000             1        129              113            -             -\n" +
		"SW.THROTTLE  cellserver    100,000             1        333              317            -           254\n" +
		"SW.THROTTLE  cellserver    100,000           100      1,843            1,827         15.3         1,742\n" +
		"ZSET.lua     redis         100,000           100      3,718            3,702            -             -\n"
	if got := formatMemory(results); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestFormatCPU(t *testing.T) {
	for in, want := range map[float64]string{0: "0.00", 3.126: "3.13", 12.5: "12.50", math.NaN(): "-"} {
		if got := formatCPU(in); got != want {
			t.Errorf("formatCPU(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestStoreKeysApart: the tests that share the scripts' Redis (the
// scripts, and the shared-mode cellservers, which run with no key prefix)
// each have keys of their own, and the shared rows' keys are as long as the
// scripts' they are compared with.
func TestStoreKeysApart(t *testing.T) {
	if slices.Contains(sharedArgs("r:1"), "--backing-prefix") {
		t.Fatalf("shared args %v: the shared rows run with the default prefix", sharedArgs("r:1"))
	}
	keyOf := map[string]string{}
	owner := map[string]string{}
	for _, tc := range benchTests(scripts{gcra: "g", zset: "z"}, optionalServers{baseline: true}) {
		if tc.server != onRedis && !isShared(tc.server) {
			continue
		}
		key := tc.command[1]
		if tc.server == onRedis && tc.name != "SET" {
			key = tc.command[3] // EVALSHA sha 1 key
		}
		if prev, ok := owner[key]; ok {
			t.Errorf("%s and %s both use %s", prev, tc.name, key)
		}
		owner[key], keyOf[tc.name] = tc.name, key
	}
	for shared, script := range map[string]string{
		"shared CL.THROTTLE": "GCRA.lua", "shared CL.THROTTLE@base": "GCRA.lua",
		"shared SW.THROTTLE": "ZSET.lua", "shared SW.THROTTLE@base": "ZSET.lua",
	} {
		if len(keyOf[shared]) != len(keyOf[script]) {
			t.Errorf("%s's key %q and %s's %q are not as long", shared, keyOf[shared], script, keyOf[script])
		}
	}
}
