// Package client rate-limits through cellserver from Go: a Limiter over any
// go-redis v9 client asks the server for a decision on a key and a Quota, and
// Middleware does it for every HTTP request, answering 429 with the
// X-RateLimit-* and Retry-After headers.
//
// A Quota is redis-cell's GCRA (CL.THROTTLE, which also makes this package a
// client of Redis with the redis-cell module loaded), the exact sliding log
// (SW.THROTTLE), the sliding-window counter (SWC.THROTTLE), the fixed
// window (FW.THROTTLE) or the leaky bucket as a queue (LB.THROTTLE).
// ThrottleAll checks several quotas on several keys at once, all or nothing
// (THROTTLE.ALL). Wait paces calls to someone else's API across a fleet: it
// reserves a LeakyBucket departure and sleeps until it.
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

// Result is the server's decision on one request: the reply
// [limited, limit, remaining, retry_after, reset_after]. A GCRA quota's
// times are whole seconds, as the server rounds them (up); the window
// families' are milliseconds (asked with MS), and so are ThrottleAll's.
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
	// A LeakyBucket quota's admitted request has a RetryAfter too: the wait
	// until its departure (0: go now).
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
	name, _ := q.family.command()
	args := append(append(append([]any{name, key}, q.args()...), quantity), q.options()...)
	unit := time.Second
	if q.family != familyGCRA {
		args, unit = append(args, "MS"), time.Millisecond
	}
	// IntSliceCmd reads the five integers without boxing them.
	cmd := redis.NewIntSliceCmd(ctx, args...)
	if err := l.rdb.Process(ctx, cmd); err != nil {
		return Result{}, fmt.Errorf("client: %s: %w", name, err)
	}
	return resultOf(cmd.Val(), unit)
}

// Rule is one quota on one key, for ThrottleAll.
type Rule struct {
	Key   string
	Quota Quota
}

// ThrottleAll counts one request of quantity against every rule, all or
// nothing: it is spent under every rule only if every rule admits it
// (THROTTLE.ALL). The Result is limited if any rule is; its Limit and
// Remaining are the rule's with the least remaining, its RetryAfter the
// longest wait among the limiting rules (NoRetry if one can never admit),
// its ResetAfter the longest of all, in milliseconds. Rules must name
// distinct keys.
func (l *Limiter) ThrottleAll(ctx context.Context, rules []Rule, quantity int64) (Result, error) {
	if len(rules) == 0 {
		return Result{}, fmt.Errorf("%w: ThrottleAll needs at least one rule", ErrInvalidQuota)
	}
	if quantity < 0 {
		return Result{}, fmt.Errorf("client: negative quantity %d", quantity)
	}
	args := []any{"THROTTLE.ALL"}
	for _, r := range rules {
		if err := r.Quota.Err(); err != nil {
			return Result{}, fmt.Errorf("rule on %q: %w", r.Key, err)
		}
		_, rule := r.Quota.family.command()
		args = append(append(args, rule, r.Key), r.Quota.args()...)
	}
	args = append(args, "QUANTITY", quantity, "MS")
	cmd := redis.NewIntSliceCmd(ctx, args...)
	if err := l.rdb.Process(ctx, cmd); err != nil {
		return Result{}, fmt.Errorf("client: THROTTLE.ALL: %w", err)
	}
	return resultOf(cmd.Val(), time.Millisecond)
}

// errReply is returned for a reply that is not five integers.
var errReply = errors.New("client: the reply is not 5 integers")

// resultOf reads a throttle reply whose times are in unit.
func resultOf(v []int64, unit time.Duration) (Result, error) {
	if len(v) != 5 {
		return Result{}, errReply
	}
	retry := NoRetry
	if v[3] >= 0 {
		retry = duration(v[3], unit)
	}
	return Result{
		Limited:    v[0] != 0,
		Limit:      v[1],
		Remaining:  v[2],
		RetryAfter: retry,
		ResetAfter: duration(v[4], unit),
	}, nil
}

// duration converts a reply's time in unit to a Duration, saturating where
// the Duration cannot hold it (about 292 years).
func duration(n int64, unit time.Duration) time.Duration {
	most := math.MaxInt64 / int64(unit)
	switch {
	case n > most:
		return math.MaxInt64
	case n < -most:
		return math.MinInt64
	}
	return time.Duration(n) * unit
}
