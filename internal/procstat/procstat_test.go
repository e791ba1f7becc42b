package procstat

import (
	"os"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
)

func TestParseStat(t *testing.T) {
	// A command name with a space and a parenthesis, as /proc shows one.
	line := "4242 (cell server) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 37 0 0 20 0 5 0 100 1000000 200 18446744073709551615\n"
	got, err := ParseStat([]byte(line), 10*time.Millisecond)
	if err != nil || got != 2870*time.Millisecond {
		t.Errorf("ParseStat = %v, %v; want 2.87s (287 ticks of 10ms)", got, err)
	}
	for _, bad := range []string{"", "4242 (x S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 u 37 0"} {
		if _, err := ParseStat([]byte(bad), 10*time.Millisecond); err == nil {
			t.Errorf("ParseStat(%q) did not fail", bad)
		}
	}
}

// TestCPU reads this process's own CPU time, which a busy loop makes
// grow.
func TestCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		testenv.SkipOrFail(t, "no /proc")
	}
	if n := ClockTicksPerSecond(); n < 1 {
		t.Fatalf("ClockTicksPerSecond() = %d", n)
	}
	before, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	after, err := CPU(os.Getpid())
	if err != nil || !(after > before) {
		t.Errorf("CPU time %v, then %v, %v after 50ms busy", before, after, err)
	}
	if _, err := CPU(0); err == nil {
		t.Errorf("CPU(0) did not fail")
	}
}
