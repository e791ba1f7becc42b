package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// processCPU is the CPU time, user and system, that process pid has used
// in all its threads, in µs: utime + stime from /proc/PID/stat, which
// counts in clock ticks (10 ms at Linux's 100 a second, so a run should
// take seconds). It is NaN where it cannot be read: no such process, no
// /proc (not Linux).
func processCPU(pid int) float64 {
	if pid <= 0 {
		return math.NaN()
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return math.NaN()
	}
	d, err := parseStat(b, time.Second/time.Duration(clockTicksPerSecond()))
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

// parseStat reads utime and stime (fields 14 and 15) of a /proc/PID/stat
// line, counted in ticks of tick. The command name, field 2, is in
// parentheses and may hold spaces and parentheses itself: fields are
// counted from the last ')'.
func parseStat(b []byte, tick time.Duration) (time.Duration, error) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line %q", s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat line %q", s)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat line %q", s)
	}
	return time.Duration(utime+stime) * tick, nil
}

// atClkTck is the aux vector entry that holds the clock ticks per second.
const atClkTck = 17

// clockTicksPerSecond is what sysconf(_SC_CLK_TCK) returns, read where
// glibc reads it, from the aux vector (AT_CLKTCK in /proc/self/auxv), since
// Go cannot call sysconf without cgo; Linux's USER_HZ, 100, when the vector
// cannot be read.
// The vector is read once: the rate never changes while the system runs.
var clockTicksPerSecond = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100
	}
	word := strconv.IntSize / 8
	for ; len(b) >= 2*word; b = b[2*word:] {
		key, val := auxWord(b, word), auxWord(b[word:], word)
		if key == atClkTck && val > 0 && val <= 1_000_000 {
			return int(val)
		}
		if key == 0 { // AT_NULL ends the vector
			break
		}
	}
	return 100
})

// auxWord is the aux vector word at the start of b, word bytes long.
func auxWord(b []byte, word int) uint64 {
	if word == 4 {
		return uint64(binary.NativeEndian.Uint32(b))
	}
	return binary.NativeEndian.Uint64(b)
}
