package commands

// authorize returns the error text for a command the client may not run
// yet, or "" when it may run it.
func (c *Commands) authorize(cl *Client, cmd *Command, args [][]byte) string {
	return ""
}
