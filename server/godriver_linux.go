//go:build linux

package server

import (
	"crypto/tls"
	"io"
	"math"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// socketFor returns the raw socket under nc (under the TLS layer, for a
// *tls.Conn), for writeNow, discard and drain; nil if it has none. Under
// TLS it lifts the socket's TCP_NOTSENT_LOWAT (net.ipv4.tcp_notsent_lowat
// may set one), with which the kernel would block a write however much
// room its send buffer has: roomFor's check must be the only one.
func socketFor(nc net.Conn) syscall.RawConn {
	tc, isTLS := nc.(*tls.Conn)
	if isTLS {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	if isTLS {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotsentLowat, math.MaxInt32)
		}); err != nil || serr != nil {
			return nil // every write goes to the writer goroutine
		}
	}
	return rc
}

// tcpNotsentLowat is the TCP_NOTSENT_LOWAT socket option.
const tcpNotsentLowat = 25

// writeNow sends what of b the socket takes at once, without blocking, on
// serve's goroutine, so that the writer goroutine is only handed what the
// socket has no room for. A plain socket is written without waiting (its
// descriptor is non-blocking); a TLS connection, whose writes cannot be
// cut short, is written whole if the socket has room for all of it
// (roomFor), else not at all.
func (d *goDriver) writeNow(b []byte) (int, error) {
	if d.sock == nil {
		return 0, nil
	}
	tc, isTLS := d.nc.(*tls.Conn)
	if isTLS && !d.roomFor(len(b)) {
		return 0, nil
	}
	if d.writeDeadline { // the writer goroutine's for a write of its own: this one does not wait
		_ = d.nc.SetWriteDeadline(time.Time{})
		d.writeDeadline = false
	}
	if isTLS {
		return tc.Write(b)
	}
	w := &d.raw
	if w.step == nil {
		w.step = w.writeNow // once: a method value is an allocation
	}
	w.b, w.n, w.err = b, 0, nil
	err := d.sock.Write(w.step)
	n := w.n
	if err == nil {
		err = w.err
	}
	w.b, w.err = nil, nil
	return n, err
}

// rawSocket is what writeNow, roomFor, discard and drain keep to use the socket's
// descriptor without allocating: the write and its result, SO_MEMINFO's
// reply, drain's buffer, and their functions.
type rawSocket struct {
	b    []byte
	n    int
	err  error
	step func(fd uintptr) bool
	// For roomFor.
	info    [meminfoLen]uint32
	infoOK  bool
	inspect func(fd uintptr)
	room    int64 // what the send buffer has room for at least, in roomFor's bytes
	// For discard and drain.
	drained               []byte
	got                   int
	drainNow, discardWait func(fd uintptr) bool
}

// writeNow writes b to the descriptor, which is non-blocking, until it
// takes no more; it never asks to wait (the writer goroutine does).
func (w *rawSocket) writeNow(fd uintptr) bool {
	for w.n < len(w.b) {
		k, err := syscall.Write(int(fd), w.b[w.n:])
		if k > 0 {
			w.n += k
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil && err != syscall.EAGAIN {
			w.err = err
		}
		if err != nil || k <= 0 {
			break
		}
	}
	return true
}

// meminfo reads the socket's SO_MEMINFO into info.
func (w *rawSocket) meminfo(fd uintptr) {
	size := uint32(unsafe.Sizeof(w.info))
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.SOL_SOCKET, soMeminfo,
		uintptr(unsafe.Pointer(&w.info)), uintptr(unsafe.Pointer(&size)), 0)
	w.infoOK = e == 0 && size >= meminfoWmemQueue*4+4
}

// soMeminfo is SO_MEMINFO, and the indexes in its reply of the socket's
// send buffer and of the bytes queued in it (SK_MEMINFO_SNDBUF,
// SK_MEMINFO_WMEM_QUEUED).
const (
	soMeminfo        = 55
	meminfoSndbuf    = 3
	meminfoWmemQueue = 5
	meminfoLen       = 9
)

// roomFor reports whether the socket's send buffer has room for n bytes
// of plaintext once encrypted, so that a write of them does not block:
// the kernel blocks a write only while the bytes it holds for the socket
// (their buffers' sizes, about the bytes themselves) exceed its send
// buffer. The estimate doubles the bytes and adds a page, far more than a
// TLS record's overhead and the kernel's buffers take. The room is asked
// of the kernel (SO_MEMINFO) only when what it said last, less what was
// written since, is too little: the room only grows meanwhile, as the
// client takes bytes (a write of the writer goroutine's forgets it).
func (d *goDriver) roomFor(n int) bool {
	w := &d.raw
	need := 2*int64(n) + 4096
	if w.room < need {
		if w.inspect == nil {
			w.inspect = w.meminfo // once: a method value is an allocation
		}
		w.infoOK = false
		_ = d.sock.Control(w.inspect)
		w.room = 0
		if w.infoOK {
			w.room = int64(w.info[meminfoSndbuf]) - int64(w.info[meminfoWmemQueue])
		}
		if w.room < need {
			return false
		}
	}
	w.room -= need
	return true
}

// discard waits for bytes from a client whose connection ends once its
// replies are sent, and reads and drops them and whatever else has
// arrived, up to maxDrainReads reads of 64 KiB, as an event loop's drain
// does: left unread, they would make the close reset the connection,
// which drops the replies still on their way. It reads the socket itself,
// under TLS too, whose layer nothing reads any more: 64 KiB at a time,
// where a TLS read gives a record of 16. It returns how many bytes it
// dropped, and io.EOF or the error that ended the reads, or the deadline's
// (wake's, or the idle timeout's).
func (d *goDriver) discard() (int, error) {
	w := d.raw.drainer()
	w.got, w.err = 0, nil
	err := d.sock.Read(w.discardWait)
	if err == nil {
		err = w.err
	}
	return w.got, err
}

// drain reads and drops what has arrived from the client, without
// waiting, as serve closes the connection: what the client sent after
// serve last read, which would make the close reset the connection.
func (d *goDriver) drain() {
	if d.sock == nil {
		return
	}
	d.mu.Lock()
	if d.deadline { // a wake's, which cut the last read short: the socket would read nothing
		_ = d.nc.SetReadDeadline(time.Time{})
		d.deadline = false
	}
	d.mu.Unlock()
	_ = d.sock.Read(d.raw.drainer().drainNow)
}

// drainer readies w for discard and drain.
func (w *rawSocket) drainer() *rawSocket {
	if w.drained == nil {
		w.drained = make([]byte, 64<<10)
		w.drainNow, w.discardWait = w.drainStep(false), w.drainStep(true) // once: closures are allocations
	}
	return w
}

// drainStep returns a step for the socket's Read that reads the
// descriptor, which is non-blocking, until nothing more has arrived, at
// most maxDrainReads times, counting the bytes in got and an end of
// stream or an error in err; with wait, it asks to wait when nothing had
// arrived.
func (w *rawSocket) drainStep(wait bool) func(fd uintptr) bool {
	return func(fd uintptr) bool {
		for range maxDrainReads {
			n, err := syscall.Read(int(fd), w.drained)
			switch {
			case err == syscall.EINTR:
				continue
			case n > 0:
				w.got += n
				continue
			case err == syscall.EAGAIN:
				return !wait || w.got > 0
			case err == nil:
				w.err = io.EOF
			default:
				w.err = err
			}
			return true
		}
		return true
	}
}

// forget drops what roomFor knows of the send buffer's room: a write not
// its own is under way.
func (w *rawSocket) forget() { w.room = 0 }
