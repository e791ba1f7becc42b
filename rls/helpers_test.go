package rls

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/cellserver/cellserver/engine"
)

// testRule is one limit of testMatcher: entries match a descriptor's
// entries one for one, by key; a value "" matches any value (each value
// its own key), a value ending in "*" any value with that prefix.
type testRule struct {
	domain  string
	entries []Entry
	limit   Limit // its Rule's Key is filled in per match
}

// testMatcher stands for rls/config in these tests: a list of rules, the
// first that matches wins, keyed as the configuration keys ("rls:...").
type testMatcher []testRule

func (m testMatcher) Match(domain string, entries []Entry) *Limit {
	for _, r := range m {
		if r.domain != domain || len(r.entries) != len(entries) {
			continue
		}
		ok := true
		for i, p := range r.entries {
			e := entries[i]
			switch {
			case p.Key != e.Key:
				ok = false
			case p.Value == "":
			case strings.HasSuffix(p.Value, "*"):
				ok = strings.HasPrefix(e.Value, strings.TrimSuffix(p.Value, "*"))
			default:
				ok = p.Value == e.Value
			}
			if !ok {
				break
			}
		}
		if !ok {
			continue
		}
		l := r.limit
		var key strings.Builder
		key.WriteString("rls:" + domain)
		for _, e := range entries {
			key.WriteString("|" + e.Key + "=" + e.Value)
		}
		l.Rule.Key = []byte(key.String())
		return &l
	}
	return nil
}

// fw is a fixed-window limit of n per unit.
func fw(name string, n uint32, unit rlsv3.RateLimitResponse_RateLimit_Unit, window time.Duration) Limit {
	return Limit{Name: name, RequestsPerUnit: n, Unit: unit, MetricKey: name,
		Rule: engine.Rule{Family: engine.FamilyFW, Window: engine.WindowQuota{Limit: int64(n), Window: int64(window)}}}
}

// testLimits is the configuration of most tests, in domain "test".
func testLimits() testMatcher {
	minute := rlsv3.RateLimitResponse_RateLimit_MINUTE
	shadow := fw("shadow", 1, minute, time.Minute)
	shadow.ShadowMode = true
	blocked := fw("blocked", 0, minute, time.Minute)
	blocked.Blocks = true
	quota := fw("quota", 1, minute, time.Minute)
	quota.QuotaMode = true
	return testMatcher{
		{"test", []Entry{{"api", "x"}}, fw("api_x", 3, minute, time.Minute)},
		{"test", []Entry{{"user", ""}}, fw("per_user", 2, minute, time.Minute)},
		{"test", []Entry{{"user", ""}, {"path", "/a*"}}, fw("user_path_a", 1, minute, time.Minute)},
		{"test", []Entry{{"unl", ""}}, Limit{Name: "unl", Unlimited: true}},
		{"test", []Entry{{"shadow", ""}}, shadow},
		{"test", []Entry{{"many", ""}}, fw("many", 10, minute, time.Minute)},
		{"test", []Entry{{"blocked", ""}}, blocked},
		{"test", []Entry{{"quota", ""}}, quota},
		{"test", []Entry{{"slow", ""}}, Limit{Name: "slow", RequestsPerUnit: 1, Unit: rlsv3.RateLimitResponse_RateLimit_HOUR, MetricKey: "slow",
			Rule: engine.Rule{Family: engine.FamilyCL, GCRA: engine.GCRAQuota{MaxBurst: 0, Count: 1, Period: 3600}}}},
		{"test", []Entry{{"cl", ""}}, Limit{Name: "cl", RequestsPerUnit: 2, Unit: rlsv3.RateLimitResponse_RateLimit_SECOND, MetricKey: "cl",
			Rule: engine.Rule{Family: engine.FamilyCL, GCRA: engine.GCRAQuota{MaxBurst: 2, Count: 2, Period: 1}}}},
	}
}

// testService is a Service on an engine with a manual clock, served over
// gRPC on 127.0.0.1:0.
type testService struct {
	svc    *Service
	eng    *engine.Engine
	clock  *engine.ManualClock
	client rlsv3.RateLimitServiceClient
}

func startService(t testing.TB, opts Options) *testService {
	t.Helper()
	clock := engine.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	eng := engine.New(engine.Options{Now: clock.Now})
	t.Cleanup(eng.Close)
	if opts.Decider == nil {
		opts.Decider = EngineDecider(eng)
	}
	if opts.Limits == nil {
		opts.Limits = testLimits()
	}
	svc := New(opts)
	return &testService{svc: svc, eng: eng, clock: clock, client: serveGRPC(t, svc)}
}

// serveGRPC serves svc on 127.0.0.1:0 until the test ends and returns a
// client of it.
func serveGRPC(t testing.TB, svc *Service) rlsv3.RateLimitServiceClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	svc.Register(g)
	served := make(chan error, 1)
	go func() { served <- g.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		g.GracefulStop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return rlsv3.NewRateLimitServiceClient(conn)
}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// withAddend sets a descriptor's own hits_addend.
func withAddend(d *ratelimitv3.RateLimitDescriptor, n uint64) *ratelimitv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

func (ts *testService) call(t *testing.T, req *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := ts.client.ShouldRateLimit(ctx, req)
	if err != nil {
		t.Fatalf("ShouldRateLimit(%v): %v", req, err)
	}
	return resp
}
