//go:build !linux

package server

import "context"

// haveEventLoops reports whether this system has event loops: not this
// one, where every connection has a goroutine.
const haveEventLoops = false

// loopGroup stands for the event loops this system does not have.
type loopGroup struct{}

// evloop stands for an event loop.
type evloop struct{}

// loopState stands for a connection's state on its loop.
type loopState struct{}

func newLoopGroup(*Server, int) (*loopGroup, error) { return nil, nil }

func (g *loopGroup) take(*conn) bool { return false }

func (g *loopGroup) stop() {}

func (g *loopGroup) wait(context.Context) error { return nil }

func (l *evloop) send(*conn) error { return nil }

func (ls *loopState) shutdownSocket() error { return nil }
