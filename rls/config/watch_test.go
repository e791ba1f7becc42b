package config

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// watchRig is a Watcher whose reports go to channels.
type watchRig struct {
	w       *Watcher
	changes chan *Config
	errs    chan error
}

func newWatchRig(path string, poll time.Duration) *watchRig {
	r := &watchRig{changes: make(chan *Config, 10), errs: make(chan error, 10)}
	r.w = NewWatcher(path, poll, func(c *Config) { r.changes <- c }, func(err error) { r.errs <- err })
	return r
}

// run runs the watcher until the test ends.
func (r *watchRig) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// next returns the domains of the next configuration reported; an error
// reported instead, or nothing within 5 s, fails the test.
func (r *watchRig) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-r.changes:
		return strings.Join(c.Domains(), ",")
	case err := <-r.errs:
		t.Fatalf("unexpected error %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported")
	}
	return ""
}

// TestWatcherLoad: Load gives the configuration without reporting it; a
// Run after it does not load the files again, reports a change made after
// Load, and Reload still loads unchanged files.
func TestWatcherLoad(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.yaml")
	writeFile(t, file, "domain: one\n")
	r := newWatchRig(file, 5*time.Millisecond)
	c, err := r.w.Load()
	if err != nil || strings.Join(c.Domains(), ",") != "one" {
		t.Fatalf("Load = %v, %v", c, err)
	}
	r.run(t)

	// Unchanged files: Run reports nothing over many polls.
	select {
	case c := <-r.changes:
		t.Fatalf("Run loaded the files Load had loaded: %v", c.Domains())
	case err := <-r.errs:
		t.Fatalf("unexpected error %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	replace(t, file, "domain: two\n", 1)
	if got := r.next(t); got != "two" {
		t.Fatalf("after a change: %q", got)
	}
	r.w.Reload()
	if got := r.next(t); got != "two" {
		t.Fatalf("after Reload: %q", got)
	}
}

// TestWatcherLoadFails: a Load that failed returns the error without
// reporting it, and Run then loads the files itself.
func TestWatcherLoadFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.yaml")
	writeFile(t, file, "domain: one\nbogus: 1\n")
	r := newWatchRig(file, 0)
	if c, err := r.w.Load(); err == nil || c != nil {
		t.Fatalf("Load of a bad file = %v, %v", c, err)
	}
	if len(r.errs) != 0 || len(r.changes) != 0 {
		t.Fatal("Load reported its result")
	}
	writeFile(t, file, "domain: one\n")
	r.run(t)
	if got := r.next(t); got != "one" {
		t.Fatalf("Run's first load: %q", got)
	}
}
