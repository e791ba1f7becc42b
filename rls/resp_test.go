package rls

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/server"
)

// serveRESP serves the Redis protocol over ts's engine on 127.0.0.1:0 and
// returns a client of it.
func serveRESP(t testing.TB, ts *testService) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cmds := commands.New(commands.Options{Engine: ts.eng, Logger: log})
	srv := server.New(server.Config{Handler: cmds, Logger: log})
	cmds.SetHost(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	t.Cleanup(func() {
		rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-served; !errors.Is(err, server.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		cmds.Close()
	})
	return rdb
}

// TestSameAsRESP: one limit through FW.THROTTLE or CL.THROTTLE over RESP
// and through RLS admits the same requests; the RLS key is an ordinary
// key, readable with GET and PTTL, shared with the commands, and reset by
// DEL.
func TestSameAsRESP(t *testing.T) {
	ts := startService(t, Options{})
	rdb := serveRESP(t, ts)
	ctx := context.Background()
	rls := func(k, v string) bool {
		resp := ts.call(t, &rlsv3.RateLimitRequest{Domain: "test", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc(k, v)}})
		return resp.OverallCode == ok
	}
	admitted := func(cmd ...any) bool {
		t.Helper()
		r, err := rdb.Do(ctx, cmd...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return r[0].(int64) == 0
	}
	// per_user is FW 2 per minute; cl is CL max_burst 2, 2 per second.
	families := []struct {
		k    string
		resp []any
	}{
		{"user", []any{"FW.THROTTLE", "resp:user", 2, 60}},
		{"cl", []any{"CL.THROTTLE", "resp:cl", 2, 2, 1}},
	}
	for _, f := range families {
		var viaRLS, viaRESP []bool
		for range 5 {
			viaRLS = append(viaRLS, rls(f.k, "same"))
			viaRESP = append(viaRESP, admitted(f.resp...))
		}
		for i := range viaRLS {
			if viaRLS[i] != viaRESP[i] {
				t.Fatalf("%s: RLS admitted %v, RESP %v", f.k, viaRLS, viaRESP)
			}
		}
	}

	// The RLS key is the commands' key: FW.THROTTLE on it counts with
	// RLS, PTTL reads it and DEL resets it.
	key := "rls:test|user=shared"
	if !rls("user", "shared") {
		t.Fatal("first RLS call limited")
	}
	if !admitted("FW.THROTTLE", key, 2, 60) || admitted("FW.THROTTLE", key, 2, 60) || rls("user", "shared") {
		t.Fatal("RLS and FW.THROTTLE do not count together")
	}
	if pttl, err := rdb.PTTL(ctx, key).Result(); err != nil || pttl <= 0 || pttl > time.Minute {
		t.Fatalf("PTTL %s: %v %v", key, pttl, err)
	}
	if n, err := rdb.Del(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("DEL %s: %d %v", key, n, err)
	}
	if !rls("user", "shared") {
		t.Fatal("limited after DEL")
	}
	// A CL key reads with GET (its TAT, as redis-cell keeps it).
	clKey := "rls:test|cl=get"
	if !rls("cl", "get") {
		t.Fatal("CL through RLS limited")
	}
	if v, err := rdb.Get(ctx, clKey).Result(); err != nil || v == "" {
		t.Fatalf("GET %s: %q %v", clKey, v, err)
	}
	if pttl, err := rdb.PTTL(ctx, clKey).Result(); err != nil || pttl <= 0 {
		t.Fatalf("PTTL %s: %v %v", clKey, pttl, err)
	}
}
