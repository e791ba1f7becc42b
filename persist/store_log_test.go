package persist

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
)

// TestStoreKeysRecord: Record reads an SW key's requests as the format
// holds them, and only the family of the others.
func TestStoreKeysRecord(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	k := NewStoreKeys(rdb, "p:", nil)

	exp := time.Now().Add(time.Hour).UnixMilli()
	log := []int64{1_795_336_190_000_000_000, 1_795_336_190_010_000_000}
	sw, _ := encodeState(nil, &engine.Record{Family: engine.FamilySW, Log: log, Quantities: []uint32{1, 5}})
	for key, val := range map[string]string{"p:cl": "1800000000000000000", "p:sw": string(sw), "p:other": "hello"} {
		if err := rdb.Do(ctx, "SET", key, val, "PXAT", exp).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rec, ok, err := k.Record(ctx, "sw")
	if err != nil || !ok || rec.Family != engine.FamilySW || !slices.Equal(rec.Log, log) || !slices.Equal(rec.Quantities, []uint32{1, 5}) {
		t.Errorf("Record(sw) = %+v, %v, %v", rec, ok, err)
	}
	for key, want := range map[string]engine.Family{"cl": engine.FamilyCL, "other": engine.FamilyNone} {
		if rec, ok, err := k.Record(ctx, key); err != nil || !ok || rec.Family != want || rec.Log != nil {
			t.Errorf("Record(%s) = %+v, %v, %v; want family %v", key, rec, ok, err, want)
		}
	}
	if _, ok, err := k.Record(ctx, "missing"); err != nil || ok {
		t.Errorf("Record(missing) found it (%v)", err)
	}
}
