package main

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/persist/redistest"
)

// TestRunJSONShutdownLetsRequestsFinish: a /json request under way at a
// graceful stop is answered, as a gRPC one is, within the stop's bound of
// 10 s; the metrics server cut it after 2 s, closing its connection while
// its handler went on deciding beside the shutdown.
func TestRunJSONShutdownLetsRequestsFinish(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	path := t.TempDir() + "/d.yaml"
	if err := os.WriteFile(path, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 10 }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	metricsAddr := freeAddr(t)
	r := startRun(t, sharedArgs(store.URL(), "--metrics-addr", metricsAddr, "--rls-addr", "127.0.0.1:0", "--rls-config", path,
		"--shared-timeout", "4s", "--rls-timeout", "5s", "--shared-fallback", "error"), nil)
	store.Pause()
	defer store.Resume()
	answered := make(chan string, 1)
	go func() {
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Post("http://"+metricsAddr+"/json", "application/json",
			strings.NewReader(`{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}`))
		if err != nil {
			answered <- err.Error()
			return
		}
		resp.Body.Close()
		answered <- resp.Status
	}()
	time.Sleep(200 * time.Millisecond) // the request is waiting on the store
	start := time.Now()
	code := r.stop(t)
	took, got := time.Since(start), <-answered
	t.Logf("stop: status %d in %v; /json: %s", code, took.Round(time.Millisecond), got)
	if strings.Contains(got, "EOF") || strings.Contains(got, "reset") {
		t.Errorf("/json under way at the stop: %s, want an answer", got)
	}
}
