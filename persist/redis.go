package persist

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// scanCount is the COUNT of each SCAN call, and so about the number of keys
// one pipeline of GET and PTTL reads.
const scanCount = 1000

// Redis is a backing store in a Redis server or a Redis Cluster, in the
// format the package doc describes. It is safe for concurrent use.
type Redis struct {
	client redis.UniversalClient
	prefix string
	now    func() time.Time

	skipped atomic.Int64 // keys the last Load could not read
}

// NewRedis returns a backing store over client, whose keys are prefix
// followed by cellserver's key. Closing client is the caller's.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix, now: time.Now}
}

// Dial returns a backing store at the address rawURL (see ParseURL), with a
// client of its own that Close closes. It does not connect: the first call
// does.
func Dial(rawURL, prefix string) (*Redis, error) {
	opts, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return NewRedis(redis.NewUniversalClient(opts), prefix), nil
}

// Close closes the client.
func (r *Redis) Close() error { return r.client.Close() }

// Client returns the client the store talks through.
func (r *Redis) Client() redis.UniversalClient { return r.client }

// Save writes recs in one pipeline (in a cluster, one per node): SET with
// PXAT for a live key, in redis-cell's format for a CL key and in
// cellserver's own for the others; DEL for a deleted key. Records of a
// family that has no format are left out.
func (r *Redis) Save(ctx context.Context, recs []engine.Record) error {
	if len(recs) == 0 {
		return nil
	}
	pipe := r.client.Pipeline()
	for i := range recs {
		rec := &recs[i]
		key := r.prefix + rec.Key
		switch {
		case rec.Deleted:
			pipe.Del(ctx, key)
		case rec.Family == engine.FamilyCL:
			// Not go-redis's SetArgs: its ExpireAt is whole seconds (EXAT).
			pipe.Do(ctx, "SET", key, rec.TAT, "PXAT", rec.ExpireAtMs)
		default:
			if val, ok := encodeState(nil, rec); ok {
				pipe.Do(ctx, "SET", key, val, "PXAT", rec.ExpireAtMs)
			}
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Load calls fn for each live key under the prefix, with the prefix taken
// off. In a cluster it walks every master at once, but calls fn from one
// goroutine at a time. Keys it cannot read are skipped and counted
// (Skipped).
func (r *Redis) Load(ctx context.Context, fn func(engine.Record)) error {
	r.skipped.Store(0)
	match := ""
	if r.prefix != "" {
		match = escapeGlob(r.prefix) + "*"
	}
	cc, ok := r.client.(*redis.ClusterClient)
	if !ok {
		return r.loadNode(ctx, r.client, match, fn)
	}
	var mu sync.Mutex // serialises fn
	locked := func(rec engine.Record) {
		mu.Lock()
		defer mu.Unlock()
		fn(rec)
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return r.loadNode(ctx, node, match, locked)
	})
}

// Skipped is the number of keys the last Load skipped because they hold
// another Redis type, or a value that is neither a decimal TAT nor a state
// in cellserver's format.
func (r *Redis) Skipped() int64 { return r.skipped.Load() }

// loadNode walks one node's keys with SCAN and reads each batch with one
// pipeline of GET and PTTL, sent through r.client so that in a cluster a
// key that moved meanwhile is still found.
func (r *Redis) loadNode(ctx context.Context, node redis.Cmdable, match string, fn func(engine.Record)) error {
	var (
		cursor uint64
		gets   []*redis.StringCmd
		pttls  []*redis.Cmd
	)
	for {
		keys, next, err := node.Scan(ctx, cursor, match, scanCount).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			gets, pttls = gets[:0], pttls[:0]
			pipe := r.client.Pipeline()
			for _, k := range keys {
				gets = append(gets, pipe.Get(ctx, k))
				pttls = append(pttls, pipe.Do(ctx, "pttl", k)) // ms: a Duration overflows past 292 years
			}
			// Exec's error is the first command's that failed, and GET
			// fails on a key gone or of another type: each is looked at.
			pipe.Exec(ctx)
			nowMs := r.now().UnixMilli()
			for i, k := range keys {
				if k == r.prefix+LeaseKey {
					continue // not a limit: write-behind's lease
				}
				rec, live, err := r.record(k, gets[i], pttls[i], nowMs)
				switch {
				case err == errSkip:
					r.skipped.Add(1)
				case err != nil:
					return err
				case live:
					fn(rec)
				}
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// errSkip marks a key that holds something other than a limit's state.
var errSkip = errors.New("not a limit's state")

// record reads one key's GET and PTTL replies into a record, live false for
// a key that is gone or has expired. It returns errSkip for a key that holds
// neither a TAT nor a state in cellserver's format (or holds such a state
// without an expiry), and another error when the replies did not arrive.
func (r *Redis) record(key string, get *redis.StringCmd, pttl *redis.Cmd, nowMs int64) (rec engine.Record, live bool, err error) {
	val, err := get.Result()
	if err != nil {
		return rec, false, readError(err)
	}
	ttl, err := pttl.Int64()
	if err != nil {
		return rec, false, readError(err)
	}
	if !parseValue(val, &rec) {
		return engine.Record{}, false, errSkip
	}
	switch {
	case ttl == -2: // gone between GET and PTTL
		return engine.Record{}, false, nil
	case ttl == -1 && rec.Family == engine.FamilyCL:
		// No expiry: redis-cell leaves such a key on some errors. A TAT in
		// the past limits nothing, so the key can go at its TAT.
		rec.ExpireAtMs = int64(rec.TAT / 1e6)
	case ttl == -1:
		// cellserver always writes its own states with an expiry, and
		// without the key's window there is none to give it.
		return engine.Record{}, false, errSkip
	default:
		rec.ExpireAtMs = nowMs + min(ttl, maxExpire-max(nowMs, 0))
	}
	if nowMs > rec.ExpireAtMs {
		return engine.Record{}, false, nil
	}
	rec.Key = key[len(r.prefix):]
	return rec, true, nil
}

// readError sorts a failed read: a key gone (nil) is nothing, WRONGTYPE (a
// key of another type) is a key to skip, and anything else (the connection,
// LOADING, NOAUTH, ...) fails the load.
func readError(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if isWrongType(err) {
		return errSkip
	}
	return err
}

// escapeGlob escapes the characters SCAN's MATCH gives a meaning to.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
