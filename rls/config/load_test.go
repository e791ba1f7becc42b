package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: alpha\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	writeFile(t, filepath.Join(dir, "b.yml"), "domain: beta\n")
	writeFile(t, filepath.Join(dir, ".c.yaml"), "not: read\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not read either")
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Domains(), ","); got != "alpha,beta" {
		t.Fatalf("Domains = %q", got)
	}
	if l, _ := c.Match("alpha", []Entry{{"k", "v"}}); l == nil || l.FullKey != "alpha.k" {
		t.Fatalf("Match = %+v", l)
	}

	writeFile(t, filepath.Join(dir, "z.yaml"), "domain: alpha\n")
	_, err = Load(dir)
	var e *Error
	if !errors.As(err, &e) || e.File != filepath.Join(dir, "z.yaml") ||
		!strings.Contains(e.Problem, "duplicate domain 'alpha' in config file") || !strings.Contains(e.Problem, filepath.Join(dir, "a.yaml")) {
		t.Fatalf("duplicate domain: %v", err)
	}

	if c, err := Load(filepath.Join(dir, "b.yml")); err != nil || len(c.Domains()) != 1 {
		t.Fatalf("Load of a file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Load of a missing path succeeded")
	}
}

// TestWatch: a good change is reported, a bad one is an error and the
// next good one is reported again; Reload loads unchanged files.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "d.yaml")
	writeFile(t, file, "domain: one\n")
	r := newWatchRig(dir, 5*time.Millisecond)
	r.run(t)
	if got := r.next(t); got != "one" {
		t.Fatalf("first load: %q", got)
	}

	// A good change: a new size and modification time.
	replace(t, file, "domain: second\n", 1)
	if got := r.next(t); got != "second" {
		t.Fatalf("after a good change: %q", got)
	}

	// A bad change: reported, and nothing else.
	replace(t, file, "domain: second\nbogus: 1\n", 2)
	select {
	case err := <-r.errs:
		if !strings.Contains(err.Error(), "unknown key 'bogus'") {
			t.Fatalf("error %v", err)
		}
	case c := <-r.changes:
		t.Fatalf("a bad file was loaded: %v", c.Domains())
	case <-time.After(5 * time.Second):
		t.Fatal("no error reported")
	}

	// Reload loads again though nothing changed: still the bad file.
	r.w.Reload()
	select {
	case <-r.errs:
	case <-time.After(5 * time.Second):
		t.Fatal("Reload reported nothing")
	}

	replace(t, file, "domain: third\n", 3)
	if got := r.next(t); got != "third" {
		t.Fatalf("after the fix: %q", got)
	}
}

// replace puts content in file at once (a rename), with a modification
// time n seconds ahead so that the change is seen whatever the file
// system's time granularity, and the poller never sees half a change.
func replace(t *testing.T, file, content string, n int) {
	t.Helper()
	tmp := file + ".tmp"
	writeFile(t, tmp, content)
	at := time.Now().Add(time.Duration(n) * time.Second)
	if err := os.Chtimes(tmp, at, at); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}
