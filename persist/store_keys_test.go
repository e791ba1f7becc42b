package persist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// TestStoreKeys: the keyspace commands read and change the store under the
// prefix only, and tell who deleted what.
func TestStoreKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	var deleted [][]string
	k := NewStoreKeys(rdb, "p:", func(keys []string) { deleted = append(deleted, keys) })

	exp := time.Now().Add(time.Hour).UnixMilli()
	fw, _ := encodeState(nil, &engine.Record{Family: engine.FamilyFW, Start: 0, Cur: 3})
	for key, val := range map[string]string{"p:cl": "1800000000000000000", "p:fw": string(fw), "p:other": "hello", "q:outside": "1"} {
		if err := rdb.Do(ctx, "SET", key, val, "PXAT", exp).Err(); err != nil {
			t.Fatal(err)
		}
	}

	if v, ok, err := k.Get(ctx, "cl"); err != nil || !ok || v != "1800000000000000000" {
		t.Errorf("Get(cl) = %q, %v, %v", v, ok, err)
	}
	if v, ok, err := k.Get(ctx, "fw"); !errors.Is(err, engine.ErrWrongType) || !ok {
		t.Errorf("Get(fw) = %q, %v, %v; want WRONGTYPE, as in memory", v, ok, err)
	}
	if v, ok, err := k.Get(ctx, "other"); err != nil || !ok || v != "hello" {
		t.Errorf("Get(other) = %q, %v, %v; want another application's string as it is", v, ok, err)
	}
	if _, ok, err := k.Get(ctx, "outside"); err != nil || ok {
		t.Errorf("Get(outside) found a key outside the prefix (%v)", err)
	}
	if ms, err := k.PTTL(ctx, "cl"); err != nil || ms <= 0 || ms > 3600_000 {
		t.Errorf("PTTL(cl) = %d, %v", ms, err)
	}
	if ms, err := k.PTTL(ctx, "missing"); err != nil || ms != -2 {
		t.Errorf("PTTL(missing) = %d, %v; want -2", ms, err)
	}
	if n, err := k.Exists(ctx, []string{"cl", "cl", "missing", "fw"}); err != nil || n != 3 {
		t.Errorf("Exists = %d, %v; want 3", n, err)
	}
	if n, err := k.Len(ctx); err != nil || n != 3 {
		t.Errorf("Len = %d, %v; want the 3 keys under the prefix", n, err)
	}
	keys, err := k.Keys(ctx, "*")
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, []string{"cl", "fw", "other"}) {
		t.Errorf("Keys(*) = %q, %v", keys, err)
	}
	got, cursor, err := k.Scan(ctx, 0, "*", 100, "fw")
	if err != nil || cursor != 0 || !slices.Equal(got, []string{"fw"}) {
		t.Errorf("Scan TYPE fw = %q, %d, %v", got, cursor, err)
	}

	if n, err := k.Delete(ctx, []string{"cl", "missing"}); err != nil || n != 1 {
		t.Errorf("Delete = %d, %v; want 1", n, err)
	}
	if len(deleted) != 1 || !slices.Equal(deleted[0], []string{"cl", "missing"}) {
		t.Errorf("deleted was told %q", deleted)
	}
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 1 {
		t.Errorf("after Flush the store holds %d keys, want only the one outside the prefix", n)
	}
	if len(deleted) != 2 || deleted[1] != nil {
		t.Errorf("a flush must tell deleted nil (every key), it was told %q", deleted)
	}
	if err := NewStoreKeys(rdb, "", nil).Flush(ctx); !errors.Is(err, ErrNoPrefix) {
		t.Errorf("Flush without a prefix = %v, want ErrNoPrefix", err)
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 1 {
		t.Errorf("a refused flush deleted keys: %d left", n)
	}
}

// TestStoreKeysAnswerAsRedis: where a key is another application's, the
// keyspace commands answer what Redis answers for it.
func TestStoreKeysAnswerAsRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	for _, kv := range [][2]string{{"", "empty"}, {"a", "1"}, {"num", "007"}} {
		if err := rdb.Set(ctx, kv[0], kv[1], 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.HSet(ctx, "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "SET", "far", "v", "EX", "10000000000").Err(); err != nil { // 317 years
		t.Fatal(err)
	}
	k := NewStoreKeys(rdb, "", nil)

	// An empty pattern matches only the empty key, with no prefix too.
	want, err := rdb.Do(ctx, "KEYS", "").StringSlice()
	if err != nil || !slices.Equal(want, []string{""}) {
		t.Fatalf("Redis's KEYS \"\" = %q, %v", want, err)
	}
	if got, err := k.Keys(ctx, ""); err != nil || !slices.Equal(got, want) {
		t.Errorf("Keys(\"\") = %q, %v; Redis answers %q", got, err, want)
	}
	if got, _, err := k.Scan(ctx, 0, "", 100, ""); err != nil || !slices.Equal(got, want) {
		t.Errorf("Scan MATCH \"\" = %q, %v; Redis answers %q", got, err, want)
	}

	// GET gives a string as stored, digits too; TYPE calls it a string.
	if v, ok, err := k.Get(ctx, "num"); err != nil || !ok || v != "007" {
		t.Errorf("Get(num) = %q, %v, %v; Redis answers \"007\"", v, ok, err)
	}
	if typ, err := k.Type(ctx, "num"); err != nil || typ != "string" {
		t.Errorf("Type(num) = %q, %v", typ, err)
	}
	if _, ok, err := k.Get(ctx, "h"); !ok || !errors.Is(err, engine.ErrWrongType) {
		t.Errorf("Get(h) = %v, %v; want WRONGTYPE", ok, err)
	}
	if typ, err := k.Type(ctx, "h"); err != nil || typ != "hash" {
		t.Errorf("Type(h) = %q, %v", typ, err)
	}

	// A PTTL past 292 years is a number of milliseconds, not a Duration.
	wantMs, err := rdb.Do(ctx, "PTTL", "far").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := k.PTTL(ctx, "far"); err != nil || ms > wantMs || ms < wantMs-60_000 {
		t.Errorf("PTTL(far) = %d, %v; Redis says %d", ms, err, wantMs)
	}
}

// scanTwice is a go-redis hook that has every SCAN page give its first key
// twice, as a SCAN does when the store's table shrinks meanwhile.
type scanTwice struct{}

func (scanTwice) DialHook(next redis.DialHook) redis.DialHook { return next }
func (scanTwice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if c, ok := cmd.(*redis.ScanCmd); ok && err == nil {
			page, cursor := c.Val()
			if len(page) > 0 {
				c.SetVal(append(page, page[0]), cursor)
			}
		}
		return err
	}
}
func (scanTwice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestStoreKeysOnce: KEYS and DBSIZE count each key once, as Redis's do,
// when a SCAN gives one twice.
func TestStoreKeysOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	for _, key := range []string{"p:a", "p:b", "p:c", "q:d"} {
		if err := rdb.Set(ctx, key, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.AddHook(scanTwice{})
	k := NewStoreKeys(rdb, "p:", nil)
	keys, err := k.Keys(ctx, "*")
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, []string{"a", "b", "c"}) {
		t.Errorf("Keys = %q, %v; want each key once", keys, err)
	}
	if n, err := k.Len(ctx); err != nil || n != 3 {
		t.Errorf("Len = %d, %v; want 3", n, err)
	}
}

// roundTrips is a go-redis hook that counts the round trips its client
// makes: a command or a pipeline each.
type roundTrips struct{ n *atomic.Int64 }

func (roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}
func (r roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestStoreKeysScanTypeBatches: SCAN ... TYPE looks up a batch's types in
// two pipelines, not a round trip a key (which a COUNT of thousands made
// outlast --shared-timeout).
func TestStoreKeysScanTypeBatches(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	fw, _ := encodeState(nil, &engine.Record{Family: engine.FamilyFW, Start: 0, Cur: 3})
	pipe := rdb.Pipeline()
	for i := range 300 {
		switch i % 3 {
		case 0:
			pipe.Set(ctx, fmt.Sprintf("p:s%d", i), "hello", 0)
		case 1:
			pipe.Set(ctx, fmt.Sprintf("p:f%d", i), fw, time.Hour)
		default:
			pipe.HSet(ctx, fmt.Sprintf("p:h%d", i), "f", "v")
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rdb.AddHook(roundTrips{&n})
	k := NewStoreKeys(rdb, "p:", nil)
	for _, c := range []struct {
		typ, prefix string
	}{{"string", "s"}, {"fw", "f"}, {"hash", "h"}, {"none", ""}} {
		n.Store(0)
		got, cursor, err := k.Scan(ctx, 0, "*", 1000, c.typ)
		if err != nil || cursor != 0 {
			t.Fatalf("Scan TYPE %s: cursor %d, %v", c.typ, cursor, err)
		}
		want := 100
		if c.typ == "none" {
			want = 0
		}
		if len(got) != want {
			t.Errorf("Scan TYPE %s found %d keys, want %d", c.typ, len(got), want)
		}
		for _, key := range got {
			if key[:1] != c.prefix {
				t.Errorf("Scan TYPE %s gave %q", c.typ, key)
			}
		}
		if trips := n.Load(); trips > 3 {
			t.Errorf("Scan TYPE %s over 300 keys took %d round trips, want a SCAN and two pipelines", c.typ, trips)
		}
	}
}

// TestStoreKeysCluster: SCAN's cursor walks every master in turn, and the
// whole-keyspace commands see every master's keys.
func TestStoreKeysCluster(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartCluster(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	ctx := context.Background()
	k := NewStoreKeys(cc, "c:", nil)
	const n = 300
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprint("k", i)
		if err := cc.Set(ctx, "c:"+want[i], "1", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor, calls := uint64(0), 0
	for {
		keys, next, err := k.Scan(ctx, cursor, "k*", 50, "")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, keys...)
		calls++
		if cursor = next; cursor == 0 || calls > 1000 {
			break
		}
	}
	slices.Sort(got)
	got = slices.Compact(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("SCAN over the cluster found %d distinct keys, want %d", len(got), n)
	}
	if m, err := k.Len(ctx); err != nil || m != n {
		t.Errorf("Len = %d, %v; want %d", m, err, n)
	}
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := k.Len(ctx); err != nil || m != 0 {
		t.Errorf("after Flush, Len = %d, %v", m, err)
	}
}

// TestNewStoreClientFindsCluster: one address of a cluster node gives a
// cluster client, one of a plain Redis a plain client.
func TestNewStoreClientFindsCluster(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartCluster(t, 3)
	plain := redistest.Start(t)
	ctx := context.Background()
	c, unsure, err := NewStoreClient(ctx, "redis://"+nodes[1].Addr)
	if err != nil || unsure {
		t.Fatal(unsure, err)
	}
	defer c.Close()
	if _, ok := c.(*redis.ClusterClient); !ok {
		t.Errorf("one cluster node's address gives a %T, want a cluster client", c)
	}
	// Every key is reachable through it, whichever node holds it.
	for i := range 20 {
		if err := c.Set(ctx, fmt.Sprint("k", i), "1", time.Minute).Err(); err != nil {
			t.Fatalf("SET through the cluster client: %v", err)
		}
	}
	p, unsure, err := NewStoreClient(ctx, plain.URL())
	if err != nil || unsure {
		t.Fatal(unsure, err)
	}
	defer p.Close()
	if _, ok := p.(*redis.Client); !ok {
		t.Errorf("a plain Redis gives a %T, want a plain client", p)
	}
	// An address that does not answer cannot be asked: the caller is told.
	plain.Pause()
	defer plain.Resume()
	q, unsure, err := NewStoreClient(ctx, plain.URL())
	if err != nil || !unsure {
		t.Fatalf("a store that does not answer: unsure %v, %v; want unsure", unsure, err)
	}
	q.Close()
}

// TestNoResend: the cluster nodes' hook lets a pipeline go again only when
// each of its commands is new or met the store's own error reply (MOVED:
// not carried out), never when one met a connection's failure (maybe
// carried out) or was answered already (its batch sent again after
// another command's TRYAGAIN).
func TestNoResend(t *testing.T) {
	ctx := context.Background()
	answered := redis.NewCmd(ctx, "evalsha", "x", 0)
	answered.SetVal([]any{"1", "2"})
	moved := redis.NewCmd(ctx, "evalsha", "x", 0)
	moved.SetErr(storeErrorReply("MOVED 1 127.0.0.1:1"))
	cut := redis.NewCmd(ctx, "evalsha", "x", 0)
	cut.SetErr(io.EOF)
	set := redis.NewStatusCmd(ctx, "set", "k", "v", "pxat", 1, "nx")
	set.SetVal("OK") // a native SET carried out
	notSet := redis.NewStatusCmd(ctx, "set", "k", "v", "pxat", 1, "nx")
	notSet.SetErr(redis.Nil) // answered too, but changed nothing
	for _, c := range []struct {
		name string
		cmds []redis.Cmder
		sent bool
	}{
		{"new", []redis.Cmder{redis.NewCmd(ctx, "evalsha", "x", 0), redis.NewStatusCmd(ctx, "set", "k", "v")}, true},
		{"moved", []redis.Cmder{moved}, true},
		{"connection failed", []redis.Cmder{moved, cut}, false},
		{"answered already", []redis.Cmder{answered, moved}, false},
		{"a SET answered already", []redis.Cmder{moved, redis.NewTimeCmd(ctx, "time"), set}, false},
		{"a SET NX that set nothing", []redis.Cmder{moved, notSet}, true},
	} {
		sent := false
		_ = noResend{}.ProcessPipelineHook(func(context.Context, []redis.Cmder) error { sent = true; return nil })(ctx, c.cmds)
		if sent != c.sent {
			t.Errorf("%s: sent %v, want %v", c.name, sent, c.sent)
		}
	}
}

// storeErrorReply is an error reply of the store, as go-redis reports one
// (a redis.Error).
type storeErrorReply string

func (e storeErrorReply) Error() string { return string(e) }

// RedisError makes it a redis.Error.
func (storeErrorReply) RedisError() {}

// TestStoreKeysPassOverLease: write-behind's lease under the prefix (an
// instance in that mode on the same prefix) is not a limit: the walks do
// not list it, count it or flush it.
func TestStoreKeysPassOverLease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	for _, key := range []string{"p:" + LeaseKey, "p:a"} {
		if err := rdb.Set(ctx, key, "1234", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	k := NewStoreKeys(rdb, "p:", nil)
	if keys, err := k.Keys(ctx, "*"); err != nil || !slices.Equal(keys, []string{"a"}) {
		t.Errorf("Keys = %q, %v; want only a", keys, err)
	}
	if keys, _, err := k.Scan(ctx, 0, "*", 100, ""); err != nil || !slices.Equal(keys, []string{"a"}) {
		t.Errorf("Scan = %q, %v; want only a", keys, err)
	}
	if n, err := k.Len(ctx); err != nil || n != 1 {
		t.Errorf("Len = %d, %v; want 1", n, err)
	}
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, "p:"+LeaseKey, "p:a").Result(); n != 1 {
		t.Errorf("after Flush %d of the lease and a are left, want the lease only", n)
	}
}
