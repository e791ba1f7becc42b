//go:build linux

package server

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// yieldEvery is how often at most a loop that waits keeping its P yields
// it first (wait).
const yieldEvery = time.Millisecond

// holdsP reports whether an event loop whose server allows it
// (Config.LoopsHoldP) may wait keeping its P: only when the process has
// more Ps than loops, so that one at least is left for
// every other goroutine (the shared store's batcher and connections, the
// accept loop, timers, the collector's workers), and when Go may interrupt
// the wait (its asynchronous preemption, which GODEBUG=asyncpreemptoff=1
// turns off, signals a goroutine it must stop, as the collector does when
// it stops the world).
func holdsP(procs, loops int, asyncPreempt bool) bool { return asyncPreempt && procs > loops }

// asyncPreemption reports whether Go's asynchronous preemption is on in
// this process (GODEBUG, read at start-up, does not turn it off).
func asyncPreemption() bool {
	return !strings.Contains(os.Getenv("GODEBUG"), "asyncpreemptoff=1")
}

// epollWaitHeld is epoll_pwait(2) made without telling Go's scheduler that
// the thread is in a system call: the loop's thread keeps its P while it
// waits, with no timeout (a timeout would cost a timer armed per wait). A
// signal ends it (EINTR): Go's preemption, when the collector stops the
// world or the loop has run a long time, and any other.
func epollWaitHeld(epfd int, events []syscall.EpollEvent) (int, error) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), ^uintptr(0), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// wait waits for the loop's sockets. Waiting as an ordinary system call, a
// loop that waits tens of microseconds between a batch of replies and the
// next requests has its P taken by Go's system monitor, which then runs
// every 20 µs, and has to get a P back when the wait ends, often by parking
// its thread and waking another: context switches that cost more CPU a
// decision than the loop's own work in shared mode. So the loop waits
// keeping its P when its server allows it and the process has one to spare (holdsP; GOMAXPROCS can
// change while the loop runs), having first yielded it once, so that what
// the P has queued (goroutines the loop's commands made ready, such as the
// shared store's batcher, and the P's timers) runs now rather than when
// another P is free to take it. A wait that a signal interrupted is
// followed by an ordinary one, which gives the P up: a loop left idle
// holds its P only until the collector next stops the world.
func (l *evloop) wait() (int, error) {
	if l.interrupted || !l.holdP || !holdsP(runtime.GOMAXPROCS(0), l.loops, l.asyncPreempt) {
		l.interrupted = false
		return syscall.EpollWait(l.epfd, l.events[:], -1)
	}
	if now := time.Since(l.born); now-l.yielded >= yieldEvery {
		l.yielded = now
		runtime.Gosched()
	}
	l.heldWaits.Add(1)
	n, err := epollWaitHeld(l.epfd, l.events[:])
	l.interrupted = err == syscall.EINTR
	return n, err
}
