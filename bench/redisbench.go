package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// figures are one redis-benchmark run's results, and the server's
// counters around it; a latency redis-benchmark did not report (Redis 6's
// CSV has none), or a CPU time that could not be read, is NaN.
type figures struct {
	rps      float64 // requests per second
	p50, p99 float64 // latency percentiles in ms
	perTrip  float64 // decisions per round trip to the shared store; 0 but in shared mode
	// cpu is the CPU time the server used over the run, in µs per request;
	// storeCPU the shared store's (the redis-server that runs the
	// compare-and-set scripts), 0 but in shared mode.
	cpu, storeCPU float64
}

// benchSpec is one redis-benchmark run.
type benchSpec struct {
	addr     string // host:port
	clients  int    // -c
	pipeline int    // -P
	requests int    // -n
	keyspace int    // -r: __rand_int__ takes values in [0, keyspace)
	command  []string
}

// args is redis-benchmark's command line for s.
func (s benchSpec) args() ([]string, error) {
	host, port, ok := strings.Cut(s.addr, ":")
	if !ok {
		return nil, fmt.Errorf("address %q is not host:port", s.addr)
	}
	args := []string{
		"-h", host, "-p", port,
		"-c", strconv.Itoa(s.clients), "-P", strconv.Itoa(s.pipeline),
		"-n", strconv.Itoa(s.requests), "-r", strconv.Itoa(s.keyspace),
		"--csv",
	}
	return append(args, s.command...), nil
}

// timeout is how long the run may take before it is taken as hung: long
// enough for 5,000 requests a second, where every test here does ten times
// that on one core. redis-benchmark retries forever when it cannot connect.
func (s benchSpec) timeout() time.Duration {
	return 30*time.Second + time.Duration(s.requests/5000)*time.Second
}

// runBenchmark runs redis-benchmark (at path) as s says and returns its
// figures. The run is killed when ctx ends.
func runBenchmark(ctx context.Context, path string, s benchSpec) (figures, error) {
	args, err := s.args()
	if err != nil {
		return figures{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = childAttr()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return figures{}, fmt.Errorf("redis-benchmark %s: no result within %v", strings.Join(args, " "), s.timeout())
	}
	if err != nil {
		return figures{}, fmt.Errorf("redis-benchmark %s: %v: %s", strings.Join(args, " "),
			err, strings.TrimSpace(stderr.String()))
	}
	f, err := parseCSV(stdout.Bytes())
	if err != nil {
		return f, fmt.Errorf("redis-benchmark %s: %v", strings.Join(args, " "), err)
	}
	return f, nil
}

// parseCSV reads the figures of the one test in redis-benchmark's --csv
// output. Redis 7 writes a header line and a line of values:
//
//	"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
//	"SET key:__rand_int__ 1","327332.25","2.197","0.384","2.063","3.815","4.759","7.671"
//
// Redis 6 writes only "test","rps" lines, without a header: the latencies
// are then NaN.
func parseCSV(out []byte) (figures, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		return figures{}, fmt.Errorf("malformed CSV: %v", err)
	}
	nan := math.NaN()
	f := figures{rps: nan, p50: nan, p99: nan}
	if len(records) == 0 {
		return f, errors.New("no CSV output")
	}
	column := map[string]int{}
	for i, name := range records[0] {
		column[name] = i
	}
	if _, rps := column["rps"]; rps || records[0][0] == "test" {
		records = records[1:]
	} else {
		column = map[string]int{"rps": 1}
	}
	if len(records) != 1 {
		return f, fmt.Errorf("want the figures of one test, got %d lines", len(records))
	}
	rec := records[0]
	for _, c := range []struct {
		name string
		v    *float64
	}{{"rps", &f.rps}, {"p50_latency_ms", &f.p50}, {"p99_latency_ms", &f.p99}} {
		i, ok := column[c.name]
		if !ok {
			continue
		}
		if i >= len(rec) {
			return f, fmt.Errorf("no %s in %q", c.name, rec)
		}
		v, err := strconv.ParseFloat(rec[i], 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) { // NaN fails v >= 0
			return f, fmt.Errorf("%s is %q, not a number", c.name, rec[i])
		}
		*c.v = v
	}
	if math.IsNaN(f.rps) {
		return f, fmt.Errorf("no rps column in %q", records)
	}
	return f, nil
}
