package persist

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// TestRedisCluster: a list of nodes is a Redis Cluster; Save splits its
// pipeline by node, and Load walks every master.
func TestRedisCluster(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartCluster(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	r, err := Dial("redis://"+strings.Join(addrs, ",redis://"), "cl:")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok := r.client.(*redis.ClusterClient); !ok {
		t.Fatalf("client is a %T, want a cluster client", r.client)
	}
	ctx := context.Background()
	nowMs := time.Now().UnixMilli()
	const n = 3000
	recs := make([]engine.Record, n)
	for i := range recs {
		recs[i] = engine.Record{Key: fmt.Sprint("user", i), Family: engine.FamilyCL, TAT: uint64(i) + 1e18, ExpireAtMs: nowMs + 60_000}
	}
	if err := r.Save(ctx, recs); err != nil {
		t.Fatalf("Save: %v", err)
	}
	// Every node holds some of the keys, and they add up.
	total := int64(0)
	for _, node := range nodes {
		size, err := node.Client(t).DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if size == 0 {
			t.Errorf("node %s holds no key", node.Addr)
		}
		total += size
	}
	if total != n {
		t.Errorf("the nodes hold %d keys, want %d", total, n)
	}
	if err := r.Save(ctx, []engine.Record{{Key: "user0", Deleted: true}, {Key: "user1", Deleted: true}}); err != nil {
		t.Fatalf("Save of deletions: %v", err)
	}
	cc := r.client.(*redis.ClusterClient)
	for _, k := range []string{"cl:{a}x", "cl:{b}y", "cl:{c}z"} {
		cc.HSet(ctx, k, "f", "v")
	}
	got := map[string]engine.Record{}
	if err := r.Load(ctx, func(rec engine.Record) { got[rec.Key] = rec }); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(got) != n-2 {
		t.Errorf("Load gave %d records, want %d", len(got), n-2)
	}
	for i := 2; i < n; i++ {
		k := "user" + strconv.Itoa(i)
		if rec := got[k]; rec.TAT != uint64(i)+1e18 || rec.ExpireAtMs < nowMs+59_000 {
			t.Fatalf("%s = %+v", k, rec)
		}
	}
	if s := r.Skipped(); s != 3 {
		t.Errorf("Skipped = %d, want 3 hashes", s)
	}
}
