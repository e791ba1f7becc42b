package commands

import (
	"strings"
	"testing"
)

func TestCommandDocs(t *testing.T) {
	h := newHarness(t)
	throttle := wantBulk("cl.throttle") + wantArray(4) + wantBulks("group", "module", "module", "redis-cell")
	ping := wantBulk("ping") + wantArray(6) +
		wantBulks("summary", "Returns the server's liveliness response.", "since", "1.0.0", "group", "connection")
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "DOCS", "cl.throttle"}, wantArray(2) + throttle},
		{[]string{"COMMAND", "DOCS", "nosuch", "CL.THROTTLE", "ping"}, wantArray(4) + throttle + ping},
		{[]string{"COMMAND", "DOCS", "nosuch"}, wantArray(0)},
		{[]string{"COMMAND", "DOCS", "config|resetstat"}, wantArray(2) + wantBulk("config|resetstat") + wantArray(6) +
			wantBulks("summary", "Resets the server's statistics.", "since", "2.0.0", "group", "server")},
	})
	h.doLive("HELLO", "3")
	h.runSteps([]replyStep{
		{[]string{"COMMAND", "DOCS", "cl.throttle"},
			wantMap3(1) + wantBulk("cl.throttle") + wantMap3(2) + wantBulks("group", "module", "module", "redis-cell")},
	})

	config := h.do("COMMAND", "DOCS", "config")
	if !strings.HasPrefix(config, wantMap3(1)+wantBulk("config")+wantMap3(4)) ||
		!strings.Contains(config, wantBulk("subcommands")+wantMap3(4)+wantBulk("config|get")+wantMap3(3)) {
		t.Fatalf("COMMAND DOCS config = %q", config)
	}
	all := h.do("COMMAND", "DOCS")
	if !strings.HasPrefix(all, wantMap3(len(h.cmds.table.sorted))) {
		t.Fatalf("COMMAND DOCS = %.100q", all)
	}
}

// TestOurRowsAreDocumented checks that the connection and server rows say
// what COMMAND DOCS reports.
func TestOurRowsAreDocumented(t *testing.T) {
	c := New(Options{Engine: newHarness(t).eng})
	var rows []*Command
	for _, cmd := range append(connectionCommands(), c.serverCommands()...) {
		rows = append(append(rows, cmd), cmd.Sub...)
	}
	for _, cmd := range rows {
		if cmd.Summary == "" || cmd.Since == "" || cmd.Group == "" || cmd.Run == nil {
			t.Errorf("%s: summary %q since %q group %q", cmd.Name, cmd.Summary, cmd.Since, cmd.Group)
		}
	}
}
