package commands

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// slowlogEntryBytes spells one SLOWLOG GET entry as the harness records it:
// the fake clock's second, "D" for the duration (see normDuration), the
// harness client's address.
func slowlogEntryBytes(h *harness, id int64, name string, args ...string) string {
	return wantArray(6) + wantInt(id) + wantInt(h.clock.Now().Unix()) + ":D\r\n" +
		wantArray(len(args)) + wantBulks(args...) + wantBulks(h.client.Addr, name)
}

// normDuration replaces each entry's duration, which the test cannot fix,
// with "D".
func normDuration(reply string) string {
	return regexp.MustCompile(`(\*6\r\n:\d+\r\n:\d+\r\n):\d+\r\n`).ReplaceAllString(reply, "${1}:D\r\n")
}

// slowlogHarness is a harness whose slow log keeps maxLen commands that
// took at least slowerThan µs.
func slowlogHarness(t *testing.T, slowerThan int64, maxLen int) *harness {
	return newHarness(t).withOpts(Options{SlowlogLogSlowerThan: slowerThan, SlowlogMaxLen: maxLen})
}

// TestSlowlogEntries: with a threshold of 0 every command that ran is
// recorded, newest first, with its arguments as Redis 7.0 keeps them:
// at most 32, each at most 128 bytes, secrets redacted, EXEC left out.
// The expected bytes are those of redis-server 7.0.15.
func TestSlowlogEntries(t *testing.T) {
	h := slowlogHarness(t, 0, 128)
	long := strings.Repeat("a", 200)
	del := []string{"DEL"}
	for i := 1; i <= 40; i++ {
		del = append(del, strconv.Itoa(i))
	}
	h.do("SLOWLOG", "RESET")                                      // 0, recorded once it has run
	h.do("CLIENT", "SETNAME", "myname")                           // 1
	h.do("ECHO", long)                                            // 2
	h.do(del...)                                                  // 3
	h.do("AUTH", "foo", "bar")                                    // 4
	h.do("HELLO", "2", "AUTH", "user", "pw", "SETNAME", "myname") // 5
	h.do("CONFIG", "SET", "requirepass", "x", "maxmemory", "0")   // 6
	h.do("NOSUCH")                                                // rejected: never ran
	h.do("MULTI")                                                 // 7
	h.do("PING")                                                  // queued, not run
	h.do("EXEC")                                                  // not recorded; its PING is (8)

	want := wantArray(9) +
		slowlogEntryBytes(h, 8, "myname", "PING") +
		slowlogEntryBytes(h, 7, "myname", "MULTI") +
		slowlogEntryBytes(h, 6, "myname", "CONFIG", "SET", "requirepass", "(redacted)", "maxmemory", "0") +
		slowlogEntryBytes(h, 5, "myname", "HELLO", "2", "AUTH", "(redacted)", "(redacted)", "SETNAME", "myname") +
		slowlogEntryBytes(h, 4, "myname", "AUTH", "(redacted)", "(redacted)") +
		slowlogEntryBytes(h, 3, "myname", append(del[:31:31], "... (10 more arguments)")...) +
		slowlogEntryBytes(h, 2, "myname", "ECHO", long[:128]+"... (72 more bytes)") +
		slowlogEntryBytes(h, 1, "myname", "CLIENT", "SETNAME", "myname") +
		slowlogEntryBytes(h, 0, "", "SLOWLOG", "RESET")
	if got := normDuration(h.do("SLOWLOG", "GET", "-1")); got != want {
		t.Fatalf("SLOWLOG GET -1\n got %q\nwant %q", got, want)
	}
	// The GET just run is entry 9; GET's default count is 10.
	if got := normDuration(h.do("SLOWLOG", "GET")); !strings.HasPrefix(got, wantArray(10)+
		slowlogEntryBytes(h, 9, "myname", "SLOWLOG", "GET", "-1")) {
		t.Fatalf("SLOWLOG GET = %.200q", got)
	}
}

// TestSlowlogSubcommands: GET's count, LEN, RESET, HELP and the errors,
// each as redis-server 7.0.15 answers.
func TestSlowlogSubcommands(t *testing.T) {
	h := slowlogHarness(t, 0, 128)
	h.do("PING") // 0
	h.do("PING", "a")
	h.runSteps([]replyStep{
		{[]string{"SLOWLOG", "LEN"}, wantInt(2)},                      // entry 2
		{[]string{"SLOWLOG", "GET", "0"}, wantArray(0)},               // 3
		{[]string{"SLOWLOG", "GET", "-2"}, wantErr(msgSlowlogCount)},  // 4
		{[]string{"SLOWLOG", "GET", "abc"}, wantErr(msgSlowlogCount)}, // 5
		{[]string{"SLOWLOG", "GET", "+1"}, wantErr(msgSlowlogCount)},  // 6
		{[]string{"SLOWLOG", "GET", " 1"}, wantErr(msgSlowlogCount)},  // 7
		{[]string{"SLOWLOG", "GET", "1", "x"}, wantErr("ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP.")},
		{[]string{"slowlog", "get", "1", "x"}, wantErr("ERR unknown subcommand or wrong number of arguments for 'get'. Try SLOWLOG HELP.")},
		{[]string{"SLOWLOG", "LEN", "x"}, wantErr("ERR wrong number of arguments for 'slowlog|len' command")},
		{[]string{"SLOWLOG", "NOPE"}, wantErr("ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP.")},
		{[]string{"SLOWLOG"}, wantErr("ERR wrong number of arguments for 'slowlog' command")},
		{[]string{"SLOWLOG", "HELP"}, "*12\r\n+SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n" +
			"+GET [<count>]\r\n+    Return top <count> entries from the slowlog (default: 10, -1 mean all).\r\n" +
			"+    Entries are made of:\r\n" +
			"+    id, timestamp, time in microseconds, arguments array, client IP and port,\r\n" +
			"+    client name\r\n+LEN\r\n+    Return the length of the slowlog.\r\n+RESET\r\n+    Reset the slowlog.\r\n" +
			"+HELP\r\n+    Prints this help.\r\n"},
		{[]string{"SLOWLOG", "LEN"}, wantInt(11)}, // the rejected ones are not there
		{[]string{"SLOWLOG", "RESET"}, wantStatus("OK")},
		{[]string{"SLOWLOG", "LEN"}, wantInt(1)}, // the RESET
	})
	want := wantArray(2) + slowlogEntryBytes(h, 13, "", "SLOWLOG", "LEN") + slowlogEntryBytes(h, 12, "", "SLOWLOG", "RESET")
	if got := normDuration(h.do("SLOWLOG", "GET", "2")); got != want {
		t.Fatalf("SLOWLOG GET 2\n got %q\nwant %q", got, want)
	}
	if got := normDuration(h.do("SLOWLOG", "GET", "9223372036854775807")); !strings.HasPrefix(got, wantArray(3)) {
		t.Fatalf("SLOWLOG GET <max> = %q", got)
	}
}

// TestSlowlogMaxLen: the slow log keeps the newest slowlog-max-len entries.
func TestSlowlogMaxLen(t *testing.T) {
	h := slowlogHarness(t, 0, 3)
	for i := range 5 {
		h.do("ECHO", strconv.Itoa(i)) // entries 0 to 4
	}
	want := wantArray(3) + slowlogEntryBytes(h, 4, "", "ECHO", "4") +
		slowlogEntryBytes(h, 3, "", "ECHO", "3") + slowlogEntryBytes(h, 2, "", "ECHO", "2")
	if got := normDuration(h.do("SLOWLOG", "GET", "-1")); got != want {
		t.Fatalf("SLOWLOG GET -1\n got %q\nwant %q", got, want)
	}
	if got := h.do("SLOWLOG", "LEN"); got != wantInt(3) {
		t.Fatalf("SLOWLOG LEN = %q", got)
	}
}

// TestSlowlogThreshold: commands faster than the threshold are not kept; a
// negative threshold or a max-len of 0 keeps nothing, and SLOWLOG still
// answers.
func TestSlowlogThreshold(t *testing.T) {
	for _, c := range []struct {
		name       string
		slowerThan int64
		maxLen     int
	}{
		{"fast commands", 10_000_000, 128}, {"disabled", -1, 128}, {"max-len 0", 0, 0},
		{"a threshold beyond time.Duration", 1 << 62, 128},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := slowlogHarness(t, c.slowerThan, c.maxLen)
			h.do("PING")
			h.runSteps([]replyStep{
				{[]string{"SLOWLOG", "GET"}, wantArray(0)},
				{[]string{"SLOWLOG", "LEN"}, wantInt(0)},
				{[]string{"SLOWLOG", "RESET"}, wantStatus("OK")},
			})
		})
	}
}

// TestSlowlogConfig: CONFIG GET reports the slow log's settings.
func TestSlowlogConfig(t *testing.T) {
	h := slowlogHarness(t, 10000, 128)
	want := wantArray(4) + wantBulks("slowlog-log-slower-than", "10000", "slowlog-max-len", "128")
	if got := h.do("CONFIG", "GET", "slowlog*"); got != want {
		t.Fatalf("CONFIG GET slowlog* = %q, want %q", got, want)
	}
}

// TestSlowlogAllocs: with the slow log on, a command under the threshold
// costs a comparison and allocates nothing.
func TestSlowlogAllocs(t *testing.T) {
	h := slowlogHarness(t, 10_000_000, 128)
	args := [][]byte{[]byte("CL.THROTTLE"), []byte("user123"), []byte("15"), []byte("30"), []byte("60"), []byte("0")}
	h.do("CL.THROTTLE", "user123", "15", "30", "60")
	w := discardWriter{}
	if allocs := testing.AllocsPerRun(1000, func() { h.cmds.Dispatch(w, h.client, args) }); allocs != 0 {
		t.Errorf("CL.THROTTLE with the slow log on: %v allocs, want 0", allocs)
	}
}

// TestSlowlogConcurrent records, reads and resets from several clients at
// once; run with -race. Entry ids stay unique and the length bounded.
func TestSlowlogConcurrent(t *testing.T) {
	h := slowlogHarness(t, 0, 16)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := NewClient(int64(i+1), "127.0.0.1:1", "127.0.0.1:6379", h.clock.Now())
			for j := range 200 {
				for _, cmd := range [][]string{{"PING"}, {"SLOWLOG", "GET", "5"}, {"SLOWLOG", "LEN"}} {
					bargs := make([][]byte, len(cmd))
					for k, a := range cmd {
						bargs[k] = []byte(a)
					}
					h.cmds.Dispatch(&respWriter{proto: 2}, cl, bargs)
				}
				if j%50 == 0 {
					h.cmds.Dispatch(&respWriter{proto: 2}, cl, [][]byte{[]byte("SLOWLOG"), []byte("RESET")})
				}
			}
		}()
	}
	wg.Wait()
	sl := h.cmds.obs.slowlog
	entries := sl.get(100)
	if len(entries) != 16 {
		t.Fatalf("%d entries, want 16", len(entries))
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].id >= entries[i-1].id {
			t.Fatalf("ids not newest first: %d then %d", entries[i-1].id, entries[i].id)
		}
	}
	if want := int64(4*200*3 + 4*4); entries[0].id != want-1 {
		t.Errorf("newest id %d, want %d", entries[0].id, want-1)
	}
}
