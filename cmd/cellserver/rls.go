package main

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/rls"
	rlsconfig "github.com/cellserver/cellserver/rls/config"
)

// rlsReloadEvery is how often the RLS configuration file is checked for a
// change.
const rlsReloadEvery = time.Second

// rlsServer is Envoy's rate limit service on its own gRPC address, with
// what reloads its configuration.
type rlsServer struct {
	svc     *rls.Service
	ln      net.Listener
	grpc    *grpc.Server
	watcher *rlsconfig.Watcher // nil without --rls-config
	cancel  context.CancelFunc // stops the reloads
	wg      sync.WaitGroup     // the server, the watcher and SIGHUP's relay
}

// newRLS makes the service cfg asks for, deciding in sh's store in shared
// mode and in eng otherwise, and listens on --rls-addr; nil without
// --rls-addr. It does not serve until start.
func newRLS(cfg config, eng *engine.Engine, sh *shared, tlsConfig *tls.Config, log *slog.Logger) (*rlsServer, error) {
	if cfg.rlsAddr == "" {
		return nil, nil
	}
	var (
		svc     *rls.Service // set below, before the watcher runs
		limits  rls.Matcher
		watcher *rlsconfig.Watcher
	)
	if cfg.rlsConfig != "" {
		// The one loader of the configuration: this first load, then every
		// reload (a change seen, or SIGHUP) from the watcher's goroutine,
		// one at a time and in order.
		loaded := func() { log.Info("rate limit configuration loaded", "path", cfg.rlsConfig) }
		watcher = rlsconfig.NewWatcher(cfg.rlsConfig, rlsReloadEvery,
			func(c *rlsconfig.Config) {
				svc.SetLimits(configMatcher{c})
				loaded()
			},
			func(err error) {
				log.Error("rate limit configuration not loaded; the previous one stays", "path", cfg.rlsConfig, "err", err)
			})
		c, err := watcher.Load()
		if err != nil {
			return nil, err
		}
		limits = configMatcher{c}
		loaded()
	} else {
		log.Warn("--rls-addr without --rls-config: every descriptor is answered OK")
	}
	decider := rls.EngineDecider(eng)
	if sh != nil {
		decider = rls.StoreDecider(sh.store.Shared)
	}
	svc = rls.New(rls.Options{
		Decider:         decider,
		Limits:          limits,
		Timeout:         cfg.rlsTimeout,
		ResponseHeaders: cfg.rlsResponseHeaders,
		LimitHeader:     cfg.rlsLimitHeader,
		RemainingHeader: cfg.rlsRemainingHeader,
		ResetHeader:     cfg.rlsResetHeader,
	})
	ln, err := net.Listen("tcp", cfg.rlsAddr)
	if err != nil {
		return nil, err
	}
	var opts []grpc.ServerOption
	if tlsConfig != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig.Clone())))
	}
	g := grpc.NewServer(opts...)
	svc.Register(g)
	return &rlsServer{svc: svc, ln: ln, grpc: g, watcher: watcher}, nil
}

// jsonHandler mounts /json beside h (the metrics handler); h alone without
// the service. /json answers 503 until ready reports true: the metrics
// server listens while the backing store loads, and a decision made then,
// on a keyspace not yet loaded, would admit what the store has spent.
func (r *rlsServer) jsonHandler(h http.Handler, ready func() bool) http.Handler {
	if r == nil {
		return h
	}
	decide := r.svc.JSONHandler()
	mux := http.NewServeMux()
	mux.HandleFunc("/json", func(w http.ResponseWriter, req *http.Request) {
		if !ready() {
			http.Error(w, "not ready: the backing store is loading", http.StatusServiceUnavailable)
			return
		}
		decide.ServeHTTP(w, req)
	})
	mux.Handle("/", h)
	return mux
}

// start serves, and reloads the configuration when its file changes
// (checked every second) and on SIGHUP.
func (r *rlsServer) start(cfg config, log *slog.Logger) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.grpc.Serve(r.ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			log.Error("rate limit service stopped", "err", err)
		}
	}()
	log.Info("serving Envoy's rate limit service", "addr", r.ln.Addr().String(), "config", cfg.rlsConfig)
	if r.watcher == nil {
		return
	}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		r.watcher.Run(ctx)
	}()
	// SIGHUP only asks the watcher to reload: its goroutine does the
	// loading, so a reload never races another. Before and after (while
	// the backing store loads, during the last flush) the process ignores
	// SIGHUP (main).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer r.wg.Done()
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				r.watcher.Reload()
			}
		}
	}()
}

// stop lets the requests under way finish, up to ctx's deadline, then
// closes what remains, and waits for the reloaders.
func (r *rlsServer) stop(ctx context.Context) {
	if r == nil {
		return
	}
	if r.cancel != nil {
		r.cancel()
	} else {
		r.ln.Close() // never served: Serve would have closed it
	}
	stopped := make(chan struct{})
	go func() {
		r.grpc.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		r.grpc.Stop()
		<-stopped
	}
	r.wg.Wait()
}
