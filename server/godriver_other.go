//go:build !linux

package server

import (
	"net"
	"syscall"
)

// socketFor returns nil: writeNow has no way here to write without
// blocking.
func socketFor(net.Conn) syscall.RawConn { return nil }

// writeNow writes nothing: every write goes to the writer goroutine.
func (d *goDriver) writeNow([]byte) (int, error) { return 0, nil }

// discard is never called: sock is nil here.
func (d *goDriver) discard() (int, error) { return 0, nil }

// drain reads nothing: the client's bytes are read and dropped as serve
// reads on.
func (d *goDriver) drain() {}

// rawSocket is what writeNow keeps where it writes without blocking.
type rawSocket struct{}

// forget does nothing: nothing is known of the socket here.
func (w *rawSocket) forget() {}
