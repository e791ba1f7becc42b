package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cellserver/cellserver/persist/redistest"
)

// readyz returns /readyz's status at metricsAddr, 0 while nothing answers.
func readyz(t *testing.T, metricsAddr string) int {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + metricsAddr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// startLoading runs cellserver with args without waiting for it to listen,
// and returns once /readyz at metricsAddr answers, with its first answer.
// ready receives the address once the server serves; done its exit status.
func startLoading(t *testing.T, args []string, metricsAddr string) (first int, ready <-chan net.Addr, done <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	readyc, donec := make(chan net.Addr, 1), make(chan int, 1)
	var stdout, stderr syncBuffer
	go func() { donec <- run(ctx, args, envMap(nil), &stdout, &stderr, readyc) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-donec:
		case <-time.After(15 * time.Second):
			t.Error("cellserver did not stop within 15s")
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if code := readyz(t, metricsAddr); code != 0 {
			return code, readyc, donec
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz did not answer within 10s; stderr:\n%s", stderr.String())
		}
	}
}

// awaitServing waits for a server startLoading started to serve, once its
// store answers: it fails the test if the server exits instead, or does
// not serve within 10 s.
func awaitServing(t *testing.T, ready <-chan net.Addr, done <-chan int) {
	t.Helper()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("exited with %d instead of loading", code)
	case <-time.After(10 * time.Second):
		t.Fatal("not serving 10s after the store came back")
	}
}

// TestReadyz: /readyz for each state of the backing store. It is 503 only
// while the start-up load is under way; an instance that serves from memory
// because its store is down is ready, so that a store outage takes no
// instance out of service; with --backing-required an instance is ready
// only once loaded (it exits when the load fails); shared mode is ready
// once it serves, the store reached or not.
func TestReadyz(t *testing.T) {
	t.Parallel()
	type state struct {
		name    string
		args    func(t *testing.T) []string
		backing string // INFO's backing_status once ready, "" to skip
	}
	serving := []state{
		{"none", func(t *testing.T) []string { return nil }, ""},
		{"loaded", func(t *testing.T) []string { return []string{"--backing-redis", redistest.Start(t).URL()} }, "ok"},
		{"loaded required", func(t *testing.T) []string {
			return []string{"--backing-redis", redistest.Start(t).URL(), "--backing-required"}
		}, "ok"},
		{"unreachable", func(t *testing.T) []string { return []string{"--backing-redis", "redis://" + freeAddr(t)} }, "down"},
		{"shared", func(t *testing.T) []string { return sharedArgs(redistest.Start(t).URL())[2:] }, ""},
		{"shared unreachable", func(t *testing.T) []string { return sharedArgs("redis://" + freeAddr(t))[2:] }, ""},
	}
	for _, s := range serving {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			metricsAddr := freeAddr(t)
			r := startRun(t, append([]string{"--addr", "127.0.0.1:0", "--metrics-addr", metricsAddr}, s.args(t)...), nil)
			if code := readyz(t, metricsAddr); code != http.StatusOK {
				t.Errorf("/readyz = %d once serving, want 200", code)
			}
			if s.backing != "" {
				// "down" may still read "loading" while a retry runs.
				if got := infoField(t, newClient(t, r.addr), "persistence", "backing_status"); got != s.backing && !(s.backing == "down" && got == "loading") {
					t.Errorf("backing_status = %q, want %q", got, s.backing)
				}
			}
		})
	}

	// While the store hangs (SIGSTOP), the first load attempt is under way:
	// 503 until it ends, 200 once the store answers and the load is done.
	for _, required := range []bool{false, true} {
		name := "loading"
		if required {
			name = "loading required"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := redistest.Start(t)
			store.Pause()
			metricsAddr := freeAddr(t)
			args := []string{"--addr", "127.0.0.1:0", "--metrics-addr", metricsAddr, "--backing-redis", store.URL()}
			if required {
				args = append(args, "--backing-required")
			}
			first, ready, done := startLoading(t, args, metricsAddr)
			if first != http.StatusServiceUnavailable {
				t.Errorf("/readyz = %d while loading, want 503", first)
			}
			store.Resume()
			awaitServing(t, ready, done)
			if code := readyz(t, metricsAddr); code != http.StatusOK {
				t.Errorf("/readyz = %d once loaded, want 200", code)
			}
		})
	}

	// --backing-required with a store that refuses: never ready, exit 1.
	t.Run("unreachable required", func(t *testing.T) {
		t.Parallel()
		metricsAddr := freeAddr(t)
		args := []string{"--addr", "127.0.0.1:0", "--metrics-addr", metricsAddr, "--backing-redis", "redis://" + freeAddr(t), "--backing-required"}
		var stdout, stderr syncBuffer
		ready := make(chan net.Addr, 1)
		if code := run(context.Background(), args, envMap(nil), &stdout, &stderr, ready); code != exitError {
			t.Errorf("exit status %d, want 1", code)
		}
		if len(ready) != 0 {
			t.Error("served without the required store")
		}
	})
}
