//go:build !linux

package server

import "sync/atomic"

// countLoopWrites does nothing: there are no event loops here.
func countLoopWrites(*Server, *atomic.Int64) {}
