package commands

import (
	"strings"
	"testing"
)

func TestConfigGet(t *testing.T) {
	h := newHarness(t).withOpts(Options{Settings: []Setting{
		{Name: "port", Value: "6380"}, {Name: "bind", Value: "127.0.0.1"}, {Name: "maxmemory", Value: "100mb"},
	}})
	pair := func(name, value string) string { return wantBulks(name, value) }
	h.runSteps([]replyStep{
		{[]string{"CONFIG", "GET", "port"}, wantArray(2) + pair("port", "6380")},
		// A plain name is found in any case and answered as given.
		{[]string{"CONFIG", "GET", "PORT"}, wantArray(2) + pair("PORT", "6380")},
		// A Setting overrides the fixed value of the same name.
		{[]string{"CONFIG", "GET", "maxmemory"}, wantArray(2) + pair("maxmemory", "100mb")},
		{[]string{"CONFIG", "GET", "databases"}, wantArray(2) + pair("databases", "1")},
		{[]string{"CONFIG", "GET", "save"}, wantArray(2) + pair("save", "")},
		{[]string{"CONFIG", "GET", "appendonly"}, wantArray(2) + pair("appendonly", "no")},
		{[]string{"CONFIG", "GET", "nosuch"}, wantArray(0)},
		{[]string{"CONFIG", "GET", "cluster-enabled"}, wantArray(0)},
		// Patterns match in any case; each parameter is reported once.
		{[]string{"CONFIG", "GET", "P*", "port", "*port"}, wantArray(2) + pair("port", "6380")},
		{[]string{"CONFIG", "GET", "[bd]*"}, wantArray(4) + pair("bind", "127.0.0.1") + pair("databases", "1")},
		{[]string{"CONFIG", "GET", "*"}, wantArray(18) + pair("port", "6380") + pair("bind", "127.0.0.1") +
			pair("maxmemory", "100mb") + pair("databases", "1") + pair("save", "") + pair("appendonly", "no") +
			pair("maxmemory-policy", "volatile-ttl") + pair("slowlog-log-slower-than", "0") + pair("slowlog-max-len", "0")},
		{[]string{"CONFIG", "GET"}, wantErr("ERR wrong number of arguments for 'config|get' command")},
		{[]string{"CONFIG"}, wantErr("ERR wrong number of arguments for 'config' command")},
		{[]string{"CONFIG", "REWRITE"}, wantErr("ERR unknown subcommand 'REWRITE'. Try CONFIG HELP.")},
	})
	h.doLive("HELLO", "3")
	h.runSteps([]replyStep{
		{[]string{"CONFIG", "GET", "port", "bind"}, wantMap3(2) + pair("port", "6380") + pair("bind", "127.0.0.1")},
	})
}

func TestConfigSet(t *testing.T) {
	newHarness(t).withOpts(Options{Settings: []Setting{{Name: "port", Value: "6380"}}}).runSteps([]replyStep{
		{[]string{"CONFIG", "SET", "nosuch", "1"}, wantErr("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")},
		{[]string{"CONFIG", "SET", "Port", "1", "nosuch", "2"},
			wantErr("ERR CONFIG SET failed (possibly related to argument 'Port') - can't set immutable config")},
		{[]string{"CONFIG", "SET", "maxmemory", "1"},
			wantErr("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set immutable config")},
		{[]string{"CONFIG", "SET", "a", "1", "b"}, wantErr("ERR syntax error")}, // Redis 7.0: a name without a value
		{[]string{"CONFIG", "SET", "a"}, wantErr("ERR wrong number of arguments for 'config|set' command")},
	})
}

func TestConfigResetStat(t *testing.T) {
	h := newHarness(t)
	h.do("PING")
	h.do("NOSUCH")
	h.do("CLIENT", "ID")
	h.do("CL.THROTTLE", "k", "0", "1", "60") // allowed
	h.do("CL.THROTTLE", "k", "0", "1", "60") // limited
	if got := h.do("CONFIG", "RESETSTAT"); got != wantStatus("OK") {
		t.Fatalf("CONFIG RESETSTAT = %q", got)
	}
	text := infoText(t, h, "stats", "commandstats")
	if got := field(t, text, "total_error_replies"); got != "0" {
		t.Errorf("total_error_replies = %s after RESETSTAT", got)
	}
	// Only INFO itself has run since, and CONFIG RESETSTAT was counted as it
	// finished.
	if got := field(t, text, "total_commands_processed"); got != "1" {
		t.Errorf("total_commands_processed = %s after RESETSTAT", got)
	}
	if strings.Contains(text, "cmdstat_ping") || strings.Contains(text, "cmdstat_client|id") ||
		!strings.Contains(text, "cmdstat_config|resetstat:calls=1,") {
		t.Errorf("commandstats after RESETSTAT: %q", text)
	}
	if a, l := field(t, text, "throttle_allowed_calls"), field(t, text, "throttle_limited_calls"); a != "0" || l != "0" {
		t.Errorf("throttle_allowed_calls %s, throttle_limited_calls %s after RESETSTAT, want 0 and 0", a, l)
	}
	h.do("CL.THROTTLE", "k", "0", "1", "60")
	text = infoText(t, h, "stats")
	if a, l := field(t, text, "throttle_allowed_calls"), field(t, text, "throttle_limited_calls"); a != "0" || l != "1" {
		t.Errorf("throttle_allowed_calls %s, throttle_limited_calls %s after one more refusal, want 0 and 1", a, l)
	}
}

func TestConfigHelp(t *testing.T) {
	got := newHarness(t).do("CONFIG", "HELP")
	if !strings.HasPrefix(got, "*9\r\n+CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <pattern>\r\n") {
		t.Fatalf("CONFIG HELP = %q", got)
	}
}
