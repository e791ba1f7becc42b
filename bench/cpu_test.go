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
