package main

import (
	"math"
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
	o := defaultOptions()
	tests := benchTests(scripts{gcra: "g", zset: "z"}, false)
	f := func(rps, p50, p99 float64) figures { return figures{rps: rps, p50: p50, p99: p99} }
	runs := map[runKey][]figures{
		{"CL.THROTTLE", 1}:  {f(40000, 1, 2), f(50000, 0.6, 1.5), f(45000, 0.7, 9)},
		{"SET", 1}:          {f(50000, 0.5, 1)},
		{"GCRA.lua", 1}:     {f(25000, 1, 3)},
		{"CL.THROTTLE", 16}: {f(350000, 2, 5.5)},
		{"SET", 16}:         {f(350000, 2, 4)},
		{"SW.THROTTLE", 16}: {f(333333.3, 2.063, 4.887)},
		{"ZSET.lua", 16}:    {f(66666.7, 9.935, 10.863)},
	}
	got := formatThroughput(throughputRows(o, tests, runs))
	want := "" +
		"-P  test         server      requests/s  p50 ms  p99 ms  ratio to Redis\n" +
		" 1  CL.THROTTLE  cellserver      45,000   0.700   2.000  0.90× SET, 1.80× GCRA.lua\n" +
		" 1  SET          redis           50,000   0.500   1.000\n" +
		" 1  GCRA.lua     redis           25,000   1.000   3.000\n" +
		"16  CL.THROTTLE  cellserver     350,000   2.000   5.500  1.00× SET\n" +
		"16  SET          redis          350,000   2.000   4.000\n" +
		"16  SW.THROTTLE  cellserver     333,333   2.063   4.887  5.00× ZSET.lua\n" +
		"16  ZSET.lua     redis           66,667   9.935  10.863\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestBenchTestsWithRedisCell(t *testing.T) {
	var names []string
	for _, tc := range benchTests(scripts{}, true) {
		names = append(names, tc.name+"@"+tc.server)
	}
	want := "CL.THROTTLE@cellserver SET@redis GCRA.lua@redis redis-cell@redis+redis-cell " +
		"SW.THROTTLE@cellserver ZSET.lua@redis SWC.THROTTLE@cellserver FW.THROTTLE@cellserver"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("tests:\n got %s\nwant %s", got, want)
	}
	if got := benchTests(scripts{gcra: "abc"}, false)[2].displayCommand(); got != "EVALSHA <GCRA sha> 1 gcra:__rand_int__ 15 30 60" {
		t.Errorf("GCRA.lua's command shows as %q", got)
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
