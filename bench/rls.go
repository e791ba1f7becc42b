package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The RLS test: Envoy's rate limit service (gRPC) on the cellserver that
// runs the other cellserver tests, against the same limit through
// FW.THROTTLE over RESP on the same key. The limit is far above any load,
// so that every call is admitted and counted.
const (
	rlsDomain = "bench"
	rlsEntry  = "user"
	rlsLimit  = 1_000_000_000 // per hour
	// rlsConns are the gRPC (HTTP/2) connections the -clients streams are
	// spread over, as a few Envoys would multiplex them.
	rlsConns = 4
	// rlsKey is the engine key the RLS limit keeps its count in for one
	// descriptor value (rls/config's state key), which the RESP test
	// counts on too.
	rlsKey = "rls:fw:{" + rlsDomain + "}|" + rlsEntry + "="
)

// rlsConfig is the --rls-config file: one fixed window of rlsLimit per
// hour for each value of rlsEntry.
var rlsConfig = fmt.Sprintf(`domain: %s
descriptors:
  - key: %s
    rate_limit: { unit: hour, requests_per_unit: %d }
`, rlsDomain, rlsEntry, rlsLimit)

// rlsArgs writes the RLS configuration into dir and returns the cellserver
// arguments that serve it on a loopback port free a moment ago, and that
// port's address.
func rlsArgs(dir string) (args []string, addr string, err error) {
	path := filepath.Join(dir, "rls.yaml")
	if err := os.WriteFile(path, []byte(rlsConfig), 0o644); err != nil {
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return []string{"--rls-addr", addr, "--rls-config", path}, addr, nil
}

// rlsValue is the descriptor value for key number k, as redis-benchmark
// writes __rand_int__ (12 digits), so that both tests count on the same keys.
func rlsValue(k int) string { return fmt.Sprintf("%012d", k) }

// rlsRequest is one request, one descriptor with value.
func rlsRequest(value string) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: rlsDomain, Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: rlsEntry, Value: value}},
	}}}
}

// dialRLS opens n gRPC connections to addr.
func dialRLS(addr string, n int) ([]*grpc.ClientConn, error) {
	var conns []*grpc.ClientConn
	for range n {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []*grpc.ClientConn) {
	for _, c := range conns {
		c.Close()
	}
}

// callRLS makes one call and fails unless it is admitted.
func callRLS(ctx context.Context, c rlsv3.RateLimitServiceClient, value string, opts ...grpc.CallOption) error {
	resp, err := c.ShouldRateLimit(ctx, rlsRequest(value), opts...)
	if err != nil {
		return err
	}
	if resp.OverallCode != rlsv3.RateLimitResponse_OK {
		return fmt.Errorf("user=%s refused: %v", value, resp)
	}
	return nil
}

// tryRLS makes one call to the service at addr, waiting for it to listen
// (it starts beside the RESP port, which answered already).
func tryRLS(ctx context.Context, addr string) error {
	conns, err := dialRLS(addr, 1)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return callRLS(ctx, rlsv3.NewRateLimitServiceClient(conns[0]), rlsValue(0), grpc.WaitForReady(true))
}

// runRLS is redis-benchmark's counterpart for RLS, at -P 1 only: s.clients
// concurrent streams over rlsConns connections make s.requests calls in
// all, each with one descriptor whose value is random among s.keyspace, and
// each waits for its answer before the next (gRPC has no pipelining). It
// returns the calls per second and their p50 and p99 in ms; a call that
// fails or is refused fails the run.
func runRLS(ctx context.Context, s benchSpec) (figures, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	conns, err := dialRLS(s.addr, rlsConns)
	if err != nil {
		return figures{}, err
	}
	defer closeAll(conns)
	clients := make([]rlsv3.RateLimitServiceClient, len(conns))
	for i, c := range conns {
		clients[i] = rlsv3.NewRateLimitServiceClient(c)
		// Connected before the clock starts, as redis-benchmark's are.
		if err := callRLS(ctx, clients[i], rlsValue(0), grpc.WaitForReady(true)); err != nil {
			return figures{}, fmt.Errorf("RLS at %s: %w", s.addr, err)
		}
	}
	var (
		next      atomic.Int64 // calls taken
		failed    atomic.Bool
		wg        sync.WaitGroup
		latencies = make([][]time.Duration, s.clients)
		errs      = make([]error, s.clients)
	)
	start := time.Now()
	for w := range s.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			own := make([]time.Duration, 0, s.requests/s.clients+1)
			for next.Add(1) <= int64(s.requests) && !failed.Load() {
				value := rlsValue(r.IntN(s.keyspace))
				t0 := time.Now()
				if err := callRLS(ctx, c, value); err != nil {
					errs[w] = err
					failed.Store(true)
					return
				}
				own = append(own, time.Since(t0))
			}
			latencies[w] = own
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return figures{}, fmt.Errorf("RLS at %s: no result within %v", s.addr, s.timeout())
		}
		return figures{}, fmt.Errorf("RLS at %s: %w", s.addr, err)
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	ms := func(q float64) float64 {
		return float64(all[min(len(all)-1, int(math.Floor(q*float64(len(all)))))].Nanoseconds()) / 1e6
	}
	return figures{rps: float64(len(all)) / elapsed.Seconds(), p50: ms(0.50), p99: ms(0.99)}, nil
}
