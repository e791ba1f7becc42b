package commands

import (
	"testing"
	"time"
)

func TestTime(t *testing.T) {
	h := newHarness(t)
	h.runSteps([]replyStep{
		{[]string{"TIME"}, wantArray(2) + wantBulks("1795336191", "675642")},
		{[]string{"TIME", "x"}, wantErr("ERR wrong number of arguments for 'time' command")},
	})
	h.clock.Advance(1500 * time.Millisecond)
	h.runSteps([]replyStep{{[]string{"TIME"}, wantArray(2) + wantBulks("1795336193", "175642")}})
}
