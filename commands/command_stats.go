package commands

import (
	"fmt"
	"strings"
)

// INFO commandstats and INFO stats' totals, read from each command's
// metrics (commandMetrics, observe.go).

// statsSnapshot is one command's INFO commandstats counters, and its
// deciding calls' answers for INFO stats.
type statsSnapshot struct {
	calls, nanos, rejected, failed int64
	allowed, limited               uint64
}

// sinceReset returns cmd's counters since the last CONFIG RESETSTAT.
func (c *Commands) sinceReset(cmd *Command) statsSnapshot {
	return c.obs.byCommand[cmd].sinceReset()
}

// sinceReset returns m's counters since the last CONFIG RESETSTAT.
func (m *commandMetrics) sinceReset() statsSnapshot {
	s := m.totals()
	m.mu.Lock()
	base := m.base
	m.mu.Unlock()
	return statsSnapshot{
		calls: s.calls - base.calls, nanos: s.nanos - base.nanos, failed: s.failed - base.failed,
		rejected: m.rejected.Load(),
		allowed:  s.allowed - base.allowed, limited: s.limited - base.limited,
	}
}

// writeCommandStats appends INFO commandstats' lines: one per command or
// subcommand that has been called, rejected or failed.
func (c *Commands) writeCommandStats(b *strings.Builder) {
	line := func(cmd *Command) {
		s := c.sinceReset(cmd)
		if s.calls == 0 && s.rejected == 0 && s.failed == 0 {
			return
		}
		usec := s.nanos / 1000
		perCall := 0.0
		if s.calls > 0 {
			perCall = float64(usec) / float64(s.calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			cmd.Name, s.calls, usec, perCall, s.rejected, s.failed)
	}
	c.eachCommand(line)
}

// eachCommand calls fn for every command and subcommand, in the table's
// order (a container before its subcommands: its own calls are bare COMMAND).
func (c *Commands) eachCommand(fn func(*Command)) {
	for _, cmd := range c.table.sorted {
		fn(cmd)
		for _, sub := range cmd.Sub {
			fn(sub)
		}
	}
}

// totals are INFO stats' total_commands_processed and total_error_replies
// since the last CONFIG RESETSTAT: the commands' calls, and every error
// reply (an EXEC's commands may write several).
func (c *Commands) totals() (processed, errors int64) {
	c.eachCommand(func(cmd *Command) {
		processed += c.sinceReset(cmd).calls
	})
	return processed, c.replyErrors.total()
}

// resetStats zeroes INFO's command counters, error counts and totals
// (CONFIG RESETSTAT); the metrics keep counting. The host's connection
// counters and the engine's expired-key count are not ours to reset.
func (c *Commands) resetStats() {
	c.eachCommand(func(cmd *Command) {
		m := c.obs.byCommand[cmd]
		s := m.totals()
		m.mu.Lock()
		m.base = s
		m.mu.Unlock()
		m.rejected.Store(0)
	})
	c.replyErrors.reset()
}
