package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// metricsServer serves /metrics, /healthz and /readyz on their own address.
type metricsServer struct {
	srv  *http.Server
	done chan struct{}
}

// startMetrics listens on addr and serves h until stop; nil when addr is
// empty.
func startMetrics(addr string, h http.Handler, log *slog.Logger) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	m := &metricsServer{
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return m, nil
}

// stop shuts the metrics server down, letting the requests under way (a
// /json decision waiting on the shared store) finish until ctx is done,
// then closes what remains, and waits for it.
func (m *metricsServer) stop(ctx context.Context) {
	if m == nil {
		return
	}
	if err := m.srv.Shutdown(ctx); err != nil {
		m.srv.Close()
	}
	<-m.done
}
