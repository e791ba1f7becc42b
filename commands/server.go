package commands

// serverCommands are the commands about the server: COMMAND, INFO, CONFIG.
func (c *Commands) serverCommands() []*Command {
	return nil
}
