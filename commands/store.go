package commands

import (
	"context"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// Store is where shared mode decides and keeps every key: a Redis, Valkey
// or Redis Cluster that several cellservers share, so that together they
// enforce one limit. With Options.Store set, the rate-limit commands decide
// in it and the keyspace commands act on it; the in-memory engine is left
// to the store's own fallback.
//
// The deciding methods never block: each calls done exactly once, before
// it returns or later on another goroutine, and copies what it keeps of
// its arguments first (they point into the connection's buffer). They
// return the engine's errors, so that a reply is the same as in memory;
// an error that implements ReplyError is sent as its text says. The
// keyspace methods block, and run off the event loops. With behind, an
// earlier decision of the same connection on one of the command's keys has
// yet to be answered (a pipeline): the command is decided after it, in the
// store, and not refused from a refusal remembered before it.
type Store interface {
	Throttle(key []byte, q engine.GCRAQuota, quantity int64, behind bool, done engine.ThrottleDone)
	ThrottleWindow(r engine.Rule, quantity int64, behind bool, done func(engine.Decision, error))
	ThrottleAll(rules []engine.Rule, quantity int64, done func(engine.Decision, error))
	// Now is the time the store decides at (shared mode: the store's
	// clock, as estimated), at which SW.LOG judges a window.
	Now() time.Time

	// Get is GET's answer for key: its value as stored when it is a
	// string that holds no window limit's state (a CL key's TAT, or
	// another application's string), ok false when there is no key, and
	// engine.ErrWrongType for a window limit's state or a key of another
	// type.
	Get(ctx context.Context, key string) (val string, ok bool, err error)
	// Type is TYPE's answer for key: "none", a limit's type, or the
	// store's own type of another application's key.
	Type(ctx context.Context, key string) (string, error)
	PTTL(ctx context.Context, key string) (int64, error)
	// Record returns key's state as stored, for SW.LOG, which lists an SW
	// key's requests and looks only at another key's family (FamilyNone
	// for another application's value).
	Record(ctx context.Context, key string) (engine.Record, bool, error)
	Exists(ctx context.Context, keys []string) (int64, error)
	Delete(ctx context.Context, keys []string) (int64, error)
	Scan(ctx context.Context, cursor uint64, pattern string, count int64, typ string) ([]string, uint64, error)
	Keys(ctx context.Context, pattern string) ([]string, error)
	Len(ctx context.Context) (int64, error)
	Flush(ctx context.Context) error
}

// ReplyError is an error whose text is a reply as it stands, first word
// the error code (a store's "CROSSSLOT ...").
type ReplyError interface {
	error
	Reply() string
}
