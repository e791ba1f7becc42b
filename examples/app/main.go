// Command app is the application of the compose and Kubernetes examples: an
// HTTP server whose GET /hello is rate-limited by cellserver through
// client.Middleware, 16 requests at once per client, then 30 a minute
// (CL.THROTTLE <key> 15 30 60).
//
// Environment: CELLSERVER_ADDR, where cellserver listens (default
// 127.0.0.1:6379); CELLSERVER_PASSWORD, its password (default none);
// APP_ADDR, where this server listens (default :8080). A client is its
// X-Api-Key header when it sends one, else its IP address. /healthz answers
// 200 without being limited. If cellserver is unreachable, /hello is served
// unlimited (the middleware fails open) and the error is logged.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cellserver/cellserver/client"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		slog.Error("app stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{
		Addr:     env("CELLSERVER_ADDR", "127.0.0.1:6379"),
		Password: os.Getenv("CELLSERVER_PASSWORD"),
		// A limiter that answers late is worse than none: give up quickly
		// and let the middleware fail open.
		DialTimeout:  time.Second,
		ReadTimeout:  250 * time.Millisecond,
		WriteTimeout: 250 * time.Millisecond,
		MaxRetries:   1,
	})
	defer rdb.Close()

	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("hello\n"))
	})
	mux := http.NewServeMux()
	mux.Handle("GET /hello", client.Middleware(client.NewLimiter(rdb), client.GCRA(15, 30, time.Minute), client.MiddlewareOptions{
		Key: clientKey,
		OnError: func(r *http.Request, err error) {
			slog.Warn("rate limiter unavailable; serving unlimited", "err", err)
		},
	}, hello))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})

	srv := &http.Server{Addr: env("APP_ADDR", ":8080"), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	slog.Info("serving", "addr", srv.Addr, "cellserver", rdb.Options().Addr)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// clientKey is the key a request counts against: its API key when it has
// one, else the IP address it comes from.
func clientKey(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return "hello:key:" + k
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "hello:ip:" + host
}

// env returns the environment variable name, or def when it is unset or
// empty.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
