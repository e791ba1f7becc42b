package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/internal/testenv"
	"github.com/cellserver/cellserver/server"
)

// needTool returns the path of a program the test needs, skipping the
// test where it is missing, or failing it in CI.
func needTool(t *testing.T, name string) string {
	t.Helper()
	return testenv.NeedTool(t, name, "apt-get install "+aptPackage(name))
}

// startTestRedis starts a redis-server for the test, through bench's own
// supervisor, and returns its address; the test's cleanup stops it.
func startTestRedis(t *testing.T) string {
	t.Helper()
	path := needTool(t, "redis-server")
	sup := newSupervisor(io.Discard)
	t.Cleanup(sup.stopAll)
	p, err := sup.startRedis(context.Background(), path, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p.addr
}

// startTestCellserver serves cellserver in this process, wired as
// cmd/cellserver wires it with its defaults, on a free loopback port; the
// test's cleanup shuts it down.
func startTestCellserver(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng := engine.New(engine.Options{})
	cmds := commands.New(commands.Options{Engine: eng, Logger: log, SlowlogLogSlowerThan: 10000, SlowlogMaxLen: 128})
	srv := server.New(server.Config{Addr: ln.Addr().String(), Handler: cmds, Logger: log,
		EventLoops: server.DefaultEventLoops}) // as cellserver serves by default
	cmds.SetHost(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, server.ErrServerClosed) {
			tb.Errorf("Serve: %v", err)
		}
		eng.Close()
	})
	return ln.Addr().String()
}
