package main

import (
	"math"
	"strings"
	"testing"
)

func TestCPUModel(t *testing.T) {
	cpuinfo := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n\n" +
		"processor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	if got := cpuModel(cpuinfo); got != "AMD EPYC 7B13" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := cpuModel("processor\t: 0\nCPU implementer\t: 0x41\n"); got != "" {
		t.Errorf("cpuModel without a model name = %q, want empty", got)
	}
}

func TestRedisVersion(t *testing.T) {
	out := "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0\n"
	if got := redisVersion(out); got != "7.0.15" {
		t.Errorf("redisVersion = %q", got)
	}
	if got := redisVersion("redis-server 1.0"); got != "" {
		t.Errorf("redisVersion of an odd line = %q, want empty", got)
	}
}

func TestMemTotal(t *testing.T) {
	if got := memTotalGiB("MemTotal:       24683520 kB\nMemFree: 1 kB\n"); math.Abs(got-23.54) > 0.01 {
		t.Errorf("memTotalGiB = %v", got)
	}
}

func TestMachineString(t *testing.T) {
	m := machine{cpus: 2, cpuModel: "AMD EPYC", memGiB: 23.5, kernel: "linux/amd64", goVersion: "go1.26.8",
		redisName: "redis-server", redisVersion: "7.0.15", loadStart: "0.10", loadEnd: "2.01"}
	s := m.String()
	for _, want := range []string{"2 CPUs (nproc)", "AMD EPYC", "go1.26.8", "redis-server 7.0.15", "load average 0.10 at the start, 2.01 at the end"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
}
