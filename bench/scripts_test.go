package main

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// evalInts runs a loaded script and returns its reply as integers.
func evalInts(t *testing.T, rdb *redis.Client, sha, key string, args ...any) []int64 {
	t.Helper()
	v, err := rdb.EvalSha(context.Background(), sha, []string{key}, args...).Result()
	if err != nil {
		t.Fatalf("EVALSHA %s %v: %v", key, args, err)
	}
	return toInts(t, v)
}

// doInts runs a command and returns its reply as integers.
func doInts(t *testing.T, rdb *redis.Client, args ...any) []int64 {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return toInts(t, v)
}

func toInts(t *testing.T, v any) []int64 {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("reply %#v is not an array", v)
	}
	out := make([]int64, len(list))
	for i, x := range list {
		if out[i], ok = x.(int64); !ok {
			t.Fatalf("reply %#v has a non-integer", v)
		}
	}
	return out
}

func TestGCRAScriptAdmitsTheBurstThenLimits(t *testing.T) {
	addr := startTestRedis(t)
	ctx := context.Background()
	sc, err := loadScripts(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	rdb := newClient(addr, 1)
	defer rdb.Close()

	// The README's session: max_burst 15 admits 16 at once, then 30 a minute.
	start := time.Now()
	if got, want := evalInts(t, rdb, sc.gcra, "u", 15, 30, 60), []int64{0, 16, 15, -1, 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first call: %v, want %v", got, want)
	}
	for i := 2; i <= 16; i++ {
		got := evalInts(t, rdb, sc.gcra, "u", 15, 30, 60)
		if want := []int64{0, 16, int64(16 - i), -1, int64(2 * i)}; !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d: %v, want %v", i, got, want)
		}
	}
	if got, want := evalInts(t, rdb, sc.gcra, "u", 15, 30, 60), []int64{1, 16, 0, 2, 32}; !reflect.DeepEqual(got, want) {
		t.Fatalf("17th call: %v, want %v (limited, retry in 2 s)", got, want)
	}
	if got, want := evalInts(t, rdb, sc.gcra, "u", 15, 30, 60, 0), []int64{0, 16, 0, -1, 32}; !reflect.DeepEqual(got, want) {
		t.Fatalf("a peek (quantity 0): %v, want %v", got, want)
	}

	// The key holds the TAT in ns since the epoch, as redis-cell stores it:
	// 16 emission intervals of 2 s past the first call, with that expiry.
	v, err := rdb.Get(ctx, "u").Result()
	if err != nil {
		t.Fatal(err)
	}
	tat, err := strconv.ParseInt(v, 10, 64)
	if err != nil || len(v) != 19 {
		t.Fatalf("the key holds %q, want a TAT of 19 digits", v)
	}
	if d := time.Duration(tat - start.Add(32*time.Second).UnixNano()); d < -time.Second || d > time.Second {
		t.Errorf("TAT %d is %v from the first call + 32 s", tat, d)
	}
	if pttl := rdb.PTTL(ctx, "u").Val(); pttl < 30*time.Second || pttl > 32*time.Second {
		t.Errorf("PTTL %v, want about 32 s", pttl)
	}
}

// TestGCRAScriptMatchesCellserver runs the same calls on the script and on
// cellserver's CL.THROTTLE, one right after the other: the replies must be
// the same. The quotas' emission intervals are long enough that the few
// milliseconds between the two calls never change a rounded figure.
func TestGCRAScriptMatchesCellserver(t *testing.T) {
	addr := startTestRedis(t)
	sc, err := loadScripts(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	lua := newClient(addr, 1)
	defer lua.Close()
	cell := newClient(startTestCellserver(t), 1)
	defer cell.Close()

	for _, tc := range []struct {
		burst, count, period int64
		quantities           []int64
	}{
		{15, 30, 60, []int64{1, 1, 5, 0, 20, 9, 1, 1, 0}},
		{0, 1, 1, []int64{1, 1, 0, 1}},
		{3, 7, 1, []int64{1, 2, 1, 1, 1, 0, 4}},
		{2, 3, 10, []int64{3, 1, 0, 2, 4}},
		{9, 1000, 60, []int64{1, 10, 1, 11}},
	} {
		key := fmt.Sprintf("k:%d:%d:%d", tc.burst, tc.count, tc.period)
		for i, q := range tc.quantities {
			want := doInts(t, cell, "CL.THROTTLE", key, tc.burst, tc.count, tc.period, q)
			got := evalInts(t, lua, sc.gcra, key, tc.burst, tc.count, tc.period, q)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s call %d (quantity %d): script %v, CL.THROTTLE %v", key, i+1, q, got, want)
			}
		}
	}
}

func TestZSETScriptAdmitsLimitPerWindow(t *testing.T) {
	addr := startTestRedis(t)
	ctx := context.Background()
	sc, err := loadScripts(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	rdb := newClient(addr, 1)
	defer rdb.Close()
	cell := newClient(startTestCellserver(t), 1)
	defer cell.Close()

	// A window long enough for the six calls to fall in it on a loaded machine.
	const limit, window = 5, time.Second
	step := func(wantLimited bool, wantRemaining int64) {
		t.Helper()
		got := evalInts(t, rdb, sc.zset, "w", limit, window.Milliseconds())
		want := []int64{0, limit, wantRemaining}
		if wantLimited {
			want[0] = 1
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ZSET script: %v, want %v", got, want)
		}
		// SW.THROTTLE decides the same: limited, limit, remaining.
		sw := doInts(t, cell, "SW.THROTTLE", "w", limit, fmt.Sprintf("%dms", window.Milliseconds()))
		if !reflect.DeepEqual(sw[:3], want) {
			t.Fatalf("SW.THROTTLE: %v, want %v first", sw, want)
		}
	}
	for i := range limit {
		step(false, int64(limit-1-i))
	}
	step(true, 0)
	if n := rdb.ZCard(ctx, "w").Val(); n != limit {
		t.Errorf("ZCARD %d, want %d: one member per admitted request", n, limit)
	}
	if pttl := rdb.PTTL(ctx, "w").Val(); pttl <= 0 || pttl > window {
		t.Errorf("PTTL %v, want at most the window", pttl)
	}
	// The window is a real clock's: wait until the requests have left it.
	time.Sleep(window + 50*time.Millisecond)
	step(false, limit-1)
}

func TestZSETScriptMembersNeverCollide(t *testing.T) {
	addr := startTestRedis(t)
	ctx := context.Background()
	sc, err := loadScripts(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	rdb := newClient(addr, 4)
	defer rdb.Close()
	// Pipelined calls land within the same microsecond, some of them.
	pipe := rdb.Pipeline()
	for range 200 {
		pipe.EvalSha(ctx, sc.zset, []string{"c"}, 1000, 60000)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, "c").Val(); n != 200 {
		t.Errorf("ZCARD %d after 200 admitted requests, want 200", n)
	}
}
