package commands

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// configCommand is CONFIG and its subcommands. Nothing is settable at run
// time yet: CONFIG SET answers as Redis does for an unknown or immutable
// parameter.
func configCommand() *Command {
	admin := []string{"@admin", "@dangerous"}
	sub := func(name string, arity int, since, summary string, run Handler) *Command {
		return &Command{Name: "config|" + name, Arity: arity, Flags: FlagNoScript | FlagLoading | FlagStale,
			ACLCategories: admin, Group: "server", Since: since, Summary: summary, Run: run}
	}
	return withSubcommands(&Command{
		Name: "config", Arity: -2, Group: "server", Since: "2.0.0",
		Summary: "A container for server configuration commands.",
		Sub: []*Command{
			sub("get", -3, "2.0.0", "Returns the effective values of configuration parameters.", configGet),
			sub("set", -4, "2.0.0", "Sets configuration parameters in-flight.", configSet),
			sub("resetstat", 2, "2.0.0", "Resets the server's statistics.", configResetStat),
			sub("help", 2, "5.0.0", "Returns helpful text about the different subcommands.", configHelp),
		},
	}, nil)
}

// configGet is CONFIG GET pattern [pattern ...]. As in Redis, a name
// without glob characters is looked up in any case and answered under the
// name as given; a pattern matches names in any case.
func configGet(cx *Context, w Writer, args [][]byte) {
	// >> Args
	patterns := args[2:]

	// >> Operation
	params := cx.cmds.configParams()
	var found []Setting
	seen := make(map[string]bool)
	add := func(name string, p Setting) {
		if key := strings.ToLower(p.Name); !seen[key] {
			seen[key] = true
			found = append(found, Setting{Name: name, Value: p.Value})
		}
	}
	for _, pattern := range patterns {
		if !bytes.ContainsAny(pattern, "[*?") {
			for _, p := range params {
				if strings.EqualFold(p.Name, string(pattern)) {
					add(string(pattern), p)
				}
			}
			continue
		}
		for _, p := range params {
			if globMatchFold(pattern, []byte(p.Name)) {
				add(p.Name, p)
			}
		}
	}

	// >> Response
	w.WriteMap(len(found))
	for _, p := range found {
		w.WriteBulkString(p.Name)
		w.WriteBulkString(p.Value)
	}
}

// configSet is CONFIG SET name value [name value ...]. No parameter can be
// changed at run time, so the first name decides the error, as the first
// bad one does in Redis.
func configSet(cx *Context, w Writer, args [][]byte) {
	// The table's arity says "at least four"; the rest must come in pairs,
	// or it is Redis's syntax error.
	if len(args)%2 != 0 {
		w.WriteError(msgSyntax)
		return
	}
	name := quoteC(args[2])
	if _, ok := cx.cmds.setting(string(args[2])); ok {
		w.WriteError(fmt.Sprintf(msgConfigImmutable, name))
		return
	}
	w.WriteError(fmt.Sprintf(msgConfigUnknown, name))
}

// configResetStat is CONFIG RESETSTAT: it zeroes the command counters.
func configResetStat(cx *Context, w Writer, args [][]byte) {
	cx.cmds.resetStats()
	w.WriteString("OK")
}

func configHelp(cx *Context, w Writer, args [][]byte) {
	writeHelp(w, "config", []string{
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>; nothing is settable at run time yet.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
	})
}

// configParams returns every parameter CONFIG GET reports: the configured
// Settings, then fixed values that clients probe, unless a Setting of the
// same name overrides them.
func (c *Commands) configParams() []Setting {
	params := append([]Setting(nil), c.opts.Settings...)
	for _, p := range []Setting{
		{Name: "databases", Value: "1"},
		{Name: "save", Value: ""},
		{Name: "appendonly", Value: "no"},
		{Name: "maxmemory", Value: strconv.FormatInt(c.opts.Engine.MaxMemory(), 10)},
		{Name: "maxmemory-policy", Value: maxmemoryPolicy},
		{Name: "slowlog-log-slower-than", Value: strconv.FormatInt(c.opts.SlowlogLogSlowerThan, 10)},
		{Name: "slowlog-max-len", Value: strconv.Itoa(max(c.opts.SlowlogMaxLen, 0))},
	} {
		if _, ok := findSetting(params, p.Name); !ok {
			params = append(params, p)
		}
	}
	return c.withAuthSettings(params)
}

// maxmemoryPolicy is the Redis policy that names how cellserver evicts: the
// keys with the soonest expiry first (engine.Options.MaxMemory).
const maxmemoryPolicy = "volatile-ttl"

// setting returns the value CONFIG GET reports for the named parameter.
func (c *Commands) setting(name string) (string, bool) {
	return findSetting(c.configParams(), name)
}

// findSetting returns the value of the named parameter, in any case.
func findSetting(params []Setting, name string) (string, bool) {
	for _, p := range params {
		if strings.EqualFold(p.Name, name) {
			return p.Value, true
		}
	}
	return "", false
}
