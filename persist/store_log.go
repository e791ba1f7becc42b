package persist

import (
	"context"
	"errors"

	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// Record returns key's state in the store, for SW.LOG, which lists an SW
// key's requests and looks only at another key's family (FamilyNone for a
// value that is not a limit's state, another application's key).
func (k *StoreKeys) Record(ctx context.Context, key string) (rec engine.Record, ok bool, err error) {
	val, err := k.client().Get(ctx, k.prefix+key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return rec, false, nil
	case err != nil && isWrongType(err):
		return rec, true, nil
	case err != nil:
		return rec, false, err
	}
	rec.Key = key
	if !parseValue(val, &rec) {
		rec = engine.Record{Key: key}
	}
	return rec, true, nil
}
