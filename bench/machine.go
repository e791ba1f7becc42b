package main

import (
	"bufio"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// machine describes where the figures were taken.
type machine struct {
	cpus         int
	cpuModel     string
	memGiB       float64
	kernel       string
	goVersion    string // the toolchain that built cellserver
	redisName    string // the server's program: redis-server, valkey-server
	redisVersion string
	loadStart    string // 1-minute load average when bench started
	loadEnd      string // and when it ended
}

// describeMachine gathers what can be known now; loadEnd is filled at the
// end.
func describeMachine(t tools, cellBin string) machine {
	m := machine{
		cpus:         runtime.NumCPU(),
		cpuModel:     "unknown CPU",
		kernel:       runtime.GOOS + "/" + runtime.GOARCH,
		goVersion:    "unknown",
		redisName:    filepath.Base(t.redisServer),
		redisVersion: "unknown",
		loadStart:    loadAverage(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if model := cpuModel(string(b)); model != "" {
			m.cpuModel = model
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.memGiB = memTotalGiB(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel += ", Linux " + strings.TrimSpace(string(b))
	}
	if info, err := buildinfo.ReadFile(cellBin); err == nil {
		m.goVersion = info.GoVersion
	}
	if out, err := exec.Command(t.redisServer, "--version").Output(); err == nil {
		if v := redisVersion(string(out)); v != "" {
			m.redisVersion = v
		}
	}
	return m
}

// binaryVersion is the commit and Go version a Go binary was built from,
// as its build information records them: "ffdbaf7, go1.26.8".
func binaryVersion(path string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "no build information"
	}
	rev, modified := "unknown commit", ""
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value[:min(len(s.Value), 7)]
		case s.Key == "vcs.modified" && s.Value == "true":
			modified = " with uncommitted changes"
		}
	}
	return rev + modified + ", " + info.GoVersion
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "".
func cpuModel(cpuinfo string) string {
	sc := bufio.NewScanner(strings.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// memTotalGiB is /proc/meminfo's MemTotal in GiB, or 0.
func memTotalGiB(meminfo string) float64 {
	sc := bufio.NewScanner(strings.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / (1 << 20)
		}
	}
	return 0
}

// redisVersion reads the version out of redis-server --version:
// "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 ..." gives
// "7.0.15"; "" when there is none.
func redisVersion(out string) string {
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return ""
}

// loadAverage is the 1-minute load average, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func (m machine) String() string {
	return fmt.Sprintf("machine: %d CPUs (nproc), %s, %.1f GiB, %s; %s; %s %s; load average %s at the start, %s at the end",
		m.cpus, m.cpuModel, m.memGiB, m.kernel, m.goVersion, m.redisName, m.redisVersion, m.loadStart, m.loadEnd)
}
