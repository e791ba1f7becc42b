package main

import (
	"math"
	"time"

	"github.com/cellserver/cellserver/internal/procstat"
)

// processCPU is the CPU time, user and system, that process pid has used
// in all its threads, in µs (procstat.CPU: /proc counts it in clock ticks, usually 10 ms,
// so a run should take seconds). It is NaN where it cannot be read: no
// such process, no /proc (not Linux).
func processCPU(pid int) float64 {
	d, err := procstat.CPU(pid)
	if err != nil {
		return math.NaN()
	}
	return float64(d) / float64(time.Microsecond)
}

// cpuPerRequest is the CPU a process used between two readings of
// processCPU, in µs per request over requests; NaN when either is.
func cpuPerRequest(before, after float64, requests int) float64 {
	return (after - before) / float64(requests)
}
