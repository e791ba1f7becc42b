package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestUsageNamesEveryFamily: -h tells a newcomer every rate-limit command
// cellserver answers, not only redis-cell's.
func TestUsageNamesEveryFamily(t *testing.T) {
	var stderr bytes.Buffer
	if _, err := parseConfig([]string{"-h"}, envMap(nil), &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"CL.THROTTLE", "SW.THROTTLE", "SWC.THROTTLE", "FW.THROTTLE", "THROTTLE.ALL"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("usage lacks %s:\n%s", want, stderr.String())
		}
	}
}
