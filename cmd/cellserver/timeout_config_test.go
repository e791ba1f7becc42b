package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestParseConfigTimeoutBound: --timeout is refused above Redis's bound
// (INT_MAX seconds). 18446744074 s overflowed time.Duration to about 0.29 s,
// so idle clients were closed within a second while CONFIG GET timeout
// reported 18446744074.
func TestParseConfigTimeoutBound(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"--timeout", "18446744074"}},
		{args: []string{"--timeout", "2147483648"}},
		{env: map[string]string{"CELLSERVER_TIMEOUT": "9300000000"}},
	} {
		var stderr bytes.Buffer
		_, err := parseConfig(tt.args, envMap(tt.env), &stderr)
		if !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), "want a whole number from 0 to 2147483647") {
			t.Errorf("%v %v: err = %v, stderr %q; want it refused", tt.args, tt.env, err, stderr.String())
		}
	}
	cfg, err := parseConfig([]string{"--timeout", "2147483647"}, envMap(nil), new(bytes.Buffer))
	if err != nil || cfg.timeout != 2147483647 {
		t.Errorf("--timeout 2147483647: %d, %v", cfg.timeout, err)
	}
}
