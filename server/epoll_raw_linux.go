//go:build linux

package server

import (
	"runtime"
	"syscall"
	"unsafe"
)

// heldWaitMs is the longest an event loop waits for its sockets while
// keeping its P (epollWaitHeld); past it, the loop waits as an ordinary
// system call, which gives the P back, so that an idle loop holds nothing.
const heldWaitMs = 1

// holdsP reports whether an event loop may wait keeping its P: only when
// the process has more Ps than loops, so that one at least is left for
// every other goroutine (the shared store's batcher and connections, the
// accept loop, timers, the collector's workers).
func holdsP(procs, loops int) bool { return procs > loops }

// epollWaitHeld is epoll_pwait(2) made without telling Go's scheduler that
// the thread is in a system call: the loop's thread keeps its P while it
// waits, at most msec milliseconds. Waiting as an ordinary system call, a
// loop that waits tens of microseconds between a batch of replies and the
// next requests has its P taken by Go's system monitor, which then runs
// every 20 µs, and has to get a P back when the wait ends, often by
// parking its thread and waking another: context switches that cost more
// CPU a request than the loop's own work in shared mode. A goroutine
// stopping the world interrupts the wait with a signal (EINTR), as it
// preempts any running goroutine.
func epollWaitHeld(epfd int, events []syscall.EpollEvent, msec int) (int, error) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// wait waits for the loop's sockets: first keeping its P, when the process
// has a P to spare (GOMAXPROCS can change while the loop runs), then, if
// nothing came within heldWaitMs, as an ordinary system call. Before a
// wait that keeps the P, the loop yields it once, so that what the P has
// queued (goroutines the loop's commands made ready, such as the shared
// store's batcher, and its timers) runs now rather than when another P is
// free to take it.
func (l *evloop) wait() (int, error) {
	if holdsP(runtime.GOMAXPROCS(0), l.loops) {
		runtime.Gosched()
		l.heldWaits.Add(1)
		n, err := epollWaitHeld(l.epfd, l.events[:], heldWaitMs)
		if err != nil || n > 0 {
			return n, err
		}
	}
	return syscall.EpollWait(l.epfd, l.events[:], -1)
}
