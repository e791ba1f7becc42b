package persist

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// ErrNoPrefix is StoreKeys.Flush's refusal to flush a store whose keys have
// no prefix: the store may hold other applications' keys.
var ErrNoPrefix error = replyError("ERR shared mode flushes only keys under --backing-prefix, and none is set")

// errStoreUnsure is the refusal of a command on the whole keyspace while
// the store has not said whether it is a Redis Cluster.
var errStoreUnsure = errors.New("it has not said yet whether it is a Redis Cluster; try again")

// flushBatch is how many keys one round trip of a flush deletes.
const flushBatch = 500

// StoreKeys is shared mode's keyspace commands (GET, TYPE, EXISTS, PTTL,
// DEL, SCAN, KEYS, DBSIZE, FLUSHDB) acting on the store itself, under the
// prefix, in the format the package doc describes. In a Redis Cluster,
// commands on several keys send one command per key, and those on the
// whole keyspace walk every master. Its methods block: call them off the
// event loops. It is safe for concurrent use.
type StoreKeys struct {
	// client is the store's client at each call (Shared.Client: a store
	// that did not answer at start may turn out to be a Redis Cluster).
	client func() redis.UniversalClient
	prefix string
	// unsure, when not nil, reports that the store has not said yet
	// whether it is a Redis Cluster: the commands on the whole keyspace
	// refuse (errStoreUnsure) rather than walk only the node they know.
	unsure func() bool
	// deleted is told the keys a DEL, UNLINK or FLUSH removed through this
	// instance (nil: all of them), so that caches of them are dropped.
	deleted func(keys []string)
}

// NewStoreKeys returns the keyspace commands over client, whose keys are
// prefix followed by the client's key; deleted, if not nil, is called
// after keys were deleted (with nil after a flush).
func NewStoreKeys(client redis.UniversalClient, prefix string, deleted func(keys []string)) *StoreKeys {
	if deleted == nil {
		deleted = func([]string) {}
	}
	return &StoreKeys{client: func() redis.UniversalClient { return client }, prefix: prefix, deleted: deleted}
}

// Get is GET's answer for key in the store: its value as stored when it
// is a string that holds no window limit's state (a CL key's TAT, as
// redis-cell writes it, or another application's string), ok false when
// there is no key, and engine.ErrWrongType for a window limit's state (as
// in memory) or a key of another type (as in Redis).
func (k *StoreKeys) Get(ctx context.Context, key string) (val string, ok bool, err error) {
	val, err = k.client().Get(ctx, k.prefix+key).Result()
	var rec engine.Record
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil && isWrongType(err):
		return "", true, engine.ErrWrongType
	case err != nil:
		return "", false, err
	case parseValue(val, &rec) && rec.Family != engine.FamilyCL:
		return "", true, engine.ErrWrongType
	}
	return val, true, nil
}

// PTTL returns key's time to live in milliseconds: -2 when it does not
// exist, -1 when it has no expiry. It reads the store's reply as a number
// of milliseconds (go-redis's PTTL makes a time.Duration of it, which
// overflows past 292 years).
func (k *StoreKeys) PTTL(ctx context.Context, key string) (int64, error) {
	return k.client().Do(ctx, "pttl", k.prefix+key).Int64()
}

// Exists counts the keys that exist, a key named twice counting twice.
func (k *StoreKeys) Exists(ctx context.Context, keys []string) (int64, error) {
	pipe := k.client().Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, key := range keys {
		cmds[i] = pipe.Exists(ctx, k.prefix+key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	n := int64(0)
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// Delete removes keys and returns how many existed. Every instance's
// caches of them are told.
func (k *StoreKeys) Delete(ctx context.Context, keys []string) (int64, error) {
	pipe := k.client().Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, key := range keys {
		cmds[i] = pipe.Del(ctx, k.prefix+key)
	}
	_, err := pipe.Exec(ctx)
	k.deleted(keys) // also after a failure: some may be gone
	if err != nil {
		return 0, err
	}
	n := int64(0)
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// Scan is SCAN cursor MATCH pattern COUNT count under the prefix, the
// prefix taken off the keys returned ("*" for every key: "" matches only
// the empty key, as in Redis); typ, when not empty, keeps the keys whose
// family's type name it is. In a
// cluster, the cursor's top 16 bits are the master it walks (in the order
// of their addresses) and the rest that master's own cursor.
func (k *StoreKeys) Scan(ctx context.Context, cursor uint64, pattern string, count int64, typ string) ([]string, uint64, error) {
	match := escapeGlob(k.prefix) + pattern
	nodes, err := k.masters(ctx)
	if err != nil {
		return nil, 0, err
	}
	idx, nodeCursor := int(cursor>>48), cursor&(1<<48-1)
	if len(nodes) == 1 {
		idx, nodeCursor = 0, cursor
	}
	if idx >= len(nodes) {
		return nil, 0, nil
	}
	keys, next, err := scan(ctx, nodes[idx], nodeCursor, match, count)
	if err != nil {
		return nil, 0, err
	}
	keys = slices.DeleteFunc(keys, k.reserved)
	out := make([]string, len(keys))
	for i, key := range keys {
		out[i] = key[len(k.prefix):]
	}
	if typ != "" && len(out) > 0 {
		types, err := k.types(ctx, out)
		if err != nil {
			return nil, 0, err
		}
		kept := out[:0]
		for i, name := range out {
			// A key gone since the SCAN is "none", which Redis's
			// SCAN never returns.
			if types[i] == typ && typ != "none" {
				kept = append(kept, name)
			}
		}
		out = kept
	}
	switch {
	case len(nodes) == 1:
		return out, next, nil
	case next != 0:
		return out, uint64(idx)<<48 | next, nil
	case idx+1 < len(nodes):
		return out, uint64(idx+1) << 48, nil
	}
	return out, 0, nil
}

// Type is TYPE's answer for key: "none", a limit's type name, or the
// store's own type of another application's key ("string", "hash" ...).
func (k *StoreKeys) Type(ctx context.Context, key string) (string, error) {
	types, err := k.types(ctx, []string{key})
	if err != nil {
		return "", err
	}
	return types[0], nil
}

// types is Type of each of keys, in two pipelines: a GET of every key,
// then a TYPE of those that are not strings.
func (k *StoreKeys) types(ctx context.Context, keys []string) ([]string, error) {
	client := k.client()
	pipe := client.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	for i, key := range keys {
		gets[i] = pipe.Get(ctx, k.prefix+key)
	}
	// Exec's error is the first failed command's; each is looked at.
	_, _ = pipe.Exec(ctx)
	out := make([]string, len(keys))
	var others map[int]*redis.StatusCmd
	for i, get := range gets {
		val, err := get.Result()
		var rec engine.Record
		switch {
		case errors.Is(err, redis.Nil):
			out[i] = "none"
		case err != nil && isWrongType(err):
			if others == nil {
				others, pipe = map[int]*redis.StatusCmd{}, client.Pipeline()
			}
			others[i] = pipe.Type(ctx, k.prefix+keys[i])
		case err != nil:
			return nil, err
		case parseValue(val, &rec):
			out[i] = rec.Family.TypeName()
		default:
			out[i] = "string" // another application's string
		}
	}
	if others == nil {
		return out, nil
	}
	_, _ = pipe.Exec(ctx)
	for i, cmd := range others {
		typ, err := cmd.Result()
		if err != nil {
			return nil, err
		}
		out[i] = typ
	}
	return out, nil
}

// Keys lists every key under the prefix matching pattern, each once (a
// SCAN may return a key twice, when the store's table shrinks meanwhile).
func (k *StoreKeys) Keys(ctx context.Context, pattern string) ([]string, error) {
	var out []string
	seen := map[string]struct{}{}
	err := k.each(ctx, escapeGlob(k.prefix)+pattern, func(keys []string) error {
		for _, key := range keys {
			if _, dup := seen[key]; !dup {
				seen[key] = struct{}{}
				out = append(out, key[len(k.prefix):])
			}
		}
		return nil
	})
	return out, err
}

// Len is DBSIZE: the number of keys under the prefix (a walk of them, which
// holds their names meanwhile), or with no prefix every key of the store.
func (k *StoreKeys) Len(ctx context.Context) (int64, error) {
	if k.prefix == "" {
		nodes, err := k.masters(ctx)
		if err != nil {
			return 0, err
		}
		n := int64(0)
		for _, node := range nodes {
			m, err := node.DBSize(ctx).Result()
			if err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	}
	keys, err := k.Keys(ctx, "*") // each key once
	return int64(len(keys)), err
}

// Flush deletes every key under the prefix, and refuses (ErrNoPrefix) when
// there is no prefix: shared mode never wipes a store that other
// applications may use.
func (k *StoreKeys) Flush(ctx context.Context) error {
	if k.prefix == "" {
		return ErrNoPrefix
	}
	err := k.each(ctx, escapeGlob(k.prefix)+"*", func(keys []string) error {
		pipe := k.client().Pipeline()
		for _, key := range keys {
			pipe.Unlink(ctx, key) // one key a command: keys may be in different slots
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	k.deleted(nil)
	return err
}

// each walks the keys matching match on every master, calling fn with
// each batch SCAN returns, less the reserved key.
func (k *StoreKeys) each(ctx context.Context, match string, fn func(keys []string) error) error {
	nodes, err := k.masters(ctx)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		var cursor uint64
		for {
			keys, next, err := scan(ctx, node, cursor, match, flushBatch)
			if err != nil {
				return err
			}
			keys = slices.DeleteFunc(keys, k.reserved)
			if len(keys) > 0 {
				if err := fn(keys); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// reserved reports whether key (with the prefix) is cellserver's own, not
// a limit: write-behind's lease, which a write-behind instance on the same
// prefix holds (during a move between the modes, say). The keyspace's
// walks pass over it, as write-behind's Load does.
func (k *StoreKeys) reserved(key string) bool { return key == k.prefix+LeaseKey }

// scan is SCAN cursor MATCH match [COUNT count] on node. MATCH is sent
// even when empty, where it matches only the empty key: go-redis's Scan
// leaves an empty pattern out, which would match every key.
func scan(ctx context.Context, node redis.UniversalClient, cursor uint64, match string, count int64) ([]string, uint64, error) {
	args := []any{"scan", cursor, "match", match}
	if count > 0 {
		args = append(args, "count", count)
	}
	cmd := redis.NewScanCmd(ctx, node.Process, args...)
	_ = node.Process(ctx, cmd)
	return cmd.Result()
}

// masters returns the store's masters, ordered by address: the one client
// of a single Redis, or each master of a cluster.
func (k *StoreKeys) masters(ctx context.Context) ([]redis.UniversalClient, error) {
	if k.unsure != nil && k.unsure() {
		return nil, errStoreUnsure
	}
	client := k.client()
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		return []redis.UniversalClient{client}, nil
	}
	type node struct {
		addr string
		c    *redis.Client
	}
	var (
		mu    sync.Mutex // ForEachMaster calls fn concurrently
		nodes []node
	)
	err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, node{c.Options().Addr, c})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b node) int { return cmp.Compare(a.addr, b.addr) })
	out := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		out[i] = n.c
	}
	return out, nil
}

// isWrongType reports whether err is Redis's WRONGTYPE error.
func isWrongType(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(err.Error(), "WRONGTYPE ")
}
