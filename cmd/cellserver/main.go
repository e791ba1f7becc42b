// Command cellserver is a standalone server that speaks the Redis protocol
// and answers rate-limit commands, first of all redis-cell's CL.THROTTLE.
//
// Every flag has an environment twin (CELLSERVER_*); a flag beats its twin.
// SIGINT or SIGTERM shuts the server down gracefully; a second one kills it.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/metrics"
	"github.com/cellserver/cellserver/server"
)

// version is cellserver's version, set at link time:
//
//	go build -ldflags "-X main.version=1.2.3" ./cmd/cellserver
var version = "dev"

// shutdownTimeout is how long a graceful shutdown waits for connections to
// finish before closing them.
const shutdownTimeout = 10 * time.Second

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the server could not start or failed while serving
	exitUsage = 2 // bad flags or environment
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, restore the default action: a second one
	// kills the process if the graceful shutdown hangs.
	context.AfterFunc(ctx, stop)
	// SIGHUP does not end the process, as it does not end Redis (a
	// closed terminal, a supervisor's reload): while the rate limit
	// service runs with --rls-config it reloads the configuration
	// (rlsServer.start relays it), and otherwise does nothing, the last
	// flush to the backing Redis included. Stopping the relay puts back
	// this.
	signal.Ignore(syscall.SIGHUP)
	code := runAlone(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runAlone is run for the process's only server, as cellserver's binary
// runs: its event loops may keep their Ps while they wait
// (server.Config.LoopsHoldP), which a process running several servers (the
// tests run several cellservers in one) must not let them do.
func runAlone(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	return runServer(ctx, args, env, stdout, stderr, nil, true)
}

// run is cellserver's whole life: it reads the configuration from args and
// env, serves until ctx is done, shuts down and returns the exit status. Logs
// go to stderr, --version to stdout. When ready is not nil, run sends it the
// address it listens on once it accepts connections; it must have room for
// that value or a reader. The process may run other servers beside it.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer, ready chan<- net.Addr) int {
	return runServer(ctx, args, env, stdout, stderr, ready, false)
}

// runServer is run, alone saying whether the server is its process's only
// one (runAlone).
func runServer(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer, ready chan<- net.Addr, alone bool) int {
	cfg, err := parseConfig(args, env, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case err != nil:
		return exitUsage
	case cfg.showVersion:
		fmt.Fprintf(stdout, "cellserver %s\n", version)
		return exitOK
	case cfg.command == commandPing:
		return ping(cfg, stdout, stderr)
	}
	cfg.loopsHoldP = alone
	return serve(ctx, cfg, newLogger(stderr, cfg.logFormat, cfg.logLevel), ready)
}

// serve wires the engine, the commands and the server as cfg says, serves
// until ctx is done, then shuts down gracefully and returns the exit status.
func serve(ctx context.Context, cfg config, log *slog.Logger, ready chan<- net.Addr) int {
	maxClients, err := adjustMaxClients(cfg.maxClients, log)
	if err != nil {
		log.Error("cannot serve any client", "err", err)
		return exitError
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		log.Error("cannot listen", "addr", cfg.addr, "err", err)
		return exitError
	}
	users, err := commands.LoadUsers(cfg.usersFile, cfg.requirepass)
	if err != nil {
		ln.Close()
		log.Error("cannot read the users", "err", err) // the error never quotes a password
		return exitError
	}
	var tlsConfig *tls.Config
	if cfg.tlsCertFile != "" {
		if tlsConfig, err = server.LoadTLS(cfg.tlsCertFile, cfg.tlsKeyFile, cfg.tlsCAFile); err != nil {
			ln.Close()
			log.Error("cannot load the TLS files", "err", err)
			return exitError
		}
	}
	eng := engine.New(engine.Options{
		Shards:       cfg.shards,
		TrackChanges: cfg.backingRedis != "" && !cfg.shared(),
		MaxMemory:    cfg.maxmemory,
	})
	defer eng.Close()
	// In shared mode every decision is made in the store, and eng decides
	// only while the store cannot be reached.
	var sh *shared
	if cfg.shared() {
		if sh, err = openShared(ctx, cfg, eng, log); err != nil {
			ln.Close()
			log.Error("cannot start in shared mode", "err", err)
			return exitError
		}
		defer sh.close()
	}
	// The backing store is opened once the server exists, so that /readyz
	// can answer while it loads; its figures are read through this pointer.
	var loadedBacking atomic.Pointer[backing]
	cmds := commands.New(commands.Options{
		Engine:               eng,
		Version:              version,
		Settings:             settings(cfg, ln.Addr(), maxClients),
		Logger:               log,
		Users:                users,
		SlowlogLogSlowerThan: cfg.slowlogSlowerThan,
		SlowlogMaxLen:        cfg.slowlogMaxLen,
		Persistence: func() []commands.Setting {
			if b := loadedBacking.Load(); b != nil {
				return b.info()
			}
			if sh != nil {
				return sh.info()
			}
			return nil
		},
		Store:        sh.commandsStore(),
		StoreTimeout: cfg.sharedTimeout,
	})
	defer cmds.Close() // after the server: no command runs against the store
	srv := server.New(server.Config{
		Addr:            ln.Addr().String(),
		Handler:         cmds,
		Logger:          log,
		ProtoMaxBulkLen: cfg.protoMaxBulkLen,
		MaxClients:      maxClients, // what CONFIG GET maxclients reports
		TLS:             tlsConfig,
		ProtectedMode:   cfg.protectedMode,
		PasswordSet:     users.PasswordSet(),
		IdleTimeout:     time.Duration(cfg.timeout) * time.Second,
		EventLoops:      cfg.eventLoops, // 0 means none, as in server.Config
		LoopsHoldP:      cfg.loopsHoldP,
	})
	cmds.SetHost(srv)

	// /readyz answers 503 until the server serves, which it does once the
	// start-up load from the backing store has ended: loaded, or failed
	// and retried behind while the instance decides from memory (an
	// outage of the store must not take every instance out of service),
	// or, with --backing-required, only loaded. Shared mode serves once
	// started, the store reached or not.
	rs, err := newRLS(cfg, eng, sh, tlsConfig, log)
	if err != nil {
		ln.Close()
		log.Error("cannot start the rate limit service", "addr", cfg.rlsAddr, "err", err)
		return exitError
	}
	var collectors []prometheus.Collector
	if rs != nil {
		collectors = append(collectors, rs.svc.Collector())
	}
	var serving atomic.Bool // set once commands are served
	ms, err := startMetrics(cfg.metricsAddr, rs.jsonHandler(metrics.NewHandler(metrics.Options{
		Commands: cmds, Engine: eng, Host: srv, Ready: serving.Load,
		Persistence: func() []metrics.Sample {
			if b := loadedBacking.Load(); b != nil {
				return b.samples()
			}
			if sh != nil {
				return sh.samples()
			}
			return nil
		},
		Collectors: collectors,
		TopKeys:    cfg.metricsTopKeys,
	}), serving.Load), log)
	if err != nil {
		ln.Close()
		rs.stop(ctx)
		log.Error("cannot listen for metrics", "addr", cfg.metricsAddr, "err", err)
		return exitError
	}
	// From here every way out stops ms with stopOthers.

	// Every key is loaded before the first command is served, unless the
	// first attempt fails.
	bk, err := openBacking(ctx, cfg, eng, log)
	if err != nil {
		ln.Close()
		stopOthers(rs, ms)
		if ctx.Err() != nil {
			log.Info("stopped while loading the backing store")
			return exitOK
		}
		log.Error("cannot start without the backing store (--backing-required)", "err", err)
		return exitError
	}
	if bk != nil {
		loadedBacking.Store(bk)
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	rs.start(cfg, log) // stopped by stopOthers, on both ways out below
	serving.Store(true)
	log.Info("cellserver started", "addr", ln.Addr().String(), "shards", eng.Shards(), "version", version)
	if ready != nil {
		ready <- ln.Addr()
	}

	select {
	case err := <-served:
		// Serve returns before a shutdown only when accepting failed.
		log.Error("server stopped", "err", err)
		srv.Close()
		stopOthers(rs, ms)
		if bk != nil {
			bk.close(cfg.shutdownFlushTimeout)
		}
		return exitError
	case <-ctx.Done():
	}

	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("graceful shutdown timed out; closing the remaining connections", "err", err)
		srv.Close()
	}
	code := exitOK
	if err := <-served; err != nil && !errors.Is(err, server.ErrServerClosed) {
		log.Error("server stopped", "err", err)
		code = exitError
	}
	// The requests have stopped, those of the rate limit service and of
	// /json too: what they changed goes to the backing Redis before the
	// process ends.
	stopOthers(rs, ms)
	if bk != nil && bk.close(cfg.shutdownFlushTimeout) != nil {
		code = exitError
	}
	log.Info("stopped")
	return code
}

// stopOthers stops the ways in besides the Redis protocol's, the rate limit
// service and the metrics server (its /json), letting their requests under
// way finish within shutdownTimeout: before the last flush to the backing
// Redis, so that what they changed is in it.
func stopOthers(rs *rlsServer, ms *metricsServer) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	rs.stop(ctx)
	ms.stop(ctx)
}
