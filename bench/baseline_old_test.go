package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestQuickRunWithBaselineWithoutSharedMode: a -baseline-bin from before shared
// mode (it rejects --backing-mode, as any binary whose flags lack it does)
// still gets its in-memory rows; only its shared rows are left out, as a
// baseline that lacks a command has that test left out (tryOnce).
func TestQuickRunWithBaselineWithoutSharedMode(t *testing.T) {
	needTool(t, "redis-server")
	needTool(t, "redis-benchmark")
	dir := t.TempDir()
	real, err := buildCellserver(context.Background(), needTool(t, "go"), dir)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "old-cellserver")
	script := "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = --backing-mode ]; then\n" +
		"    echo 'flag provided but not defined: -backing-mode' >&2\n    exit 2\n  fi\ndone\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(base, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-skip-memory", "-pipelines", "1", "-only", `^(shared )?CL\.THROTTLE`, "-baseline-bin", base}
	if code := run(context.Background(), args, os.Getenv, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		`(?m)^ 1  CL\.THROTTLE@base +cellserver-base +[0-9,]+ `,
		`(?m)^ 1  shared CL\.THROTTLE +cellserver shared +[0-9,]+ `,
		`(?m)^not run: shared CL\.THROTTLE@base: cellserver shared-base did not start: `,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the report has no line matching %s:\n%s", want, out)
		}
	}
	checkNoChildren(t)
}
