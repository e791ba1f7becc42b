package commands

import (
	"fmt"
	"strings"
)

// withSubcommands makes cmd a container (CLIENT, CONFIG, COMMAND). The
// dispatcher resolves a container and its subcommand to the subcommand's row,
// checks that row's arity and counts the call there, as Redis 7 does; the
// container's own handler only answers it sent alone (bare, for COMMAND).
func withSubcommands(cmd *Command, bare Handler) *Command {
	cmd.Run = bare
	if bare == nil {
		cmd.Run = func(cx *Context, w Writer, args [][]byte) {
			w.WriteError(fmt.Sprintf(msgWrongArity, cmd.Name))
		}
	}
	return cmd
}

// subcommand finds the subcommand of c called name, in any case.
func (c *Command) subcommand(name []byte) *Command {
	for _, sub := range c.Sub {
		if equalFold(name, sub.shortName()) {
			return sub
		}
	}
	return nil
}

// shortName is a subcommand's name without its container ("setname" for
// "client|setname").
func (c *Command) shortName() string {
	if i := strings.IndexByte(c.Name, '|'); i >= 0 {
		return c.Name[i+1:]
	}
	return c.Name
}

// writeHelp writes a HELP reply as Redis's addReplyHelp does: a header
// line, the given lines, and HELP's own entry, each a simple string.
func writeHelp(w Writer, name string, lines []string) {
	w.WriteArray(len(lines) + 3)
	w.WriteString(strings.ToUpper(name) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		w.WriteString(l)
	}
	w.WriteString("HELP")
	w.WriteString("    Prints this help.")
}
