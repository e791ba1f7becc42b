package commands

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// commandStats returns INFO commandstats' line of each command called,
// without its times, which vary.
func commandStats(t *testing.T, h *harness) map[string]string {
	t.Helper()
	text := infoText(t, h, "commandstats")
	out := make(map[string]string)
	for _, m := range regexp.MustCompile(`(?m)^cmdstat_([^:]+):calls=(\d+),usec=\d+,usec_per_call=\d+\.\d\d,(.*)\r$`).
		FindAllStringSubmatch(text, -1) {
		out[m[1]] = "calls=" + m[2] + "," + m[3]
	}
	return out
}

// wantCommandStats checks INFO commandstats' line of each command in want
// (as commandStats gives it).
func wantCommandStats(t *testing.T, h *harness, want map[string]string) {
	t.Helper()
	got := commandStats(t, h)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("cmdstat_%s = %q, want %q", name, got[name], w)
		}
	}
}

// TestInfoErrorstats: a sequence of failing commands gives the counts
// Redis 7.0.15 gives for the same sequence (with SET, HGET and a script's
// error_reply standing in for CL.THROTTLE, a WRONGTYPE and redis-cell's
// "Cell error"): every error reply counted by its code, in errorstats and
// total_error_replies; an unknown command or subcommand in no command's
// line; an arity error as the command's rejected call; an error inside
// EXEC as the failed call of the command that wrote it, not of EXEC.
func TestInfoErrorstats(t *testing.T) {
	h := newHarness(t)
	h.runSteps([]replyStep{
		{[]string{"MULTI"}, wantStatus("OK")},
		{[]string{"CL.THROTTLE", "k", "0", "1", "60"}, wantStatus("QUEUED")},
		{[]string{"SW.THROTTLE", "k", "3", "1m"}, wantStatus("QUEUED")},
		{[]string{"CL.THROTTLE", "k", "0", "0", "60"}, wantStatus("QUEUED")},
		{[]string{"EXEC"}, wantArray(3) + ints(0, 1, 0, -1, 60) + wantErr(msgWrongType) + wantErr(msgCellZeroRate)},
		{[]string{"EXEC"}, wantErr(msgExecNoMulti)},
		{[]string{"MULTI"}, wantStatus("OK")},
		{[]string{"MULTI"}, wantErr(msgMultiNested)},
		{[]string{"DISCARD"}, wantStatus("OK")},
		{[]string{"HELLO", "4"}, wantErr(msgNoProto)},
		{[]string{"NOSUCH"}, wantErr("ERR unknown command 'NOSUCH', with args beginning with: ")},
		{[]string{"ECHO"}, wantErr("ERR wrong number of arguments for 'echo' command")},
		{[]string{"CLIENT", "NOSUCH"}, wantErr("ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.")},
	})
	want := "# Errorstats\r\n" +
		"errorstat_Cell:count=1\r\n" +
		"errorstat_ERR:count=5\r\n" +
		"errorstat_NOPROTO:count=1\r\n" +
		"errorstat_WRONGTYPE:count=1\r\n"
	if got := infoText(t, h, "errorstats"); got != want {
		t.Errorf("INFO errorstats\n got %q\nwant %q", got, want)
	}
	stats := infoText(t, h, "stats")
	if got := field(t, stats, "total_error_replies"); got != "8" {
		t.Errorf("total_error_replies = %s, want 8", got)
	}
	// Ten, EXEC's three commands included, and INFO errorstats.
	if got := field(t, stats, "total_commands_processed"); got != "11" {
		t.Errorf("total_commands_processed = %s, want 11", got)
	}
	got := commandStats(t, h)
	for name, want := range map[string]string{
		"multi":       "calls=3,rejected_calls=0,failed_calls=1",
		"exec":        "calls=2,rejected_calls=0,failed_calls=1",
		"discard":     "calls=1,rejected_calls=0,failed_calls=0",
		"cl.throttle": "calls=2,rejected_calls=0,failed_calls=1",
		"sw.throttle": "calls=1,rejected_calls=0,failed_calls=1",
		"hello":       "calls=1,rejected_calls=0,failed_calls=1",
		"echo":        "calls=0,rejected_calls=1,failed_calls=0",
		"info":        "calls=2,rejected_calls=0,failed_calls=0",
	} {
		if got[name] != want {
			t.Errorf("cmdstat_%s = %q, want %q", name, got[name], want)
		}
		delete(got, name)
	}
	if len(got) > 0 {
		t.Errorf("commandstats lists more commands: %q", got)
	}
}

// TestInfoErrorstatsExecLastSucceeds: EXEC is not a failed call because a
// command it ran failed, whichever ran last, as in Redis 7.0.
func TestInfoErrorstatsExecLastSucceeds(t *testing.T) {
	h := newHarness(t)
	h.do("CL.THROTTLE", "k", "0", "1", "60")
	h.do("MULTI")
	h.do("SW.THROTTLE", "k", "3", "1m")
	h.do("CL.THROTTLE", "k", "0", "1", "60")
	h.do("EXEC")
	wantCommandStats(t, h, map[string]string{
		"exec":        "calls=1,rejected_calls=0,failed_calls=0",
		"sw.throttle": "calls=1,rejected_calls=0,failed_calls=1",
		"cl.throttle": "calls=2,rejected_calls=0,failed_calls=0",
	})
	if got := infoText(t, h, "errorstats"); got != "# Errorstats\r\nerrorstat_WRONGTYPE:count=1\r\n" {
		t.Errorf("INFO errorstats = %q", got)
	}
}

// TestInfoErrorstatsAuth: before authenticating, as in Redis 7.0.15 with a
// requirepass: NOAUTH rejects a command (its rejected call), an arity error
// comes first, and AUTH's and HELLO's refusals are their failed calls.
func TestInfoErrorstatsAuth(t *testing.T) {
	h := newHarness(t).withOpts(Options{Users: loadUsers(t, "", defaultPass)})
	h.client.Authenticated = false
	h.runSteps([]replyStep{
		{[]string{"GET", "k"}, wantErr(msgNoAuthText)},
		{[]string{"AUTH", "wrong"}, wantErr(msgWrongPassText)},
		{[]string{"AUTH", "default", "wrong"}, wantErr(msgWrongPassText)},
		{[]string{"HELLO", "3"}, wantErr(msgHelloNoAuthText)},
		{[]string{"NOSUCH"}, wantErr("ERR unknown command 'NOSUCH', with args beginning with: ")},
		{[]string{"GET"}, wantErr("ERR wrong number of arguments for 'get' command")},
		{[]string{"AUTH", defaultPass}, wantStatus("OK")},
	})
	want := "# Errorstats\r\n" +
		"errorstat_ERR:count=2\r\n" +
		"errorstat_NOAUTH:count=2\r\n" +
		"errorstat_WRONGPASS:count=2\r\n"
	if got := infoText(t, h, "errorstats"); got != want {
		t.Errorf("INFO errorstats\n got %q\nwant %q", got, want)
	}
	if got := field(t, infoText(t, h, "stats"), "total_error_replies"); got != "6" {
		t.Errorf("total_error_replies = %s, want 6", got)
	}
	wantCommandStats(t, h, map[string]string{
		"get":   "calls=0,rejected_calls=2,failed_calls=0",
		"auth":  "calls=3,rejected_calls=0,failed_calls=2",
		"hello": "calls=1,rejected_calls=0,failed_calls=1",
	})
}

// TestInfoErrorstatsLater: errors answered after the command paused (shared
// mode) are counted once each, by code, as in memory.
func TestInfoErrorstatsLater(t *testing.T) {
	shared, memory := newStoreHarness(t)
	for _, h := range []*harness{shared, memory} {
		h.doPaused("CL.THROTTLE", "k", "0", "1", "60")
		h.doPaused("SW.THROTTLE", "k", "3", "1m")      // a decision's error
		h.doPaused("CL.THROTTLE", "k", "0", "0", "60") // CL.THROTTLE's
		h.doPaused("MULTI")
		h.doPaused("FW.THROTTLE", "k", "3", "1m")
		h.doPaused("CL.THROTTLE", "k", "0", "1", "60")
		h.doPaused("EXEC")
		h.doPaused("DEL", "k")
	}
	want := "# Errorstats\r\n" +
		"errorstat_Cell:count=1\r\n" +
		"errorstat_WRONGTYPE:count=2\r\n"
	for name, h := range map[string]*harness{"shared": shared, "memory": memory} {
		if got := infoText(t, h, "errorstats"); got != want {
			t.Errorf("%s: INFO errorstats\n got %q\nwant %q", name, got, want)
		}
		if got := field(t, infoText(t, h, "stats"), "total_error_replies"); got != "3" {
			t.Errorf("%s: total_error_replies = %s, want 3", name, got)
		}
		if got := commandStats(t, h)["exec"]; got != "calls=1,rejected_calls=0,failed_calls=0" {
			t.Errorf("%s: cmdstat_exec = %q", name, got)
		}
	}
	// A keyspace command the store failed.
	shared.doPaused("DEL", "bad")
	if got := infoText(t, shared, "errorstats"); !strings.Contains(got, "\r\nerrorstat_ERR:count=1\r\n") {
		t.Errorf("INFO errorstats after a failed DEL = %q", got)
	}
}

// TestInfoErrorstatsResetStat: CONFIG RESETSTAT forgets every code, as
// Redis's does, and total_error_replies starts again from 0.
func TestInfoErrorstatsResetStat(t *testing.T) {
	h := newHarness(t)
	h.do("NOSUCH")
	h.do("HELLO", "4")
	h.do("CONFIG", "RESETSTAT")
	if got := infoText(t, h, "errorstats"); got != "# Errorstats\r\n" {
		t.Errorf("INFO errorstats after RESETSTAT = %q", got)
	}
	h.do("HELLO", "4")
	if got := infoText(t, h, "errorstats"); got != "# Errorstats\r\nerrorstat_NOPROTO:count=1\r\n" {
		t.Errorf("INFO errorstats = %q", got)
	}
	if got := field(t, infoText(t, h, "stats"), "total_error_replies"); got != "1" {
		t.Errorf("total_error_replies = %s, want 1", got)
	}
}

// TestErrorCode: an error's code is found as Redis 7.0.15 finds it, checked
// against its replies to EVAL "return redis.error_reply(msg)".
func TestErrorCode(t *testing.T) {
	for _, c := range []struct{ msg, code string }{
		{"ERR syntax error", "ERR"},
		{msgWrongType, "WRONGTYPE"},
		{msgCellZeroRate, "Cell"},
		{"NOSPACE", "ERR"},
		{"", "ERR"},
		{" lead", ""},
		{strings.Repeat("a", 30) + " x", strings.Repeat("a", 30)}, // the space is the reply's 32nd byte
		{strings.Repeat("a", 31) + " x", "ERR"},                   // its 33rd
		{"A\r\nB C", "A"},                                         // the writer makes CR and LF spaces
	} {
		if got := errorCode(c.msg); got != c.code {
			t.Errorf("errorCode(%q) = %q, want %q", c.msg, got, c.code)
		}
	}
}

// TestErrorStatsWrite: codes are listed in byte order, with INFO's unsafe
// characters (# : CR LF) written as '_', as Redis lists them.
func TestErrorStatsWrite(t *testing.T) {
	var s errorStats
	for _, msg := range []string{"b x", "a:b#c x", "B x", "b y", "ERR z"} {
		s.count(msg)
	}
	var b strings.Builder
	s.write(&b)
	want := "errorstat_B:count=1\r\nerrorstat_ERR:count=1\r\nerrorstat_a_b_c:count=1\r\nerrorstat_b:count=2\r\n"
	if b.String() != want {
		t.Errorf("errorstats\n got %q\nwant %q", b.String(), want)
	}
	if got := s.total(); got != 5 {
		t.Errorf("total = %d, want 5", got)
	}
}

// TestErrorStatsBounded: past maxErrorCodes distinct codes, a new code is
// counted under ERRORSTATS_OVERFLOW; the codes already kept go on counting
// and every error is in the total.
func TestErrorStatsBounded(t *testing.T) {
	var s errorStats
	for i := range maxErrorCodes + 5 {
		s.count(fmt.Sprintf("E%03d x", i))
	}
	s.count("E000 again")
	var b strings.Builder
	s.write(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\r\n"), "\r\n")
	if len(lines) != maxErrorCodes+1 {
		t.Fatalf("%d lines, want %d: %q", len(lines), maxErrorCodes+1, b.String())
	}
	for _, want := range []string{"errorstat_E000:count=2", "errorstat_E127:count=1", "errorstat_ERRORSTATS_OVERFLOW:count=5"} {
		if !strings.Contains("\r\n"+b.String(), "\r\n"+want+"\r\n") {
			t.Errorf("errorstats lack %q", want)
		}
	}
	if strings.Contains(b.String(), "E128") {
		t.Errorf("a code past the bound is listed: %q", b.String())
	}
	if got, want := s.total(), int64(maxErrorCodes+6); got != want {
		t.Errorf("total = %d, want %d", got, want)
	}
	s.reset()
	s.count("E200 x")
	b.Reset()
	s.write(&b)
	if b.String() != "errorstat_E200:count=1\r\n" {
		t.Errorf("after reset: %q", b.String())
	}
}

// TestErrorStatsConcurrent counts errors from several clients while they
// read the counts, first with CONFIG RESETSTAT beside them (for -race),
// then without, when every error is counted once.
func TestErrorStatsConcurrent(t *testing.T) {
	h := newHarness(t)
	const clients, rounds = 4, 200
	run := func(resets bool) {
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := NewClient(int64(i+2), "127.0.0.1:1", "127.0.0.1:6379", time.Unix(0, 0))
				cmds := [][]string{{"HELLO", "4"}, {"NOSUCH"}, {"ECHO"}, {"INFO", "errorstats"}}
				if resets && i == 0 {
					cmds = append(cmds, []string{"CONFIG", "RESETSTAT"})
				}
				for j := range rounds {
					cmds[1][0] = "NOSUCH" + strconv.Itoa(j)
					for _, cmd := range cmds {
						bargs := make([][]byte, len(cmd))
						for k, a := range cmd {
							bargs[k] = []byte(a)
						}
						h.cmds.Dispatch(&respWriter{proto: 2}, cl, bargs)
					}
				}
			}()
		}
		wg.Wait()
	}
	run(true)
	h.do("CONFIG", "RESETSTAT")
	run(false)
	want := fmt.Sprintf("# Errorstats\r\nerrorstat_ERR:count=%d\r\nerrorstat_NOPROTO:count=%d\r\n",
		2*clients*rounds, clients*rounds)
	if got := infoText(t, h, "errorstats"); got != want {
		t.Errorf("INFO errorstats\n got %q\nwant %q", got, want)
	}
}

// TestDispatchCountsWithoutAllocating: counting a command, successful or
// failed with a code already seen, allocates nothing.
func TestDispatchCountsWithoutAllocating(t *testing.T) {
	h := newHarness(t)
	w := &respWriter{proto: 2}
	// PING runs; MULTI inside MULTI fails (and is not queued).
	for _, args := range [][][]byte{{[]byte("PING")}, {[]byte("MULTI")}} {
		h.cmds.Dispatch(w, h.client, args)
		h.cmds.Dispatch(w, h.client, args)
		allocs := testing.AllocsPerRun(1000, func() {
			w.buf.Reset()
			h.cmds.Dispatch(w, h.client, args)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations a call, want 0", args[0], allocs)
		}
	}
}
