//go:build !linux

package server

import (
	"context"
	"net"
)

// haveEventLoops reports whether this system has event loops: not this
// one, where every connection has a goroutine.
const haveEventLoops = false

// loopGroup stands for the event loops this system does not have.
type loopGroup struct{}

func newLoopGroup(*Server, int) (*loopGroup, error) { return nil, nil }

func (g *loopGroup) take(net.Conn, *session) bool { return false }

func (g *loopGroup) stop() {}

func (g *loopGroup) wait(context.Context) error { return nil }
