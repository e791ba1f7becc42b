//go:build linux

package server

import (
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestDrainAfterWokenRead: the drain as serve closes a connection reads
// what the client sent after serve's last read, though a wake-up (the
// last write's end, Shutdown) cut that read short with a deadline in the
// past.
func TestDrainAfterWokenRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	d := newGoDriver(sc)
	d.mu.Lock()
	d.reading = true // as read sets it before a Read, which wake cuts short
	d.mu.Unlock()
	d.wake()
	<-d.woken
	const n = 1000
	if _, err := cl.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testTimeout); unread(t, d.sock) < n; {
		if time.Now().After(deadline) {
			t.Fatal("the client's bytes never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	d.drain()
	if left := unread(t, d.sock); left != 0 {
		t.Fatalf("the drain left %d of %d bytes unread: the close would reset the connection", left, n)
	}
}

// unread is how many bytes wait unread in the socket (FIONREAD).
func unread(t *testing.T, rc syscall.RawConn) int {
	t.Helper()
	var n int32
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil {
		t.Fatal(err)
	}
	if errno != 0 {
		t.Fatal(errno)
	}
	return int(n)
}
