package compat_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The pacing examples, examples/python/pace.py and examples/node/pace.js:
// 4 workers make 20 calls through LB.THROTTLE api:partner 25 1s 1 MS, one
// every 40 ms.
const (
	paceCalls    = 20
	paceInterval = 40 // ms
	// paceJitter is how much earlier than the pace a call may be, in ms:
	// the server rounds waits up to the ms, the scripts print whole ms,
	// and a call is late by its reply's trip and its timer's lateness, so
	// that one late call and the next on time are less than an interval
	// apart. That gap is only bounded loosely, by half an interval: under
	// -race, runs have shown 31 ms.
	paceJitter = 5
)

var (
	paceCall    = regexp.MustCompile(`^call (\d+): job (\d+) by worker ([1-4]) at \+(\d+) ms, after waiting (\d+) ms$`)
	paceSummary = regexp.MustCompile(`^20 calls by 4 workers: \d+ ms from first to last, closest \d+ ms apart$`)
)

// TestPacePython runs examples/python/pace.py (redis-py) against the
// server.
func TestPacePython(t *testing.T) {
	python := pythonWithRedis(t)
	s := startServer(t)
	checkPace(t, runProgram(t, s.addr, python, filepath.Join("..", "examples", "python", "pace.py")))
}

// TestPaceNode runs examples/node/pace.js (ioredis) against the server.
func TestPaceNode(t *testing.T) {
	node := nodeWithIoredis(t)
	s := startServer(t)
	checkPace(t, runProgram(t, s.addr, node, filepath.Join("..", "examples", "node", "pace.js")))
}

// checkPace reads a pacing example's output: every job called once, in
// the order of the calls; the calls never ahead of the pace (the nth at
// least n-1 intervals after the script's start, less the jitter), no two closer
// than half an interval, and 19 intervals from first to last, within 10%.
func checkPace(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != paceCalls+2 || lines[0] != "reset api:partner" || !paceSummary.MatchString(lines[len(lines)-1]) {
		t.Fatalf("printed\n%s\nwant the reset line, %d calls and the summary", out, paceCalls)
	}
	var at, jobs []int
	for i, line := range lines[1 : paceCalls+1] {
		m := paceCall.FindStringSubmatch(line)
		if m == nil || m[1] != strconv.Itoa(i+1) {
			t.Fatalf("line %q: want call %d: job J by worker W at +T ms, after waiting D ms", line, i+1)
		}
		job, _ := strconv.Atoi(m[2])
		ms, _ := strconv.Atoi(m[4])
		jobs, at = append(jobs, job), append(at, ms)
	}
	slices.Sort(jobs)
	for i, job := range jobs {
		if job != i+1 {
			t.Fatalf("jobs called %v, want 1 to %d once each", jobs, paceCalls)
		}
	}
	closest := at[1] - at[0]
	for i := 2; i < len(at); i++ {
		closest = min(closest, at[i]-at[i-1])
	}
	span, want := at[len(at)-1]-at[0], (paceCalls-1)*paceInterval
	t.Logf("%s; by the calls' times: closest %d ms apart, first to last %d ms (want %d)", lines[len(lines)-1], closest, span, want)
	// The pace starts when the server admits the first call, which is
	// after the script's start (its +0) and before the first call's reply
	// reaches the script: its printed time is late by that reply's trip,
	// which a loaded machine makes longer than the jitter. So the calls are
	// held to a pace that starts at +0, which the server's can only follow.
	for i := range at {
		if ahead := i*paceInterval - at[i]; ahead > paceJitter {
			t.Errorf("call %d %d ms ahead of the pace, want at most %d:\n%s", i+1, ahead, paceJitter, out)
		}
	}
	if closest < paceInterval/2 {
		t.Errorf("two calls %d ms apart, want at least %d:\n%s", closest, paceInterval/2, out)
	}
	if span*10 < want*9 || span*10 > want*11 {
		t.Errorf("first to last call %d ms, want %d within 10%%:\n%s", span, want, out)
	}
}
