package commands

import (
	"fmt"
	"strings"
)

// statsSnapshot is a copy of one command's counters.
type statsSnapshot struct {
	calls, usec, rejected, failed int64
}

func (s *commandStats) snapshot() statsSnapshot {
	var sum statsSnapshot
	for i := range s.stripes {
		st := &s.stripes[i]
		sum.calls += st.calls.Load()
		sum.usec += st.usec.Load()
		sum.rejected += st.rejected.Load()
		sum.failed += st.failed.Load()
	}
	return sum
}

func (s *commandStats) reset() {
	for i := range s.stripes {
		st := &s.stripes[i]
		st.calls.Store(0)
		st.usec.Store(0)
		st.rejected.Store(0)
		st.failed.Store(0)
	}
}

// writeCommandStats appends INFO commandstats' lines: one per command or
// subcommand that has been called, rejected or failed.
func writeCommandStats(b *strings.Builder, cmds []*Command) {
	line := func(name string, s statsSnapshot) {
		if s.calls == 0 && s.rejected == 0 && s.failed == 0 {
			return
		}
		perCall := 0.0
		if s.calls > 0 {
			perCall = float64(s.usec) / float64(s.calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			name, s.calls, s.usec, perCall, s.rejected, s.failed)
	}
	for _, cmd := range cmds {
		line(cmd.Name, cmd.stats.snapshot()) // a container's own calls: bare COMMAND
		for _, sub := range cmd.Sub {
			line(sub.Name, sub.stats.snapshot())
		}
	}
}

// resetStats zeroes the command counters and INFO's totals (CONFIG
// RESETSTAT). The host's connection counters and the engine's expired-key
// count are not ours to reset.
func (c *Commands) resetStats() {
	for _, cmd := range c.table.sorted {
		cmd.stats.reset()
		for _, sub := range cmd.Sub {
			sub.stats.reset()
		}
	}
	c.totals.reset()
}
