// Package testenv decides what a test does when the machine lacks something
// it needs: it skips with a message, except in CI (CI=true), where every
// test must run, so the lack is a failure.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips t, saying why, or fails it in CI.
func SkipOrFail(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s, and CI=true requires it (.ci/run installs what the tests need)", why)
	}
	t.Skip(why)
}

// NeedTool returns the path of program name; where it is not on PATH, t is
// skipped (or fails in CI) with how to install it.
func NeedTool(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		SkipOrFail(t, name+" is not on PATH ("+install+")")
	}
	return path
}
