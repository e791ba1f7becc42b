package client

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/server"
	"github.com/redis/go-redis/v9"
)

// testServer is a real cellserver on a free loopback port, wired as
// cmd/cellserver wires it, on a fake clock (startServer) or on the wall
// clock (startWallClockServer).
type testServer struct {
	addr  string
	clock *engine.ManualClock // nil on the wall clock
	stop  func()              // shuts the server down and waits for it; cleanup calls it too
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	clock := engine.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := startServerOn(t, clock.Now)
	s.clock = clock
	return s
}

// startWallClockServer is a server on time.Now, for the tests of Wait,
// whose timers run on the wall clock.
func startWallClockServer(t *testing.T) *testServer {
	t.Helper()
	return startServerOn(t, nil)
}

// startServerOn starts a server whose clock is now (nil: time.Now).
func startServerOn(t *testing.T, now func() time.Time) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	eng := engine.New(engine.Options{Now: now})
	cmds := commands.New(commands.Options{Engine: eng, Logger: log})
	srv := server.New(server.Config{Handler: cmds, Logger: log})
	cmds.SetHost(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stop := sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, server.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		eng.Close()
	})
	t.Cleanup(stop)
	return &testServer{addr: ln.Addr().String(), stop: stop}
}

// limiter returns a Limiter on a go-redis client of the server that does
// not retry, so that a stopped server fails a call at once.
func (s *testServer) limiter(t *testing.T) *Limiter {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return NewLimiter(rdb)
}
