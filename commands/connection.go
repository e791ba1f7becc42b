package commands

// connectionCommands are the commands about the connection itself.
func connectionCommands() []*Command {
	return nil
}
