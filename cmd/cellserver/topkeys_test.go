package main

import (
	"context"
	"strings"
	"testing"
)

// TestRunMetricsTopKeys: --metrics-top-keys puts the keys refused most
// often on /metrics, and without it there is no such series.
func TestRunMetricsTopKeys(t *testing.T) {
	for _, n := range []string{"0", "2"} {
		metricsAddr := freeAddr(t)
		r := startRun(t, []string{"--addr", "127.0.0.1:0", "--metrics-addr", metricsAddr, "--metrics-top-keys", n}, nil)
		rdb := newClient(t, r.addr)
		for range 5 {
			rdb.Do(context.Background(), "FW.THROTTLE", "hot", 1, "1h")
		}
		_, body := httpGet(t, "http://"+metricsAddr+"/metrics")
		has := strings.Contains(body, `cellserver_top_refused_keys{family="fw",key="hot",window="1m"} 4`)
		if has != (n != "0") {
			t.Errorf("--metrics-top-keys %s: the refused key on /metrics is %v:\n%s", n, has, grepLines(body, "top_refused"))
		}
	}
}
