package main

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/cellserver/cellserver/persist/redistest"
)

// rlsSharedConfig is the configuration of the shared-mode RLS tests: one
// descriptor of 100 an hour, and two of 100 and 150 for requests that
// carry both.
const rlsSharedConfig = `domain: d
descriptors:
  - key: one
    rate_limit: { unit: hour, requests_per_unit: 100 }
  - key: a
    rate_limit: { unit: hour, requests_per_unit: 100 }
  - key: b
    rate_limit: { unit: hour, requests_per_unit: 150 }
`

// rlsInstance is one cellserver with the rate limit service: its Redis
// protocol address and a gRPC client of its RLS port.
type rlsInstance struct {
	addr   string
	client rlsv3.RateLimitServiceClient
}

// startSharedRLS starts three cellservers in shared mode on the store at
// url, each serving RLS with rlsSharedConfig.
func startSharedRLS(t *testing.T, url string) []rlsInstance {
	t.Helper()
	var out []rlsInstance
	for range 3 {
		out = append(out, startRLS(t, rlsSharedConfig, sharedArgs(url)...))
	}
	return out
}

// startRLS starts a cellserver with args, the rate limit service on a free
// port and config as its --rls-config, and returns it with a gRPC client.
func startRLS(t *testing.T, config string, args ...string) rlsInstance {
	t.Helper()
	path := t.TempDir() + "/limits.yaml"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	rlsAddr := freeAddr(t)
	r := startRun(t, append(args, "--rls-addr", rlsAddr, "--rls-config", path), nil)
	conn, err := grpc.NewClient(rlsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return rlsInstance{addr: r.addr, client: rlsv3.NewRateLimitServiceClient(conn)}
}

// rlsRequest is a request of domain d with one descriptor per key, each
// with the value v.
func rlsRequest(keys ...string) *rlsv3.RateLimitRequest {
	req := &rlsv3.RateLimitRequest{Domain: "d"}
	for _, k := range keys {
		req.Descriptors = append(req.Descriptors, &ratelimitv3.RateLimitDescriptor{
			Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: k, Value: "v"}}})
	}
	return req
}

// admitRLS sends req from 50 concurrent callers spread over the
// instances, 6 times each (300 requests), and returns how many were OK.
func admitRLS(t *testing.T, instances []rlsInstance, req *rlsv3.RateLimitRequest) int64 {
	t.Helper()
	const callers, calls = 50, 6
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for c := range callers {
		client := instances[c%len(instances)].client
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := client.ShouldRateLimit(ctx, req)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				if resp.OverallCode == rlsv3.RateLimitResponse_OK {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return admitted.Load()
}

// remaining reads descriptor key's limit_remaining without counting
// (hits_addend 0).
func remaining(t *testing.T, in rlsInstance, key string) uint32 {
	t.Helper()
	req := rlsRequest(key)
	req.Descriptors[0].HitsAddend = wrapperspb.UInt64(0)
	resp, err := in.client.ShouldRateLimit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Statuses[0].LimitRemaining
}

// checkTwoDescriptors: requests carrying descriptors a (100 an hour) and b
// (150) from three instances are admitted exactly 100 times, and b's key
// holds exactly those 100: no refused request counted under it.
func checkTwoDescriptors(t *testing.T, instances []rlsInstance) {
	t.Helper()
	if got := admitRLS(t, instances, rlsRequest("a", "b")); got != 100 {
		t.Errorf("two descriptors: %d admitted over three instances, want exactly 100", got)
	}
	if got := remaining(t, instances[1], "b"); got != 50 {
		t.Errorf("descriptor b has %d of 150 left, want 50: a refused request counted under it", got)
	}
	rdb := newClient(t, instances[2].addr)
	keys, err := rdb.Keys(context.Background(), "rls:fw:*b=v").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("KEYS rls:fw:*b=v = %q, %v", keys, err)
	}
	if r := peek(t, rdb, "FW.THROTTLE", keys[0], 150, "1h", 0); r[2] != 50 {
		t.Errorf("FW.THROTTLE %s has %d of 150 left, want 50", keys[0], r[2])
	}
}

// TestRunRLSSharedExact: three cellservers in shared mode on one Redis,
// asked over gRPC by 50 concurrent callers, admit exactly the limit in
// total, and decide a request's two descriptors all or nothing.
func TestRunRLSSharedExact(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	instances := startSharedRLS(t, store.URL())
	if got := admitRLS(t, instances, rlsRequest("one")); got != 100 {
		t.Errorf("one descriptor: %d admitted over three instances, want exactly 100", got)
	}
	checkTwoDescriptors(t, instances)
	addrs := make([]string, len(instances))
	for i, in := range instances {
		addrs[i] = in.addr
	}
	checkNoFallback(t, addrs)
}

// TestRunRLSSharedCluster: the same on a three-node Redis Cluster. The
// descriptors' keys would fall in different slots (CROSSSLOT, answered
// UNAVAILABLE) but for the domain, their common hash tag.
func TestRunRLSSharedCluster(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartCluster(t, 3)
	ctx := context.Background()
	node := nodes[0].Client(t)
	untagged := [2]string{"t:rls:fw:d|a=v", "t:rls:fw:d|b=v"}
	if a, b := node.ClusterKeySlot(ctx, untagged[0]).Val(), node.ClusterKeySlot(ctx, untagged[1]).Val(); a == b {
		t.Fatalf("%q and %q share slot %d: the test would prove nothing", untagged[0], untagged[1], a)
	}
	instances := startSharedRLS(t, clusterURL(nodes))
	resp, err := instances[0].client.ShouldRateLimit(ctx, rlsRequest("a", "b"))
	if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("two descriptors on a cluster: %v, %v; want OK", resp, err)
	}
	if got := admitRLS(t, instances, rlsRequest("one")); got != 100 {
		t.Errorf("one descriptor: %d admitted over three instances, want exactly 100", got)
	}
	// The first request took one of a's 100.
	if got := admitRLS(t, instances, rlsRequest("a", "b")); got != 99 {
		t.Errorf("two descriptors: %d admitted after one, want exactly 99", got)
	}
	if got := remaining(t, instances[1], "b"); got != 50 {
		t.Errorf("descriptor b has %d of 150 left, want 50: a refused request counted under it", got)
	}
}
