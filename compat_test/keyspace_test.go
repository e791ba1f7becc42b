package compat_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestDelResetsLimit(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()
	steps := []struct {
		name string
		want []int64
	}{
		{"first call allowed", []int64{0, 1, 0, -1, 60}},
		{"second call limited", []int64{1, 1, 0, 60, 60}},
	}
	for _, st := range steps {
		if got, err := throttle(ctx, rdb, "reset", "0", "1", "60"); err != nil || !slices.Equal(got, st.want) {
			t.Fatalf("%s: got %v, %v; want %v", st.name, got, err, st.want)
		}
	}
	if n, err := rdb.Del(ctx, "reset", "missing").Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d, %v; want 1", n, err)
	}
	if got, err := throttle(ctx, rdb, "reset", "0", "1", "60"); err != nil || !slices.Equal(got, steps[0].want) {
		t.Fatalf("after DEL: got %v, %v; want a fresh limit %v", got, err, steps[0].want)
	}
	if n, err := rdb.Unlink(ctx, "reset").Result(); err != nil || n != 1 {
		t.Fatalf("UNLINK = %d, %v; want 1", n, err)
	}
	if n, err := rdb.Exists(ctx, "reset").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after UNLINK = %d, %v; want 0", n, err)
	}
}

func TestKeyInspection(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()

	before := time.Now()
	if _, err := throttle(ctx, rdb, "user123", "15", "30", "60"); err != nil {
		t.Fatal(err)
	}
	after := time.Now()

	// Row 2: GET is the TAT in nanoseconds since the epoch, now + 2s.
	tat, err := rdb.Get(ctx, "user123").Result()
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	ns, err := strconv.ParseInt(tat, 10, 64)
	if err != nil || ns < before.Add(2*time.Second).UnixNano() || ns > after.Add(2*time.Second).UnixNano() {
		t.Errorf("GET user123 = %q, want the TAT: nanoseconds between %d and %d", tat,
			before.Add(2*time.Second).UnixNano(), after.Add(2*time.Second).UnixNano())
	}
	// Row 2b: PTTL is 2000 less the time since the call; TTL rounds it.
	ms, err := rdb.PTTL(ctx, "user123").Result()
	elapsed := time.Since(before)
	if err != nil || ms < 2*time.Second-elapsed-2*time.Millisecond || ms > 2*time.Second {
		t.Errorf("PTTL = %v, %v; want between %v and 2s", ms, err, 2*time.Second-elapsed)
	}
	s, err := rdb.TTL(ctx, "user123").Result()
	slow := time.Since(before) > 400*time.Millisecond // TTL may have rounded down to 1s
	if err != nil || (s != 2*time.Second && !(slow && s == time.Second)) {
		t.Errorf("TTL = %v, %v; want 2s", s, err)
	}
	// Row 2c.
	if typ, err := rdb.Type(ctx, "user123").Result(); err != nil || typ != "string" {
		t.Errorf("TYPE = %q, %v; want string", typ, err)
	}

	// Missing keys.
	if _, err := rdb.Get(ctx, "nope").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET missing: %v, want redis.Nil", err)
	}
	if typ, err := rdb.Type(ctx, "nope").Result(); err != nil || typ != "none" {
		t.Errorf("TYPE missing = %q, %v; want none", typ, err)
	}
	if d, err := rdb.PTTL(ctx, "nope").Result(); err != nil || d != -2 {
		t.Errorf("PTTL missing = %v, %v; want -2 (go-redis's -2ns)", d, err)
	}
	if d, err := rdb.TTL(ctx, "nope").Result(); err != nil || d != -2 {
		t.Errorf("TTL missing = %v, %v; want -2 (go-redis's -2ns)", d, err)
	}
	if n, err := rdb.Exists(ctx, "user123", "nope", "user123").Result(); err != nil || n != 2 {
		t.Errorf("EXISTS user123 nope user123 = %d, %v; want 2 (a key counts each time it is named)", n, err)
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 1 {
		t.Errorf("DBSIZE = %d, %v; want 1", n, err)
	}
}

func TestKeysScanFlush(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()

	var users []string
	for i := range 50 {
		users = append(users, fmt.Sprintf("user:%02d", i))
	}
	others := []string{"ip:1", "ip:2", "h?llo", "\xff\x00bin"}
	fill := func() {
		t.Helper()
		for _, k := range append(slices.Clone(users), others...) {
			if _, err := throttle(ctx, rdb, k, "15", "30", "60"); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill()
	all := append(slices.Clone(users), others...)
	slices.Sort(all)

	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != int64(len(all)) {
		t.Fatalf("DBSIZE = %d, %v; want %d", n, err, len(all))
	}
	keysTests := []struct {
		pattern string
		want    []string
	}{
		{"*", all},
		{"user:*", users},
		{"ip:?", []string{"ip:1", "ip:2"}},
		{"ip:[2-9]", []string{"ip:2"}},
		{`h\?llo`, []string{"h?llo"}},
		{"nothing*", nil},
	}
	for _, tt := range keysTests {
		got, err := rdb.Keys(ctx, tt.pattern).Result()
		slices.Sort(got)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("KEYS %q = %q, %v; want %q", tt.pattern, got, err, tt.want)
		}
	}

	scanTests := []struct {
		name       string
		match, typ string
		count      int64
		want       []string
	}{
		{"all, COUNT 1", "", "", 1, all},
		{"all, default COUNT", "", "", 0, all},
		{"MATCH", "user:*", "", 10, users},
		{"MATCH and TYPE string", "ip:*", "string", 1000, []string{"ip:1", "ip:2"}},
		{"TYPE string", "", "string", 7, all},
		{"TYPE hash", "", "hash", 1000, nil},
	}
	for _, tt := range scanTests {
		var got []string
		var cursor uint64
		for calls := 0; ; calls++ {
			if calls > 10000 {
				t.Fatalf("SCAN %s: cursor never returned to 0", tt.name)
			}
			var keys []string
			var err error
			if tt.typ != "" {
				keys, cursor, err = rdb.ScanType(ctx, cursor, tt.match, tt.count, tt.typ).Result()
			} else {
				keys, cursor, err = rdb.Scan(ctx, cursor, tt.match, tt.count).Result()
			}
			if err != nil {
				t.Fatalf("SCAN %s: %v", tt.name, err)
			}
			got = append(got, keys...)
			if cursor == 0 {
				break
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("SCAN %s: got %q, want each of %q exactly once", tt.name, got, tt.want)
		}
	}

	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("FLUSHDB: %v", err)
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE after FLUSHDB = %d, %v; want 0", n, err)
	}
	fill()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	if keys, err := rdb.Keys(ctx, "*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("KEYS * after FLUSHALL = %q, %v; want none", keys, err)
	}
	if got, err := throttle(ctx, rdb, "user:00", "15", "30", "60"); err != nil || !slices.Equal(got, allowed(16, 15, 2)) {
		t.Errorf("CL.THROTTLE after FLUSHALL = %v, %v; want a fresh limit", got, err)
	}
}

// TestExpiry waits out one tiny period on the wall clock (expiry is wall
// clock time, as in redis-cell) and checks the key is gone everywhere.
func TestExpiry(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()

	if got, err := throttle(ctx, rdb, "brief", "0", "1", "1"); err != nil || !slices.Equal(got, allowed(1, 0, 1)) {
		t.Fatalf("CL.THROTTLE brief 0 1 1 = %v, %v; want %v", got, err, allowed(1, 0, 1))
	}
	if got, err := throttle(ctx, rdb, "brief", "0", "1", "1"); err != nil || !slices.Equal(got, []int64{1, 1, 0, 1, 1}) {
		t.Fatalf("second call = %v, %v; want limited", got, err)
	}
	pttl, err := rdb.PTTL(ctx, "brief").Result()
	if err != nil || pttl <= 0 || pttl > time.Second {
		t.Fatalf("PTTL = %v, %v; want at most 1s", pttl, err)
	}
	time.Sleep(pttl + 100*time.Millisecond) // the one wait for the wall clock

	if n, err := rdb.Exists(ctx, "brief").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS after expiry = %d, %v; want 0", n, err)
	}
	if _, err := rdb.Get(ctx, "brief").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET after expiry: %v; want nil", err)
	}
	if typ, err := rdb.Type(ctx, "brief").Result(); err != nil || typ != "none" {
		t.Errorf("TYPE after expiry = %q, %v; want none", typ, err)
	}
	if d, err := rdb.PTTL(ctx, "brief").Result(); err != nil || d != -2 {
		t.Errorf("PTTL after expiry = %v, %v; want -2", d, err)
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE after expiry = %d, %v; want 0", n, err)
	}
	if keys, err := rdb.Keys(ctx, "*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("KEYS * after expiry = %q, %v; want none", keys, err)
	}
	if got, err := throttle(ctx, rdb, "brief", "0", "1", "1"); err != nil || !slices.Equal(got, allowed(1, 0, 1)) {
		t.Errorf("CL.THROTTLE after expiry = %v, %v; want a fresh limit %v", got, err, allowed(1, 0, 1))
	}
}
