// Package client rate-limits through cellserver from Go: a Limiter over any
// go-redis v9 client asks the server for a decision on a key and a Quota, and
// Middleware does it for every HTTP request, answering 429 with the
// X-RateLimit-* and Retry-After headers.
//
// Today a Quota is redis-cell's GCRA, the CL.THROTTLE command, which also
// makes this package a client of Redis with the redis-cell module loaded.
// The sliding-window, sliding-counter and fixed-window families (SW, SWC,
// FW) arrive with the server's window commands, as new Quota constructors,
// and a check of several quotas at once (THROTTLE.ALL) as a new Limiter
// method; the API here stays as it is.
package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// NoRetry is Result.RetryAfter when waiting would not help: the request was
// admitted, so there is nothing to retry, or it was limited and can never be
// admitted, because its quantity is above the limit. It is the reply's -1,
// in seconds as every other time; read any negative RetryAfter as NoRetry.
const NoRetry = -1 * time.Second

// Result is the server's decision on one request: CL.THROTTLE's reply
// [limited, limit, remaining, retry_after, reset_after]. Times are whole
// seconds, as the server rounds them (up).
type Result struct {
	// Limited is true when the request was refused and nothing was spent.
	Limited bool
	// Limit is how many requests the key allows at once (max burst + 1).
	Limit int64
	// Remaining is how many requests the key allows right now, after this
	// one.
	Remaining int64
	// RetryAfter is how long until this same request would be admitted; it
	// is NoRetry (negative) when it was admitted, and when it never can be.
	RetryAfter time.Duration
	// ResetAfter is how long until the key allows Limit requests again.
	ResetAfter time.Duration
}

// Limiter asks a cellserver for rate-limit decisions. It is safe for
// concurrent use, as its go-redis client is.
type Limiter struct {
	rdb redis.UniversalClient
}

// NewLimiter returns a Limiter that sends its commands through rdb, a
// *redis.Client, *redis.ClusterClient or any redis.UniversalClient
// connected to cellserver (or to a Redis with redis-cell). Closing rdb is
// the caller's business.
func NewLimiter(rdb redis.UniversalClient) *Limiter {
	return &Limiter{rdb: rdb}
}

// Throttle counts one request against key under q and returns the decision.
// An error means there is no decision: q is invalid (wrapping
// ErrInvalidQuota), the server is unreachable, or it refused the command
// (a redis.Error).
func (l *Limiter) Throttle(ctx context.Context, key string, q Quota) (Result, error) {
	return l.ThrottleN(ctx, key, q, 1)
}

// ThrottleN is Throttle for a request that costs quantity: it is admitted
// only if quantity fits, and then spends all of it. A quantity of 0 peeks:
// the Result tells the key's state and nothing is spent. A negative
// quantity is refused without asking the server.
func (l *Limiter) ThrottleN(ctx context.Context, key string, q Quota, quantity int64) (Result, error) {
	if err := q.Err(); err != nil {
		return Result{}, err
	}
	if quantity < 0 {
		return Result{}, fmt.Errorf("client: negative quantity %d", quantity)
	}
	// IntSliceCmd reads the five integers without boxing them.
	cmd := redis.NewIntSliceCmd(ctx, "CL.THROTTLE", key, q.burst, q.count, q.period, quantity)
	if err := l.rdb.Process(ctx, cmd); err != nil {
		return Result{}, fmt.Errorf("client: CL.THROTTLE: %w", err)
	}
	return resultOf(cmd.Val())
}

// errReply is returned for a reply that is not five integers.
var errReply = errors.New("client: CL.THROTTLE: the reply is not 5 integers")

// resultOf reads CL.THROTTLE's reply.
func resultOf(v []int64) (Result, error) {
	if len(v) != 5 {
		return Result{}, errReply
	}
	return Result{
		Limited:    v[0] != 0,
		Limit:      v[1],
		Remaining:  v[2],
		RetryAfter: seconds(v[3]),
		ResetAfter: seconds(v[4]),
	}, nil
}

// seconds converts a reply's seconds to a Duration, saturating where the
// Duration cannot hold them (about 292 years).
func seconds(s int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Second)
	switch {
	case s > most:
		return math.MaxInt64
	case s < -most:
		return math.MinInt64
	}
	return time.Duration(s) * time.Second
}
