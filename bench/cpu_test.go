package main

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with a space and a parenthesis, as /proc shows one.
	line := "4242 (cell server) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 37 0 0 20 0 5 0 100 1000000 200 18446744073709551615\n"
	got, err := parseStat([]byte(line), 10*time.Millisecond)
	if err != nil || got != 2870*time.Millisecond {
		t.Errorf("parseStat = %v, %v; want 2.87s (287 ticks of 10ms)", got, err)
	}
	for _, bad := range []string{"", "4242 (x S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 u 37 0"} {
		if _, err := parseStat([]byte(bad), 10*time.Millisecond); err == nil {
			t.Errorf("parseStat(%q) did not fail", bad)
		}
	}
}

// TestProcessCPU reads this process's own CPU time, which a busy loop
// makes grow.
func TestProcessCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if n := clockTicksPerSecond(); n < 1 {
		t.Fatalf("clockTicksPerSecond() = %d", n)
	}
	before := processCPU(os.Getpid())
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	after := processCPU(os.Getpid())
	if math.IsNaN(before) || !(after > before) {
		t.Errorf("CPU time %v µs, then %v µs after 50ms busy", before, after)
	}
	if !math.IsNaN(processCPU(0)) {
		t.Errorf("processCPU(0) is not NaN")
	}
}
