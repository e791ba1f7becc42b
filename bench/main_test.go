package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.rounds != 3 || o.requests != 500000 || o.clients != 50 || !reflect.DeepEqual(o.pipelines, []int{1, 16}) ||
		o.keyspace != 100000 || o.keys != 1000000 || o.swKeys != 100000 || o.skipMemory || o.only != nil {
		t.Errorf("defaults: %+v", o)
	}
}

func TestParseFlagsQuickKeepsGivenFlags(t *testing.T) {
	o, err := parseFlags([]string{"-quick", "-n", "5000", "-pipelines", "4", "-only", "^CL"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.rounds != 1 || o.requests != 5000 || o.keys != 2000 || o.swKeys != 100 || !reflect.DeepEqual(o.pipelines, []int{4}) {
		t.Errorf("-quick -n 5000 -pipelines 4: %+v", o)
	}
	if !o.selected("CL.THROTTLE") || o.selected("SET") || o.selected("SWC.THROTTLE") {
		t.Errorf("-only ^CL selects the wrong tests")
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-pipelines", "1,x"},
		{"-pipelines", "0"},
		{"-only", "("},
		{"-rounds", "0"},
		{"-n", "-5"},
		{"-nosuchflag"},
		{"-baseline-bin", "/nonexistent/cellserver"},
		{"extra"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted it", args)
		}
	}
}

// fakePath makes a directory of executables that do nothing, named names,
// and makes it the whole PATH.
func fakePath(t *testing.T, names ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

func TestMissingToolsNameTheirPackage(t *testing.T) {
	for _, tc := range []struct {
		installed []string
		want      string
	}{
		{[]string{"go"}, "redis-server is not on PATH: install the redis-server package (apt-get install redis-server)"},
		{[]string{"go", "redis-server"}, "redis-benchmark is not on PATH: install the redis-tools package (apt-get install redis-tools)"},
	} {
		fakePath(t, tc.installed...)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-quick"}, func(string) string { return "" }, &stdout, &stderr)
		if code != exitMissing || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("with only %v: exit %d, stderr %q; want %d and %q", tc.installed, code, stderr.String(), exitMissing, tc.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("stdout %q, want nothing", stdout.String())
		}
	}
}

func TestRedisCellModuleMustExist(t *testing.T) {
	fakePath(t, "go", "redis-server", "redis-benchmark")
	var stderr bytes.Buffer
	env := func(k string) string {
		if k == "REDIS_CELL_MODULE" {
			return "/nonexistent/libredis_cell.so"
		}
		return ""
	}
	if code := run(context.Background(), nil, env, &bytes.Buffer{}, &stderr); code != exitMissing ||
		!strings.Contains(stderr.String(), "REDIS_CELL_MODULE=/nonexistent/libredis_cell.so is not a file") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestHelpExitsZero(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, os.Getenv, &bytes.Buffer{}, &stderr); code != exitOK {
		t.Errorf("-h: exit %d", code)
	}
	for _, want := range []string{"-pipelines", "REDIS_CELL_MODULE", "ENVOY_RATELIMIT_BIN"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("-h printed %q, want the flags and the environment (%s)", stderr.String(), want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "go run ./bench"},
		{[]string{"-n", "1000", "-pipelines", "1,16"}, "go run ./bench -n 1000 -pipelines 1,16"},
		{[]string{"-only", "CL|SW"}, "go run ./bench -only 'CL|SW'"},
		{[]string{"-only", "it's"}, `go run ./bench -only 'it'\''s'`},
		{[]string{"-only", ""}, "go run ./bench -only ''"},
	} {
		if got := commandLine(tc.args); got != tc.want {
			t.Errorf("commandLine(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}
