package persist

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// newMini returns a miniredis and a backing store over it with prefix.
// Both clocks stand still at the time of the call, whole milliseconds, so
// that expiries compare exactly.
func newMini(t *testing.T, prefix string) (*miniredis.Miniredis, *Redis) {
	t.Helper()
	m := miniredis.RunT(t)
	now := time.Now().Truncate(time.Millisecond)
	m.SetTime(now)
	client := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	r := NewRedis(client, prefix)
	r.now = func() time.Time { return now }
	return m, r
}

// loadAll runs Load and returns the records by key.
func loadAll(t *testing.T, r *Redis) map[string]engine.Record {
	t.Helper()
	got := map[string]engine.Record{}
	err := r.Load(context.Background(), func(rec engine.Record) {
		if _, dup := got[rec.Key]; dup {
			t.Errorf("Load gave %q twice", rec.Key)
		}
		got[rec.Key] = rec
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return got
}

func TestSaveWritesRedisCellFormat(t *testing.T) {
	m, r := newMini(t, "")
	nowMs := r.now().UnixMilli()
	tat := uint64(r.now().UnixNano()) + 32_000_000_000
	recs := []engine.Record{
		{Key: "user123", Family: engine.FamilyCL, TAT: tat, ExpireAtMs: nowMs + 31_977},
		{Key: "k\x00\xff bin", Family: engine.FamilyCL, TAT: 1, ExpireAtMs: nowMs + 1000},
	}
	if err := r.Save(context.Background(), recs); err != nil {
		t.Fatalf("Save: %v", err)
	}
	for _, rec := range recs {
		got, err := m.Get(rec.Key)
		if err != nil || got != strconv.FormatUint(rec.TAT, 10) {
			t.Errorf("GET %q = %q, %v; want the decimal TAT %d", rec.Key, got, err, rec.TAT)
		}
		if typ := m.Type(rec.Key); typ != "string" {
			t.Errorf("TYPE %q = %s, want string", rec.Key, typ)
		}
		// PXAT is an absolute time: miniredis turns it into a TTL from now.
		want := rec.ExpireAtMs - nowMs
		if ttl := m.TTL(rec.Key).Milliseconds(); ttl != want {
			t.Errorf("TTL %q = %dms, want about %dms", rec.Key, ttl, want)
		}
	}
}

func TestSaveDeletes(t *testing.T) {
	m, r := newMini(t, "")
	m.Set("gone", "123")
	m.Set("kept", "456")
	if err := r.Save(context.Background(), []engine.Record{{Key: "gone", Deleted: true}}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if m.Exists("gone") {
		t.Error("a deleted record left its key")
	}
	if !m.Exists("kept") {
		t.Error("a key not in the records was deleted")
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	_, r := newMini(t, "")
	nowMs := r.now().UnixMilli()
	want := map[string]engine.Record{}
	var recs []engine.Record
	for i := range 2500 { // several SCAN batches
		rec := engine.Record{
			Key:        fmt.Sprint("key:", i),
			Family:     engine.FamilyCL,
			TAT:        uint64(nowMs+int64(i)) * 1_000_000,
			ExpireAtMs: nowMs + 10_000 + int64(i),
		}
		recs = append(recs, rec)
		want[rec.Key] = rec
	}
	if err := r.Save(context.Background(), recs); err != nil {
		t.Fatalf("Save: %v", err)
	}
	got := loadAll(t, r)
	if len(got) != len(want) {
		t.Fatalf("Load gave %d records, want %d", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("record %q = %+v, want %+v", k, g, w)
		}
	}
	if n := r.Skipped(); n != 0 {
		t.Errorf("Skipped = %d, want 0", n)
	}
}

func TestPrefix(t *testing.T) {
	// The prefix holds glob characters, which SCAN's MATCH must take
	// literally.
	const prefix = "cell[1]*?\\:"
	m, r := newMini(t, prefix)
	nowMs := r.now().UnixMilli()
	if err := r.Save(context.Background(), []engine.Record{
		{Key: "a", Family: engine.FamilyCL, TAT: 42, ExpireAtMs: nowMs + 5000},
	}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if got, err := m.Get(prefix + "a"); err != nil || got != "42" {
		t.Errorf("GET %q = %q, %v; want 42", prefix+"a", got, err)
	}
	if m.Exists("a") {
		t.Error("the key was written without its prefix")
	}
	// Keys outside the prefix, including ones its glob characters would
	// match if read as a pattern, are not loaded.
	for _, k := range []string{"b", "cell1x:c", "cell[1]xy\\:d", "cell1" + "ab\\:e"} {
		m.Set(k, "7")
		m.SetTTL(k, time.Minute)
	}
	got := loadAll(t, r)
	if len(got) != 1 || got["a"].TAT != 42 {
		t.Errorf("Load = %+v, want only a (prefix taken off) with TAT 42", got)
	}
	if err := r.Save(context.Background(), []engine.Record{{Key: "a", Deleted: true}}); err != nil {
		t.Fatal(err)
	}
	if m.Exists(prefix + "a") {
		t.Error("DEL did not take the prefix")
	}
}

func TestLoadSkipsWhatIsNotATAT(t *testing.T) {
	m, r := newMini(t, "")
	future := time.Now().Add(time.Hour)
	good := strconv.FormatUint(uint64(future.UnixNano()), 10)
	for k, v := range map[string]string{
		"good":     good,
		"word":     "abc",
		"negative": "-5",
		"plus":     "+15",
		"float":    "1.5",
		"overflow": "18446744073709551616",
		"empty":    "",
	} {
		m.Set(k, v)
		m.SetTTL(k, time.Minute)
	}
	m.HSet("hash", "f", "1")
	m.Push("list", "1")
	m.SetAdd("set", "1")
	got := loadAll(t, r)
	if len(got) != 1 || strconv.FormatUint(got["good"].TAT, 10) != good {
		t.Errorf("Load = %+v, want only good", got)
	}
	if n := r.Skipped(); n != 9 {
		t.Errorf("Skipped = %d, want 9 (6 values that are not a TAT, 3 keys of other types)", n)
	}
	// The count is per load.
	m.Del("word")
	loadAll(t, r)
	if n := r.Skipped(); n != 8 {
		t.Errorf("Skipped on the next load = %d, want 8", n)
	}
}

// TestLoadWithoutExpiry: redis-cell leaves a key without expiry on some
// errors; it expires at its TAT, and is not loaded once that has passed.
func TestLoadWithoutExpiry(t *testing.T) {
	m, r := newMini(t, "")
	now := r.now()
	future := uint64(now.Add(90 * time.Second).UnixNano())
	m.Set("future", strconv.FormatUint(future, 10))
	m.Set("past", strconv.FormatUint(uint64(now.Add(-2*time.Second).UnixNano()), 10))
	got := loadAll(t, r)
	if len(got) != 1 {
		t.Fatalf("Load = %+v, want only future", got)
	}
	if rec := got["future"]; rec.TAT != future || rec.ExpireAtMs != int64(future/1e6) {
		t.Errorf("future = %+v, want TAT %d expiring at %d ms", rec, future, future/1e6)
	}
	if n := r.Skipped(); n != 0 {
		t.Errorf("Skipped = %d: an expired key is not a skipped one", n)
	}
}

func TestLoadFailsWhenUnreachable(t *testing.T) {
	m, r := newMini(t, "")
	m.Close()
	err := r.Load(context.Background(), func(engine.Record) { t.Error("a record from a closed server") })
	if err == nil {
		t.Fatal("Load of a closed server succeeded")
	}
	if err := r.Save(context.Background(), []engine.Record{{Key: "k", Deleted: true}}); err == nil {
		t.Error("Save to a closed server succeeded")
	}
}

func TestSaveFailsOnRedisError(t *testing.T) {
	m, r := newMini(t, "")
	m.SetError("LOADING Redis is loading the dataset in memory")
	err := r.Save(context.Background(), []engine.Record{{Key: "k", Family: engine.FamilyCL, TAT: 1, ExpireAtMs: time.Now().UnixMilli() + 1000}})
	if err == nil {
		t.Error("Save succeeded while every command fails")
	}
	if err := r.Load(context.Background(), func(engine.Record) {}); err == nil {
		t.Error("Load succeeded while every command fails")
	}
}

func TestEscapeGlob(t *testing.T) {
	for in, want := range map[string]string{
		"":         "",
		"cell:":    "cell:",
		"a*b?c":    `a\*b\?c`,
		`[x]\`:     `\[x\]\\`,
		"\x00\xff": "\x00\xff",
	} {
		if got := escapeGlob(in); got != want {
			t.Errorf("escapeGlob(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSaveSkipsUnknownFamily: a family without a format is left out rather
// than failing the batch (which would retry it forever).
func TestSaveSkipsUnknownFamily(t *testing.T) {
	m, r := newMini(t, "")
	nowMs := r.now().UnixMilli()
	err := r.Save(context.Background(), []engine.Record{
		{Key: "future-family", Family: engine.Family(200), TAT: 1, ExpireAtMs: nowMs + 1000},
		{Key: "cl", Family: engine.FamilyCL, TAT: 2, ExpireAtMs: nowMs + 1000},
	})
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	if keys := m.Keys(); !slices.Equal(keys, []string{"cl"}) {
		t.Errorf("keys = %v, want [cl]", keys)
	}
}

// TestLoadFarExpiry: a key whose expiry is more than 292 years away (a CL
// key of extreme arguments) is loaded with that expiry, not taken for one
// that has expired (a Duration of its PTTL overflows).
func TestLoadFarExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	tat := uint64(time.Now().Add(time.Hour).UnixNano())
	if err := client.Do(ctx, "SET", "far", strconv.FormatUint(tat, 10), "EX", "10000000000").Err(); err != nil {
		t.Fatal(err)
	}
	r := NewRedis(client, "")
	got := loadAll(t, r)
	rec, ok := got["far"]
	if !ok {
		t.Fatalf("Load = %+v: the key far was not loaded", got)
	}
	if want := time.Now().UnixMilli() + 10_000_000_000_000; rec.TAT != tat || rec.ExpireAtMs < want-60_000 || rec.ExpireAtMs > want {
		t.Errorf("far = %+v, want TAT %d expiring at about %d ms", rec, tat, want)
	}
}
