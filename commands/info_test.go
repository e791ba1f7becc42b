package commands

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// infoText runs INFO with args and returns the text of its bulk reply.
func infoText(t *testing.T, h *harness, args ...string) string {
	t.Helper()
	got := h.do(append([]string{"INFO"}, args...)...)
	head, body, ok := strings.Cut(got, "\r\n")
	if !ok || !strings.HasPrefix(head, "$") || !strings.HasSuffix(body, "\r\n") {
		t.Fatalf("INFO %q = %q, not a bulk string", args, got)
	}
	return strings.TrimSuffix(body, "\r\n")
}

// headers returns the section headers of an INFO text, in order.
func headers(text string) []string {
	return regexp.MustCompile(`(?m)^# \w+`).FindAllString(text, -1)
}

func TestInfoSections(t *testing.T) {
	def := []string{"# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU",
		"# Modules", "# Errorstats", "# Cluster", "# Keyspace"}
	cases := []struct {
		args []string
		want []string
	}{
		{nil, def},
		{[]string{"default"}, def},
		{[]string{"server"}, []string{"# Server"}},
		{[]string{"KEYSPACE", "Server", "server"}, []string{"# Server", "# Keyspace"}},
		{[]string{"commandstats"}, []string{"# Commandstats"}},
		{[]string{"default", "commandstats"}, append(def[:8:8], "# Commandstats", "# Errorstats", "# Cluster", "# Keyspace")},
		{[]string{"all"}, append(def[:8:8], "# Commandstats", "# Errorstats", "# Cluster", "# Keyspace")},
		{[]string{"everything"}, append(def[:8:8], "# Commandstats", "# Errorstats", "# Cluster", "# Keyspace")},
		{[]string{"modules"}, []string{"# Modules"}},
		{[]string{"ErrorStats"}, []string{"# Errorstats"}},
	}
	for _, c := range cases {
		h := newHarness(t)
		if got := headers(infoText(t, h, c.args...)); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("INFO %q sections = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestInfoFormat(t *testing.T) {
	h := newHarness(t)
	text := infoText(t, h)
	if !strings.HasPrefix(text, "# Server\r\nredis_version:7.0.15\r\n") {
		t.Fatalf("INFO starts %.60q", text)
	}
	// Sections are separated by one empty line; every line ends in CRLF.
	if !strings.Contains(text, "\r\n\r\n# Clients\r\n") || strings.Contains(text, "\r\n\r\n\r\n") ||
		strings.Contains(strings.ReplaceAll(text, "\r\n", ""), "\n") {
		t.Fatalf("INFO layout: %q", text)
	}
	for _, field := range []string{"redis_mode:standalone", "cellserver_version:test", "role:master",
		"connected_slaves:0", "loading:0", "cluster_enabled:0", "used_memory:", "used_cpu_sys:", "expired_keys:0",
		"maxmemory:0", "tcp_port:0"} {
		if !strings.Contains(text, "\r\n"+field) {
			t.Errorf("INFO lacks %q", field)
		}
	}
	h.runSteps([]replyStep{
		{[]string{"INFO", "nosuch"}, wantBulk("")},
	})
	h.doLive("HELLO", "3")
	if got := h.do("INFO", "replication"); !strings.HasPrefix(got, "=") ||
		!strings.HasSuffix(got, "txt:# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"+
			"master_failover_state:no-failover\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\n"+
			"repl_backlog_active:0\r\n\r\n") {
		t.Fatalf("INFO replication in RESP3 = %q", got)
	}
}

func TestInfoHostCounters(t *testing.T) {
	h := newHarness(t).withOpts(Options{
		Host:     &stubHost{stats: HostStats{ConnectedClients: 3, TotalConnections: 42, RejectedConnections: 2, TCPPort: 6380}},
		Settings: []Setting{{Name: "maxclients", Value: "5000"}},
	})
	text := infoText(t, h, "server", "clients", "stats")
	for _, field := range []string{"tcp_port:6380", "connected_clients:3", "maxclients:5000",
		"total_connections_received:42", "rejected_connections:2"} {
		if !strings.Contains(text, "\r\n"+field+"\r\n") {
			t.Errorf("INFO lacks %q", field)
		}
	}
}

// field returns the value of name in an INFO text.
func field(t *testing.T, text, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:(.*)\r$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("INFO lacks %s in %q", name, text)
	}
	return m[1]
}

func TestInfoCountsMove(t *testing.T) {
	h := newHarness(t)
	if got := infoText(t, h, "keyspace"); got != "# Keyspace\r\n" {
		t.Fatalf("empty keyspace = %q", got)
	}
	h.do("CL.THROTTLE", "a", "10", "10", "60")
	h.do("CL.THROTTLE", "b", "10", "10", "60")
	h.do("PING")
	h.do("NOSUCH")
	h.do("ECHO")
	h.do("SELECT", "9")
	text := infoText(t, h, "stats", "keyspace")
	// As Redis counts: commands that ran (SELECT 9 ran and failed), the first
	// INFO, not this one (counted after it replies), not rejected ones
	// (NOSUCH, ECHO without its argument).
	if got, want := field(t, text, "total_commands_processed"), "5"; got != want {
		t.Errorf("total_commands_processed = %s, want %s", got, want)
	}
	if got, want := field(t, text, "total_error_replies"), "3"; got != want {
		t.Errorf("total_error_replies = %s, want %s", got, want)
	}
	if got, want := field(t, text, "db0"), "keys=2,expires=2,avg_ttl=0"; got != want {
		t.Errorf("db0 = %s, want %s", got, want)
	}
}

func TestInfoCommandStats(t *testing.T) {
	h := newHarness(t)
	h.do("PING")
	h.do("PING")
	h.do("PING", "a", "b")
	h.do("ECHO")
	h.do("CLIENT", "ID")
	h.do("CLIENT", "SETNAME", "a b")
	h.do("CLIENT", "SETNAME")
	h.do("CLIENT", "NOSUCH")
	h.do("COMMAND", "COUNT")
	h.do("COMMAND")
	text := infoText(t, h, "commandstats")
	for name, want := range map[string]string{
		"ping":           "calls=3,rejected_calls=0,failed_calls=1",
		"echo":           "calls=0,rejected_calls=1,failed_calls=0",
		"client|id":      "calls=1,rejected_calls=0,failed_calls=0",
		"client|setname": "calls=1,rejected_calls=1,failed_calls=1",
		"command":        "calls=1,rejected_calls=0,failed_calls=0", // the bare COMMAND
		"command|count":  "calls=1,rejected_calls=0,failed_calls=0",
	} {
		v := field(t, text, "cmdstat_"+name)
		got := regexp.MustCompile(`usec=\d+,usec_per_call=\d+\.\d\d,`).ReplaceAllString(v, "")
		if got != want {
			t.Errorf("cmdstat_%s = %s, want %s", name, got, want)
		}
	}
	// CLIENT NOSUCH is rejected at lookup: no row counts it, as in Redis 7.
	if strings.Contains(text, "cmdstat_client:") || strings.Contains(text, "cmdstat_client|getname") || strings.Contains(text, "cmdstat_info") {
		t.Errorf("commands never called are listed: %q", text)
	}
}

func TestInfoInsideExec(t *testing.T) {
	h := newHarness(t)
	h.do("MULTI")
	h.do("CL.THROTTLE", "k", "10", "10", "60")
	h.do("INFO", "keyspace")
	want := "*2\r\n" + ints(0, 11, 10, -1, 6) + wantBulk("# Keyspace\r\ndb0:keys=1,expires=1,avg_ttl=0\r\n")
	if got := h.do("EXEC"); got != want {
		t.Fatalf("EXEC\n got %q\nwant %q", got, want)
	}
}

func TestBytesToHuman(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0B", 1023: "1023B", 1024: "1.00K", 1536: "1.50K", 5 << 20: "5.00M", 3 << 30: "3.00G",
		1 << 40: "1.00T", 1 << 50: "1.00P", 1 << 60: "1152921504606846976B",
	} {
		if got := bytesToHuman(n); got != want {
			t.Errorf("bytesToHuman(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestIntrospectionConcurrent runs INFO, CLIENT LIST, COMMAND and CONFIG
// RESETSTAT from several clients at once; run with -race.
func TestIntrospectionConcurrent(t *testing.T) {
	h := newHarness(t)
	snapshot := []ClientInfo{NewClient(9, "10.0.0.9:1", "127.0.0.1:6379", h.clock.Now()).Info()}
	h.withOpts(Options{Host: &stubHost{clients: snapshot}})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := NewClient(int64(i+1), "127.0.0.1:1", "127.0.0.1:6379", time.Unix(0, 0))
			for j := range 50 {
				for _, cmd := range [][]string{
					{"CL.THROTTLE", "k" + strconv.Itoa(j), "5", "5", "60"}, {"INFO", "all"}, {"CLIENT", "LIST"},
					{"COMMAND", "INFO", "cl.throttle"}, {"CLIENT", "SETNAME", "n" + strconv.Itoa(j)}, {"CONFIG", "RESETSTAT"},
				} {
					bargs := make([][]byte, len(cmd))
					for k, a := range cmd {
						bargs[k] = []byte(a)
					}
					w := &respWriter{proto: 2}
					h.cmds.Dispatch(w, cl, bargs)
					if strings.HasPrefix(w.buf.String(), "-") {
						t.Errorf("%q: %q", cmd, w.buf.String())
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
