package persist

import (
	"context"
	"errors"
	"strconv"

	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// Record returns key's state in the store, for SW.LOG: an SW key's
// requests, or only the family of another key (FamilyNone for a value
// that is not a limit's state, another application's key).
func (k *StoreKeys) Record(ctx context.Context, key string) (rec engine.Record, ok bool, err error) {
	val, err := k.client.Get(ctx, k.prefix+key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return rec, false, nil
	case err != nil && isWrongType(err):
		return rec, true, nil
	case err != nil:
		return rec, false, err
	}
	rec.Key = key
	if len(val) > 0 && val[0] == formatVersion {
		if decodeState(val, &rec) != nil {
			rec = engine.Record{Key: key}
		}
		return rec, true, nil
	}
	if _, err := strconv.ParseUint(val, 10, 64); err == nil {
		rec.Family = engine.FamilyCL
	}
	return rec, true, nil
}
