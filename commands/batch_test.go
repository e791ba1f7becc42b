package commands

import (
	"testing"
	"time"
)

// TestBatchChainsCommandTimes checks that in a batch each command starts
// when the one before it ended: the batch's start, then each end in turn.
func TestBatchChainsCommandTimes(t *testing.T) {
	h := newHarness(t)
	cl := h.client
	cl.StartBatch(time.Now())
	start := cl.mark
	h.do("PING")
	if !cl.LastActive.Equal(start) {
		t.Fatalf("first command started at %v, want the batch's start %v", cl.LastActive, start)
	}
	end1 := cl.mark
	if end1.Before(start) {
		t.Fatalf("first command ended at %v, before it started at %v", end1, start)
	}
	h.do("CL.THROTTLE", "k", "1", "1", "1")
	if !cl.LastActive.Equal(end1) {
		t.Fatalf("second command started at %v, want the first's end %v", cl.LastActive, end1)
	}
	if cl.mark.Before(end1) {
		t.Fatalf("second command ended at %v, before it started at %v", cl.mark, end1)
	}
}

// TestOutsideBatchReadsTheClock checks that a client the server never
// started a batch for times each command on its own.
func TestOutsideBatchReadsTheClock(t *testing.T) {
	h := newHarness(t)
	h.client.LastActive = time.Time{}
	before := time.Now()
	h.do("PING")
	if h.client.batch || !h.client.mark.IsZero() {
		t.Fatalf("batch %v, mark %v: want no batch", h.client.batch, h.client.mark)
	}
	if h.client.LastActive.Before(before) {
		t.Fatalf("LastActive %v, want the clock read as PING started, after %v", h.client.LastActive, before)
	}
}
