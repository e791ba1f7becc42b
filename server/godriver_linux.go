//go:build linux

package server

import (
	"crypto/tls"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// socketOf returns the raw socket under nc (under the TLS layer, for a
// *tls.Conn), for writeNow; nil if it has none.
func socketOf(nc net.Conn) syscall.RawConn {
	if tc, ok := nc.(*tls.Conn); ok {
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
	return rc
}

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
	if tc, ok := d.nc.(*tls.Conn); ok {
		if !d.roomFor(len(b)) {
			return 0, nil
		}
		if d.writeDeadline { // a write of the writer goroutine's set it
			_ = tc.SetWriteDeadline(time.Time{})
			d.writeDeadline = false
		}
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

// rawWrite is writeNow's write on the socket's descriptor, with its
// result, kept in the driver so that nothing is allocated a write.
type rawWrite struct {
	b    []byte
	n    int
	err  error
	step func(fd uintptr) bool
	// For roomFor.
	info    [meminfoLen]uint32
	infoOK  bool
	inspect func(fd uintptr)
}

// writeNow writes b to the descriptor, which is non-blocking, until it
// takes no more; it never asks to wait (the writer goroutine does).
func (w *rawWrite) writeNow(fd uintptr) bool {
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
func (w *rawWrite) meminfo(fd uintptr) {
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
// TLS record's overhead and the kernel's buffers take.
func (d *goDriver) roomFor(n int) bool {
	w := &d.raw
	if w.inspect == nil {
		w.inspect = w.meminfo // once: a method value is an allocation
	}
	w.infoOK = false
	_ = d.sock.Control(w.inspect)
	return w.infoOK && int64(w.info[meminfoWmemQueue])+2*int64(n)+4096 <= int64(w.info[meminfoSndbuf])
}
