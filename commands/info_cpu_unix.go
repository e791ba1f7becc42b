//go:build unix

package commands

import (
	"syscall"
	"time"
)

// cpuUsage returns the CPU time used by this process and by its waited-for
// children, as getrusage reports it.
func cpuUsage() (self, children cpuTime) {
	return rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
}

func rusage(who int) cpuTime {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return cpuTime{}
	}
	return cpuTime{sys: time.Duration(ru.Stime.Nano()), user: time.Duration(ru.Utime.Nano())}
}
