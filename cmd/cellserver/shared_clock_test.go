package main

import (
	"strconv"
	"testing"

	"github.com/cellserver/cellserver/persist/redistest"
)

// TestRunSharedClock: on loopback, after some traffic, INFO's estimate of
// the store's clock is tight and honest: the error bound is under 50ms,
// and the offset, which on one machine is the difference between one clock
// and itself (0), is within the bound of zero (and 1ms for TIME's
// microseconds and the two readings of the wall clock).
func TestRunSharedClock(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	rdb := newClient(t, startRun(t, sharedArgs(store.URL()), nil).addr)
	for i := range 50 {
		peek(t, rdb, "FW.THROTTLE", "k"+strconv.Itoa(i%5), 1000, "1h")
	}
	const most = 50_000 // µs
	field := func(name string) int64 {
		t.Helper()
		v := infoField(t, rdb, "persistence", name)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("INFO %s = %q, want an integer", name, v)
		}
		return n
	}
	if n := field("shared_round_trips"); n == 0 {
		t.Fatal("no round trip to the store after 50 calls")
	}
	bound, offset := field("shared_clock_bound_us"), field("shared_clock_offset_us")
	if bound < 0 || bound >= most {
		t.Errorf("shared_clock_bound_us = %d, want 0 ≤ bound < %d on loopback", bound, most)
	}
	if offset < -(bound+1000) || offset > bound+1000 {
		t.Errorf("shared_clock_offset_us = %d, want within the bound (%dµs) and 1ms of 0: the store runs on this machine's clock", offset, bound)
	}
	t.Logf("clock bound %dµs, offset %dµs", bound, offset)
}
