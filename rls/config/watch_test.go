package config

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWatcherLoad: Load gives the configuration without reporting it; a
// Run after it does not load the files again, reports a change made after
// Load, and Reload still loads unchanged files.
func TestWatcherLoad(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.yaml")
	writeFile(t, file, "domain: one\n")
	changes := make(chan *Config, 10)
	errs := make(chan error, 10)
	w := NewWatcher(file, 5*time.Millisecond, func(c *Config) { changes <- c }, func(err error) { errs <- err })
	c, err := w.Load()
	if err != nil || strings.Join(c.Domains(), ",") != "one" {
		t.Fatalf("Load = %v, %v", c, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	next := func() string {
		t.Helper()
		select {
		case c := <-changes:
			return strings.Join(c.Domains(), ",")
		case err := <-errs:
			t.Fatalf("unexpected error %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("no change reported")
		}
		return ""
	}

	// Unchanged files: Run reports nothing over many polls.
	select {
	case c := <-changes:
		t.Fatalf("Run loaded the files Load had loaded: %v", c.Domains())
	case err := <-errs:
		t.Fatalf("unexpected error %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	replace(t, file, "domain: two\n", 1)
	if got := next(); got != "two" {
		t.Fatalf("after a change: %q", got)
	}
	w.Reload()
	if got := next(); got != "two" {
		t.Fatalf("after Reload: %q", got)
	}
}

// TestWatcherLoadFails: a Load that failed returns the error without
// reporting it, and Run then loads the files itself.
func TestWatcherLoadFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.yaml")
	writeFile(t, file, "domain: one\nbogus: 1\n")
	changes := make(chan *Config, 10)
	errs := make(chan error, 10)
	w := NewWatcher(file, 0, func(c *Config) { changes <- c }, func(err error) { errs <- err })
	if c, err := w.Load(); err == nil || c != nil {
		t.Fatalf("Load of a bad file = %v, %v", c, err)
	}
	if len(errs) != 0 || len(changes) != 0 {
		t.Fatal("Load reported its result")
	}
	writeFile(t, file, "domain: one\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case c := <-changes:
		if got := strings.Join(c.Domains(), ","); got != "one" {
			t.Fatalf("Run's first load: %q", got)
		}
	case err := <-errs:
		t.Fatalf("unexpected error %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not load the files")
	}
}
