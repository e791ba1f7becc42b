package compat_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisHandshake checks that go-redis's opening (HELLO 3, then CLIENT
// SETINFO lib-name and lib-ver) took: the connection speaks RESP3 and the
// server knows the library.
func TestGoRedisHandshake(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()
	info, err := rdb.Do(ctx, "CLIENT", "INFO").Text()
	if err != nil {
		t.Fatalf("CLIENT INFO: %v", err)
	}
	for _, want := range []string{" resp=3", " lib-name=go-redis(", " lib-ver=", " cmd=client|info"} {
		if !strings.Contains(info, want) {
			t.Errorf("CLIENT INFO lacks %q:\n%s", want, info)
		}
	}
	// In RESP3 a missing key is RESP3's null, which go-redis reads as nil.
	if _, err := rdb.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET missing: %v, want redis.Nil", err)
	}
}

func TestGoRedisRESP2(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t, func(o *redis.Options) { o.Protocol = 2 })
	ctx := context.Background()
	if got, err := throttle(ctx, rdb, "user123", "15", "30", "60"); err != nil || !slices.Equal(got, allowed(16, 15, 2)) {
		t.Errorf("CL.THROTTLE = %v, %v; want %v", got, err, allowed(16, 15, 2))
	}
	if _, err := throttle(ctx, rdb, "user123", "abc", "30", "60"); err == nil || err.Error() != cellParseInt+"abc" {
		t.Errorf("CL.THROTTLE abc: %v, want %q", err, cellParseInt+"abc")
	}
	if _, err := rdb.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET missing: %v, want redis.Nil", err)
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 1 {
		t.Errorf("DBSIZE = %d, %v; want 1", n, err)
	}
	info, err := rdb.Do(ctx, "CLIENT", "INFO").Text()
	if err != nil || !strings.Contains(info, " resp=2") {
		t.Errorf("CLIENT INFO = %q, %v; want resp=2", info, err)
	}
}

func TestGoRedisPipeline(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()

	pipe := rdb.Pipeline()
	var cmds []*redis.Cmd
	for range 5 {
		cmds = append(cmds, pipe.Do(ctx, "CL.THROTTLE", "piped", "15", "30", "60"))
	}
	bad := pipe.Do(ctx, "CL.THROTTLE", "piped", "15", "0", "60")
	exists := pipe.Exists(ctx, "piped")
	if _, err := pipe.Exec(ctx); err == nil || err.Error() != cellZeroRate {
		t.Errorf("pipeline Exec: %v, want the first error %q", err, cellZeroRate)
	}
	for i, c := range cmds {
		want := allowed(16, int64(15-i), int64(2*(i+1)))
		if got, err := c.Int64Slice(); err != nil || !slices.Equal(got, want) {
			t.Errorf("pipelined call %d = %v, %v; want %v", i+1, got, err, want)
		}
	}
	if err := bad.Err(); err == nil || err.Error() != cellZeroRate {
		t.Errorf("pipelined zero rate: %v", err)
	}
	if n, err := exists.Result(); err != nil || n != 1 {
		t.Errorf("pipelined EXISTS = %d, %v", n, err)
	}
}

func TestGoRedisTransaction(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()

	var first, second, usage *redis.Cmd
	var ttl *redis.DurationCmd
	_, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		first = pipe.Do(ctx, "CL.THROTTLE", "tx", "0", "1", "60")
		second = pipe.Do(ctx, "CL.THROTTLE", "tx", "0", "1", "60")
		usage = pipe.Do(ctx, "CL.THROTTLE", "tx") // queued; fails inside EXEC
		ttl = pipe.TTL(ctx, "tx")
		return nil
	})
	if err == nil || err.Error() != cellUsage {
		t.Errorf("TxPipelined: %v, want the queued command's error %q", err, cellUsage)
	}
	if got, err := first.Int64Slice(); err != nil || !slices.Equal(got, allowed(1, 0, 60)) {
		t.Errorf("first = %v, %v", got, err)
	}
	if got, err := second.Int64Slice(); err != nil || !slices.Equal(got, []int64{1, 1, 0, 60, 60}) {
		t.Errorf("second = %v, %v", got, err)
	}
	if err := usage.Err(); err == nil || err.Error() != cellUsage {
		t.Errorf("usage = %v", err)
	}
	if d, err := ttl.Result(); err != nil || d.Seconds() != 60 {
		t.Errorf("TTL in EXEC = %v, %v; want 60s", d, err)
	}

	// A transaction whose commands all succeed.
	cmds, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Do(ctx, "CL.THROTTLE", "tx2", "15", "30", "60")
		pipe.Do(ctx, "CL.THROTTLE", "tx2", "15", "30", "60", "2")
		pipe.Del(ctx, "tx2")
		pipe.Do(ctx, "CL.THROTTLE", "tx2", "15", "30", "60")
		return nil
	})
	if err != nil || len(cmds) != 4 {
		t.Fatalf("TxPipelined: %d replies, %v", len(cmds), err)
	}
	wants := [][]int64{allowed(16, 15, 2), allowed(16, 13, 6), nil, allowed(16, 15, 2)}
	for i, want := range wants {
		if want == nil {
			continue
		}
		if got, err := cmds[i].(*redis.Cmd).Int64Slice(); err != nil || !slices.Equal(got, want) {
			t.Errorf("EXEC reply %d = %v, %v; want %v", i+1, got, err, want)
		}
	}
}

func TestGoRedisBinary(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()

	for _, key := range []string{"a\x00b c", "\xff\xfe", "line\r\nbreak", "\x00", strings.Repeat("k", 10000)} {
		if got, err := throttle(ctx, rdb, key, "15", "30", "60"); err != nil || !slices.Equal(got, allowed(16, 15, 2)) {
			t.Errorf("CL.THROTTLE %q = %v, %v; want %v", key, got, err, allowed(16, 15, 2))
		}
		if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("EXISTS %q = %d, %v", key, n, err)
		}
	}
	keys, err := rdb.Keys(ctx, "\xff*").Result()
	if err != nil || !slices.Equal(keys, []string{"\xff\xfe"}) {
		t.Errorf("KEYS \\xff* = %q, %v", keys, err)
	}

	// Row 13: redis-cell crashes Redis on a non-UTF-8 argument; cellserver
	// answers with the parse error, raw byte included, and keeps serving.
	_, err = throttle(ctx, rdb, "k", "1\xff", "30", "60")
	if want := "Cell error: Store error: Couldn't parse as integer: 1\xff"; err == nil || err.Error() != want {
		t.Errorf("CL.THROTTLE k 1\\xff: %q, want %q", err, want)
	}
	if got, err := throttle(ctx, rdb, "k", "15", "30", "60"); err != nil || !slices.Equal(got, allowed(16, 15, 2)) {
		t.Errorf("after the bad argument: %v, %v", got, err)
	}
	if pong, err := rdb.Ping(ctx).Result(); err != nil || pong != "PONG" {
		t.Errorf("PING = %q, %v", pong, err)
	}
}
