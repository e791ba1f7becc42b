//go:build linux

package server

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// heldWaitMs is the longest a loop waits keeping its P (wait). Nothing
// else bounds such a wait when Go's asynchronous preemption is off
// (GODEBUG=asyncpreemptoff=1, gccheckmark=1): the collector stopping the
// world would wait for the loop's next client.
const heldWaitMs = 1

// yieldEvery is how often at most a loop that waits keeping its P yields
// it first (wait).
const yieldEvery = time.Millisecond

// holdsP reports whether an event loop whose server allows it
// (Config.LoopsHoldP) may wait keeping its P: only when the process has
// more Ps than loops, so that one at least is left for every other
// goroutine (the shared store's batcher and connections, the accept loop,
// timers, the collector's workers).
func holdsP(procs, loops int) bool { return procs > loops }

// epollWaitHeld is epoll_pwait(2) made without telling Go's scheduler that
// the thread is in a system call: the loop's thread keeps its P while it
// waits, msec milliseconds at most. A signal ends it too (EINTR): Go's
// preemption, when the collector stops the world or GOMAXPROCS changes.
func epollWaitHeld(epfd int, events []syscall.EpollEvent, msec int) (int, error) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// wait waits for the loop's sockets. Waiting as an ordinary system call, a
// loop that waits tens of microseconds between a batch of replies and the
// next requests has its P taken by Go's system monitor, and has to get a P
// back when the wait ends, often by parking its thread and waking another:
// context switches that cost more CPU a decision than the loop's own work
// in shared mode. So the loop waits keeping its P when its server allows
// it and the process has one to spare (holdsP), at most heldWaitMs; at
// most once every yieldEvery it first yields the P, so that what the P has
// queued (goroutines the loop's commands made ready, such as the shared
// store's batcher, and the P's timers) runs then, if no other P took it.
// A held wait that ended with nothing (nothing came, or a signal) is
// followed by an ordinary one, which gives the P up, and its queue with
// it: a goroutine the loop made ready and then waits for (a paused
// command's) waits heldWaitMs at most, even when the other Ps are busy,
// and an idle loop holds nothing. GOMAXPROCS is read again after each
// ordinary wait (changing it stops the world, which ends a held wait).
func (l *evloop) wait() (int, error) {
	if !l.hold {
		n, err := syscall.EpollWait(l.epfd, l.events[:], -1)
		l.hold = l.holdP && holdsP(runtime.GOMAXPROCS(0), l.loops)
		return n, err
	}
	if now := time.Since(l.born); now-l.yielded >= yieldEvery {
		l.yielded = now
		runtime.Gosched()
	}
	l.heldWaits.Add(1)
	n, err := epollWaitHeld(l.epfd, l.events[:], heldWaitMs)
	if n == 0 {
		l.hold = false
		l.heldEmpty.Add(1)
	}
	return n, err
}
