// Package procstat reads a process's CPU time from Linux's /proc, for the
// bench and for measurements: utime + stime of /proc/PID/stat, in all the
// process's threads.
package procstat

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CPU is the CPU time, user and system, that process pid has used in all
// its threads. /proc counts it in clock ticks (10 ms at Linux's 100 a
// second), so a measurement should take seconds. It fails where it cannot
// be read: no such process, no /proc (not Linux).
func CPU(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("procstat: no process %d", pid)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return ParseStat(b, time.Second/time.Duration(ClockTicksPerSecond()))
}

// ParseStat reads utime and stime (fields 14 and 15) of a /proc/PID/stat
// line, counted in ticks of tick. The command name, field 2, is in
// parentheses and may hold spaces and parentheses itself: fields are
// counted from the last ')'.
func ParseStat(b []byte, tick time.Duration) (time.Duration, error) {
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

// ClockTicksPerSecond is what sysconf(_SC_CLK_TCK) returns, read where
// glibc reads it, from the aux vector (AT_CLKTCK in /proc/self/auxv), since
// Go cannot call sysconf without cgo; Linux's USER_HZ, 100, when the vector
// cannot be read.
// The vector is read once: the rate never changes while the system runs.
var ClockTicksPerSecond = sync.OnceValue(func() int {
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
