package main

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/persist/redistest"
)

// postJSON posts one RLS request for descriptor k=v of domain d to /json
// at metricsAddr and returns the status, 0 when nothing answers.
func postJSON(t *testing.T, metricsAddr string) int {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Post("http://"+metricsAddr+"/json", "application/json",
		strings.NewReader(`{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}`))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRunJSONWaitsForLoad: /json decides nothing while the start-up load
// from the backing Redis runs, as no command is answered then: a limit of 1
// an hour spent before a restart stays spent. /json answered from the
// empty memory while the store hung, admitting a second request.
func TestRunJSONWaitsForLoad(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	path := t.TempDir() + "/d.yaml"
	if err := os.WriteFile(path, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(metricsAddr string) []string {
		return []string{"--addr", "127.0.0.1:0", "--backing-redis", store.URL(), "--metrics-addr", metricsAddr,
			"--rls-addr", "127.0.0.1:0", "--rls-config", path}
	}

	first := freeAddr(t)
	r := startRun(t, args(first), nil)
	if code := postJSON(t, first); code != http.StatusOK {
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
	if code := postJSON(t, second); code != http.StatusServiceUnavailable {
		t.Errorf("/json while loading: %d, want 503 (200 admits a second request under a limit of 1 an hour)", code)
	}
	store.Resume()
	awaitServing(t, ready, done)
	if code := postJSON(t, second); code != http.StatusTooManyRequests {
		t.Errorf("/json once loaded: %d, want 429", code)
	}
}
