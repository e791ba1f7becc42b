package persist

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
)

// TestSharedAllManyKeys: a THROTTLE.ALL of more keys than Lua's unpack
// takes at once is decided in a real Redis, all or nothing, without
// marking the store down.
func TestSharedAllManyKeys(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 20 * time.Second})
	startShared(t, s)
	rules := make([]engine.Rule, 9000)
	for i := range rules {
		rules[i] = engine.Rule{Key: []byte("k" + strconv.Itoa(i)), Family: engine.FamilyFW,
			Window: engine.WindowQuota{Limit: 1, Window: int64(time.Hour)}}
	}
	if a := wait(t, allAsync(s, rules, 1)); a.err != nil || a.d.Limited {
		t.Fatalf("first: %+v", a)
	}
	if a := wait(t, allAsync(s, rules, 1)); a.err != nil || !a.d.Limited {
		t.Fatalf("second: %+v, want refused", a)
	}
	if st := s.Stats(); st.Downs != 0 || st.LocalDecisions != 0 {
		t.Fatalf("stats %+v, want the store up throughout", st)
	}
	n, err := c.DBSize(context.Background()).Result()
	if err != nil || n != 9000 {
		t.Fatalf("DBSIZE %d %v, want 9000", n, err)
	}
}

// TestCASScriptPaths runs the compare-and-set script in a real Redis on
// groups of every kind, one call: the common single-key paths (a value
// expected, a new key set), the general one (several keys, an absent key
// kept, another type), each matching and not, so that every group's
// arguments are read at the right place whatever the groups before it did.
func TestCASScriptPaths(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	for k, v := range map[string]string{"v-set": "1", "v-miss": "2", "v-del": "3", "v-keep": "4", "a-exists": "5", "pair-v": "6"} {
		c.Set(ctx, k, v, time.Hour)
	}
	c.RPush(ctx, "t-keep", "x")
	c.RPush(ctx, "a-list", "x")
	exp := time.Now().Add(time.Hour).UnixMilli()
	val := func(s string) storeValue { return storeValue{kind: kindValue, val: s, expireAtMs: exp} }
	absent, foreign := storeValue{kind: kindAbsent}, storeValue{kind: kindForeign}
	groups := [][]casKey{
		{{key: "v-set", expected: val("1"), write: writeSet, newVal: val("11")}},
		{{key: "v-miss", expected: val("99"), write: writeSet, newVal: val("22")}},
		{{key: "v-del", expected: val("3"), write: writeDel}},
		{{key: "v-keep", expected: val("4"), write: writeKeep}},
		{{key: "a-new", expected: absent, write: writeSet, newVal: val("55")}},
		{{key: "a-exists", expected: absent, write: writeSet, newVal: val("66")}},
		{{key: "a-keep", expected: absent, write: writeKeep}},
		{{key: "t-keep", expected: foreign, write: writeKeep}},
		{{key: "a-list", expected: absent, write: writeKeep}},
		{{key: "pair-v", expected: val("6"), write: writeSet, newVal: val("77")}, {key: "pair-a", expected: absent, write: writeSet, newVal: val("88")}},
		{{key: "last", expected: absent, write: writeSet, newVal: val("99")}},
	}
	conflicted := map[string]bool{"v-miss": true, "a-exists": true, "a-list": true}
	call := &casCall{}
	for _, g := range groups {
		call.add(g)
	}
	replies, errs, _, _ := runCAS(ctx, c, []*casCall{call}, nil, false)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	for i, g := range groups {
		if cur := replies[0].conflicted(i); (cur != nil) != conflicted[g[0].key] {
			t.Errorf("group %s: current %+v, conflicted %v", g[0].key, cur, conflicted[g[0].key])
		}
	}
	if cur := replies[0].conflicted(1); len(cur) != 1 || cur[0].kind != kindValue || cur[0].val != "2" {
		t.Errorf("v-miss's current value %+v, want 2", cur)
	}
	if cur := replies[0].conflicted(8); len(cur) != 1 || cur[0].kind != kindForeign {
		t.Errorf("a-list's current value %+v, want another type", cur)
	}
	want := map[string]string{"v-set": "11", "v-miss": "2", "v-keep": "4", "a-new": "55", "a-exists": "5", "pair-v": "77", "pair-a": "88", "last": "99"}
	for k, v := range want {
		if got, err := c.Get(ctx, k).Result(); err != nil || got != v {
			t.Errorf("%s = %q %v, want %q", k, got, err, v)
		}
	}
	for _, k := range []string{"v-set", "a-new", "pair-a", "last"} {
		if at, err := c.PExpireTime(ctx, k).Result(); err != nil || at.Milliseconds() != exp {
			t.Errorf("%s expires at %v %v, want %d", k, at, err, exp)
		}
	}
	for _, k := range []string{"v-del", "a-keep"} {
		if n, _ := c.Exists(ctx, k).Result(); n != 0 {
			t.Errorf("%s exists", k)
		}
	}
}
