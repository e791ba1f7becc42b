package commands

import "time"

// observe records what a command took, for the slow log and metrics.
func (c *Commands) observe(ctx *Context, cmd *Command, args [][]byte, start time.Time, errors int) {
}
