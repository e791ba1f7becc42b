//go:build !linux

package server

import (
	"net"
	"syscall"
)

// socketOf returns nil: writeNow has no way here to write without
// blocking.
func socketOf(net.Conn) syscall.RawConn { return nil }

// writeNow writes nothing: every write goes to the writer goroutine.
func (d *goDriver) writeNow([]byte) (int, error) { return 0, nil }

// rawWrite is what writeNow keeps where it writes without blocking.
type rawWrite struct{}
