package compat_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// The migration guide (docs/migration.md) shows, for each way of limiting
// rates on plain Redis that teams move from, the commands or script they
// send ("before") and the cellserver command that replaces it ("after").
// Both live in testdata/migration, which the guide quotes word for word;
// these tests send the "before" to a real redis-server and the "after" to
// cellserver, on the same requests, and compare the decisions.

const migrationGuide = "../docs/migration.md"

// migrationFile returns a file of testdata/migration.
func migrationFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "migration", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMigrationGuideQuotesTestdata: every example the tests run is in the
// guide verbatim, in a code block of its own.
func TestMigrationGuideQuotesTestdata(t *testing.T) {
	b, err := os.ReadFile(migrationGuide)
	if err != nil {
		t.Fatal(err)
	}
	guide := string(b)
	names, err := filepath.Glob(filepath.Join("testdata", "migration", "*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no examples in testdata/migration (%v)", err)
	}
	for _, name := range names {
		text := migrationFile(t, filepath.Base(name))
		lang := "redis"
		if strings.HasSuffix(name, ".lua") {
			lang = "lua"
		}
		if !strings.Contains(guide, "```"+lang+"\n"+text+"```\n") {
			t.Errorf("%s does not quote %s verbatim in a %s block", migrationGuide, name, lang)
		}
	}
}

// startClockedServer is startServer on a clock the test sets.
func startClockedServer(t *testing.T, clock *engine.ManualClock) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	eng := engine.New(engine.Options{Now: clock.Now})
	cmds := commands.New(commands.Options{Engine: eng, Version: "compat-test", Logger: logger})
	serve(t, ln, cmds, logger, func(context.Context) { eng.Close() })
	return &testServer{addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port}
}

// script is an example of testdata/migration: one command a line, with
// <placeholders> that fill fills in. It runs on one connection, so that a
// MULTI block is one transaction, and returns each command's reply.
func runScript(t *testing.T, conn *redis.Conn, text string, fill map[string]string) []any {
	t.Helper()
	var replies []any
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		for k, v := range fill {
			line = strings.ReplaceAll(line, "<"+k+">", v)
		}
		if strings.Contains(line, "<") {
			t.Fatalf("unfilled placeholder in %q", line)
		}
		var args []any
		for _, f := range strings.Fields(line) {
			args = append(args, f)
		}
		cmd := redis.NewCmd(context.Background(), args...)
		_ = conn.Process(context.Background(), cmd) // the error is cmd's
		reply, err := cmd.Result()
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		replies = append(replies, reply)
	}
	return replies
}

// connOf returns one connection of a go-redis client of addr.
func connOf(t *testing.T, addr string) *redis.Conn {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout})
	t.Cleanup(func() { rdb.Close() })
	conn := rdb.Conn()
	t.Cleanup(func() { conn.Close() })
	return conn
}

// loadScript loads a Lua file of testdata/migration into Redis and returns
// its SHA1.
func loadScript(t *testing.T, conn *redis.Conn, name string) string {
	t.Helper()
	sha, err := conn.ScriptLoad(context.Background(), migrationFile(t, name)).Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD %s: %v", name, err)
	}
	return sha
}

// decision is what a limiter said of one request.
type decision struct {
	allowed   bool
	remaining int64
}

// letters writes decisions as A (allowed) and R (refused), one a request.
func letters(ds []decision) string {
	var b strings.Builder
	for _, d := range ds {
		if d.allowed {
			b.WriteByte('A')
		} else {
			b.WriteByte('R')
		}
	}
	return b.String()
}

// ints64 reads an array reply of integers.
func ints64(t *testing.T, reply any) []int64 {
	t.Helper()
	arr, ok := reply.([]any)
	if !ok {
		t.Fatalf("reply %#v, want an array", reply)
	}
	out := make([]int64, len(arr))
	for i, v := range arr {
		switch v := v.(type) {
		case int64:
			out[i] = v
		case string:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("reply %#v: %v", reply, err)
			}
			out[i] = int64(math.Ceil(f)) // seconds, rounded up as CL.THROTTLE rounds
		default:
			t.Fatalf("reply %#v, element %d is %T", reply, i, v)
		}
	}
	return out
}

// throttleDecision reads a five-integer THROTTLE reply.
func throttleDecision(t *testing.T, reply any) decision {
	t.Helper()
	r := ints64(t, reply)
	return decision{allowed: r[0] == 0, remaining: r[2]}
}

// migrationStart is when the clocked tests' requests start: a whole hour,
// so that fixed windows of an hour start with them.
var migrationStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// TestMigrationSortedSetWindow: the sorted-set sliding window written as a
// Lua script that records only admitted requests decides as SW.THROTTLE
// does; written as a MULTI block that records every request, refused ones
// included, it keeps a client that retries every second out for good, where
// SW.THROTTLE lets it in as its old requests leave the window.
func TestMigrationSortedSetWindow(t *testing.T) {
	clock := engine.NewManualClock(migrationStart)
	cell := connOf(t, startClockedServer(t, clock).addr)
	// A Redis each, as both write the guide's key.
	scriptConn, multiConn := connOf(t, startRedis(t).Addr), connOf(t, startRedis(t).Addr)
	sha := loadScript(t, scriptConn, "zset_window.lua")
	call, multi, after := migrationFile(t, "zset_window_call.redis"), migrationFile(t, "zset_multi.redis"), migrationFile(t, "sw.redis")

	// One request a second for 21 seconds, and one half a second after
	// the tenth.
	var at []time.Duration
	for s := range 21 {
		at = append(at, time.Duration(s)*time.Second)
		if s == 10 {
			at = append(at, 10500*time.Millisecond)
		}
	}
	var viaScript, viaMulti, viaSW []decision
	for i, d := range at {
		now := migrationStart.Add(d)
		clock.Set(now)
		nowMs := now.UnixMilli()
		fill := map[string]string{
			"sha": sha, "now_ms": strconv.FormatInt(nowMs, 10),
			"window_start_ms": strconv.FormatInt(nowMs-10000, 10), "request_id": fmt.Sprintf("%d-%d", nowMs, i),
		}
		r := ints64(t, runScript(t, scriptConn, call, fill)[0])
		viaScript = append(viaScript, decision{allowed: r[0] == 1, remaining: r[1]})
		replies := runScript(t, multiConn, multi, fill)
		count := ints64(t, replies[len(replies)-1])[2] // EXEC's third reply is ZCARD's
		viaMulti = append(viaMulti, decision{allowed: count <= 5, remaining: max(5-count, 0)})
		viaSW = append(viaSW, throttleDecision(t, runScript(t, cell, after, nil)[0]))
	}
	// seconds:     0    5    10     15   20
	const wantSW = "AAAAARRRRRARAAAARRRRRA"
	const wantMulti = "AAAAARRRRRRRRRRRRRRRRR"
	if got := letters(viaSW); got != wantSW {
		t.Errorf("SW.THROTTLE: %s, want %s", got, wantSW)
	}
	for i := range viaSW {
		if viaScript[i] != viaSW[i] {
			t.Errorf("request %d at %v: the script %+v, SW.THROTTLE %+v", i, at[i], viaScript[i], viaSW[i])
		}
	}
	if got := letters(viaMulti); got != wantMulti {
		t.Errorf("MULTI block: %s, want %s (refused requests recorded)", got, wantMulti)
	}
}

// TestMigrationGCRAScript: a GCRA Lua script in go-redis/redis_rate's shape
// (burst 16, 30 a minute) and CL.THROTTLE with max_burst 15 (a limit of 16)
// agree on a burst of requests: which are admitted, how many remain, and
// the retry_after of the refused ones. Both read the real clock; the
// requests come within a fraction of the 2 s emission interval.
func TestMigrationGCRAScript(t *testing.T) {
	redisConn := connOf(t, startRedis(t).Addr)
	cell := connOf(t, startServer(t).addr)
	sha := loadScript(t, redisConn, "gcra.lua")
	call, after := migrationFile(t, "gcra_call.redis"), migrationFile(t, "cl.redis")
	for i := range 20 {
		r := ints64(t, runScript(t, redisConn, call, map[string]string{"sha": sha})[0])
		before := decision{allowed: r[0] > 0, remaining: r[1]}
		c := ints64(t, runScript(t, cell, after, nil)[0])
		got := decision{allowed: c[0] == 0, remaining: c[2]}
		if before != got {
			t.Errorf("request %d: the script %+v, CL.THROTTLE %+v", i+1, before, got)
		}
		if wantAllowed := i < 16; got.allowed != wantAllowed {
			t.Errorf("request %d: allowed %v, want %v", i+1, got.allowed, wantAllowed)
		}
		if !got.allowed && (r[2] != 2 || c[3] != 2) {
			t.Errorf("request %d: retry_after %d s (script), %d s (CL.THROTTLE), want 2", i+1, r[2], c[3])
		}
	}
}

// TestMigrationFixedWindow: INCR and EXPIRE on a key per clock hour decide
// as FW.THROTTLE, whose windows are aligned to the hour as that key's name
// is, across the hour's end.
func TestMigrationFixedWindow(t *testing.T) {
	redisConn := connOf(t, startRedis(t).Addr)
	clock := engine.NewManualClock(migrationStart)
	cell := connOf(t, startClockedServer(t, clock).addr)
	before, after := migrationFile(t, "fw_incr.redis"), migrationFile(t, "fw.redis")
	at := []time.Duration{10 * time.Second, 20 * time.Second, time.Minute, 2 * time.Minute, 30 * time.Minute,
		40 * time.Minute, 59 * time.Minute, time.Hour - time.Second, time.Hour, time.Hour + time.Second,
		2 * time.Hour, 2*time.Hour + time.Millisecond}
	var viaIncr, viaFW []decision
	for _, d := range at {
		now := migrationStart.Add(d)
		clock.Set(now)
		fill := map[string]string{"hour": strconv.FormatInt(now.Unix()/3600, 10)}
		replies := runScript(t, redisConn, before, fill)
		n := ints64(t, replies[len(replies)-1])[0] // EXEC's first reply is INCR's
		viaIncr = append(viaIncr, decision{allowed: n <= 5, remaining: max(5-n, 0)})
		viaFW = append(viaFW, throttleDecision(t, runScript(t, cell, after, nil)[0]))
	}
	const want = "AAAAARRRAAAA"
	if got := letters(viaFW); got != want {
		t.Errorf("FW.THROTTLE: %s, want %s", got, want)
	}
	for i := range viaFW {
		if viaIncr[i] != viaFW[i] {
			t.Errorf("request %d at %v: INCR %+v, FW.THROTTLE %+v", i, at[i], viaIncr[i], viaFW[i])
		}
	}
}
