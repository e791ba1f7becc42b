package persist

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// usedMemory reads INFO memory's used_memory.
func usedMemory(t *testing.T, ctx context.Context, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}

// TestRedisZSETMemory measures, for comparison with cellserver's SW keys,
// what a real Redis spends on the hand-written sliding window: a sorted set
// per client holding one member per request (score and member the
// request's time in ms, with a sequence number to keep members unique),
// with an expiry. 1,000 keys of 100 requests each; INFO memory's
// used_memory before and after, divided by 1,000. With Redis's default
// zset-max-listpack-entries (128) such a set is a listpack; above it (a
// busier client, or a lower setting) a skiplist, measured too.
//
//	go test -count=1 -v -run TestRedisZSETMemory ./persist/
func TestRedisZSETMemory(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	const keys, perKey = 1000, 100
	for _, enc := range []struct {
		name    string
		entries string // zset-max-listpack-entries
	}{{"listpack (default)", "128"}, {"skiplist", "0"}} {
		if err := rdb.ConfigSet(ctx, "zset-max-listpack-entries", enc.entries).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		before := usedMemory(t, ctx, rdb)
		nowMs := time.Now().UnixMilli()
		pipe := rdb.Pipeline()
		for k := range keys {
			key := fmt.Sprintf("key:%012d", k) // 16 bytes, as the engine's figures
			for r := range perKey {
				at := nowMs + int64(r)*10
				pipe.ZAdd(ctx, key, redis.Z{Score: float64(at), Member: fmt.Sprintf("%d-%d", at, r)})
			}
			pipe.PExpire(ctx, key, time.Hour)
			if k%100 == 99 {
				if _, err := pipe.Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		enc2, err := rdb.ObjectEncoding(ctx, "key:000000000000").Result()
		if err != nil {
			t.Fatal(err)
		}
		after := usedMemory(t, ctx, rdb)
		t.Logf("Redis %s: ZSET of %d requests (%s): %d bytes a key (used_memory delta over %d keys)",
			redisVersion(t, ctx, rdb), perKey, enc2, (after-before)/keys, keys)
	}
}

func redisVersion(t *testing.T, ctx context.Context, rdb *redis.Client) string {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			return v
		}
	}
	return "?"
}
