package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/persist/redistest"
)

// postJSON posts one RLS request for descriptor k=v of domain d to /json
// at metricsAddr, waiting at most within, and returns the status.
func postJSON(metricsAddr string, within time.Duration) (int, error) {
	c := http.Client{Timeout: within}
	resp, err := c.Post("http://"+metricsAddr+"/json", "application/json",
		strings.NewReader(`{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}`))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// postJSONCode is postJSON's status within 2 s, 0 when nothing answers.
func postJSONCode(metricsAddr string) int {
	code, _ := postJSON(metricsAddr, 2*time.Second)
	return code
}

// TestRunJSONWaitsForLoad: /json decides nothing while the start-up load
// from the backing Redis runs, as no command is answered then: a limit of 1
// an hour spent before a restart stays spent. /json answered from the
// empty memory while the store hung, admitting a second request.
func TestRunJSONWaitsForLoad(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	path := hourlyLimitFile(t, 1)
	args := func(metricsAddr string) []string {
		return []string{"--addr", "127.0.0.1:0", "--backing-redis", store.URL(), "--metrics-addr", metricsAddr,
			"--rls-addr", "127.0.0.1:0", "--rls-config", path}
	}

	first := freeAddr(t)
	r := startRun(t, args(first), nil)
	if code := postJSONCode(first); code != http.StatusOK {
		t.Fatalf("first request: %d, want 200", code)
	}
	if code := r.stop(t); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderr.String())
	}

	store.Pause()
	second := freeAddr(t)
	code, ready, done := startLoading(t, args(second), second)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d, want 503 while loading", code)
	}
	if code := postJSONCode(second); code != http.StatusServiceUnavailable {
		t.Errorf("/json while loading: %d, want 503 (200 admits a second request under a limit of 1 an hour)", code)
	}
	store.Resume()
	awaitServing(t, ready, done)
	if code := postJSONCode(second); code != http.StatusTooManyRequests {
		t.Errorf("/json once loaded: %d, want 429", code)
	}
}

// TestRunJSONShutdownLetsRequestsFinish: a /json request under way at a
// graceful stop is answered, as a gRPC one is, within the stop's bound of
// 10 s; the metrics server cut it after 2 s, closing its connection while
// its handler went on deciding beside the shutdown.
func TestRunJSONShutdownLetsRequestsFinish(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	path := hourlyLimitFile(t, 10)
	metricsAddr := freeAddr(t)
	r := startRun(t, sharedArgs(store.URL(), "--metrics-addr", metricsAddr, "--rls-addr", "127.0.0.1:0", "--rls-config", path,
		"--shared-timeout", "4s", "--rls-timeout", "5s", "--shared-fallback", "error"), nil)
	store.Pause()
	defer store.Resume()
	type answer struct {
		code int
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		code, err := postJSON(metricsAddr, 10*time.Second)
		answered <- answer{code, err}
	}()
	time.Sleep(200 * time.Millisecond) // the request is waiting on the store
	start := time.Now()
	code := r.stop(t)
	took, got := time.Since(start), <-answered
	t.Logf("stop: status %d in %v; /json: %d %v", code, took.Round(time.Millisecond), got.code, got.err)
	// The store stays stopped: the decision fails after --shared-timeout
	// with the store's error (--shared-fallback error), a 503.
	if got.code != http.StatusServiceUnavailable {
		t.Errorf("/json under way at the stop: %d %v, want 503 once the store timed out", got.code, got.err)
	}
}
