package main

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseCSV(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		out     string
		want    figures
		wantErr string
	}{
		{
			name: "redis 7",
			out: `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET key:__rand_int__ 1795340811174919210","327332.25","2.197","0.384","2.063","3.815","4.759","7.671"
`,
			want: figures{rps: 327332.25, p50: 2.063, p99: 4.759},
		},
		{
			name: "a command with a comma and quotes in an argument",
			out: `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"EVAL ""return {1,2}"" 0","1000.00","0.1","0.1","0.111","0.1","0.999","0.1"
`,
			want: figures{rps: 1000, p50: 0.111, p99: 0.999},
		},
		{
			name: "columns in another order",
			out:  "\"p99_latency_ms\",\"test\",\"rps\",\"p50_latency_ms\"\r\n\"9.5\",\"PING\",\"12\",\"1.25\"\r\n",
			want: figures{rps: 12, p50: 1.25, p99: 9.5},
		},
		{
			name: "redis 6: no header, no latencies",
			out:  `"CL.THROTTLE k 1 2 3","48155.64"` + "\n",
			want: figures{rps: 48155.64, p50: nan, p99: nan},
		},
		{name: "empty", out: "", wantErr: "no CSV output"},
		{
			name:    "header only (the run failed)",
			out:     `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"` + "\n",
			wantErr: "got 0 lines",
		},
		{
			name: "two tests",
			out: `"test","rps","p50_latency_ms","p99_latency_ms"
"SET","1","1","1"
"GET","1","1","1"
`,
			wantErr: "got 2 lines",
		},
		{
			name:    "not a number",
			out:     "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n\"SET\",\"fast\",\"1\",\"1\"\n",
			wantErr: `rps is "fast"`,
		},
		{
			name:    "NaN",
			out:     "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n\"SET\",\"1\",\"NaN\",\"1\"\n",
			wantErr: `p50_latency_ms is "NaN"`,
		},
		{
			name:    "short line",
			out:     "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n\"SET\",\"1\"\n",
			wantErr: "no p50_latency_ms",
		},
		{
			name:    "no rps column",
			out:     "\"test\",\"qps\"\n\"SET\",\"1\"\n",
			wantErr: "no rps column",
		},
		{name: "malformed", out: "\"test\n", wantErr: "malformed CSV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCSV([]byte(tc.out))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameFigures(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// sameFigures compares figures, NaN equal to NaN.
func sameFigures(a, b figures) bool {
	eq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	return eq(a.rps, b.rps) && eq(a.p50, b.p50) && eq(a.p99, b.p99)
}

func TestBenchSpecArgs(t *testing.T) {
	s := benchSpec{addr: "127.0.0.1:41234", clients: 50, pipeline: 16, requests: 500000, keyspace: 100000,
		command: []string{"CL.THROTTLE", "cl:__rand_int__", "15", "30", "60"}}
	got, err := s.args()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-h", "127.0.0.1", "-p", "41234", "-c", "50", "-P", "16", "-n", "500000", "-r", "100000", "--csv",
		"CL.THROTTLE", "cl:__rand_int__", "15", "30", "60"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args:\n got %q\nwant %q", got, want)
	}
	if _, err := (benchSpec{addr: "nowhere"}).args(); err == nil {
		t.Error("an address without a port gave no error")
	}
	if d := s.timeout(); d != 130*time.Second {
		t.Errorf("timeout %v, want 130s for 500,000 requests", d)
	}
}
