package compat_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestCommandInfoRoutingMatchesRedis: what cluster-aware clients read from
// COMMAND INFO to route a command (arity and key positions) is Redis 7's for
// every command cellserver shares with Redis. Flags, ACL categories and tips
// are cellserver's own (see the README's compatibility section).
func TestCommandInfoRoutingMatchesRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cell := startServer(t).goRedis(t)
	real := redis.NewClient(&redis.Options{Addr: startRedis(t).Addr, Protocol: 2})
	t.Cleanup(func() { real.Close() })

	names, err := cell.Do(ctx, "COMMAND", "LIST").StringSlice()
	if err != nil || len(names) == 0 {
		t.Fatalf("COMMAND LIST: %v %v", names, err)
	}
	compared := 0
	for _, name := range names {
		want, err := routing(ctx, real, name)
		if err != nil {
			continue // not a Redis command (cl.throttle)
		}
		got, err := routing(ctx, cell, name)
		if err != nil {
			t.Errorf("COMMAND INFO %s on cellserver: %v", name, err)
			continue
		}
		if got != want {
			t.Errorf("COMMAND INFO %s: arity/first/last/step = %v, Redis has %v", name, got, want)
		}
		compared++
	}
	if compared < 20 {
		t.Errorf("compared %d commands with Redis, want every shared one (at least 20)", compared)
	}
}

// routing returns a command's arity, first key, last key and key step from
// COMMAND INFO.
func routing(ctx context.Context, c *redis.Client, name string) ([4]int64, error) {
	var out [4]int64
	v, err := c.Do(ctx, "COMMAND", "INFO", name).Slice()
	if err != nil {
		return out, err
	}
	if len(v) != 1 || v[0] == nil {
		return out, redis.Nil
	}
	info := v[0].([]interface{})
	for i, j := range []int{1, 3, 4, 5} {
		out[i] = info[j].(int64)
	}
	return out, nil
}
