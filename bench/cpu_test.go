package main

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
)

// TestProcessCPU reads this process's own CPU time, which a busy loop
// makes grow.
func TestProcessCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		testenv.SkipOrFail(t, "no /proc")
	}
	// The kernel counts in ticks (10 ms), and a loaded machine may give
	// the loop little of its wall time: it runs until the count grows, or
	// for 10 s at most.
	before := processCPU(os.Getpid())
	if math.IsNaN(before) {
		t.Fatal("processCPU of this process is NaN")
	}
	after := before
	for start := time.Now(); !(after > before) && time.Since(start) < 10*time.Second; {
		for spin := time.Now(); time.Since(spin) < 20*time.Millisecond; {
		}
		after = processCPU(os.Getpid())
	}
	if !(after > before) {
		t.Errorf("CPU time %v µs, then %v µs after 10s busy", before, after)
	}
	if !math.IsNaN(processCPU(0)) {
		t.Errorf("processCPU(0) is not NaN")
	}
}
