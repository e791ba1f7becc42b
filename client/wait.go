package client

import (
	"context"
	"fmt"
	"time"
)

// LimitedError is Wait's error when the server refused to reserve a
// departure: the key's queue was full, its next free departure further
// away than the quota's maxWait (or than ctx's deadline). Nothing was
// reserved. Read it with errors.As.
type LimitedError struct {
	// Key is the key whose queue was full.
	Key string
	// RetryAfter is how long until a Wait with the same maxWait would be
	// reserved, as the server answered it; NoRetry (negative) if never.
	RetryAfter time.Duration
}

func (e *LimitedError) Error() string {
	if e.RetryAfter < 0 {
		return fmt.Sprintf("client: LB.THROTTLE %q: refused, and no wait helps", e.Key)
	}
	return fmt.Sprintf("client: LB.THROTTLE %q: queue full; retry in %v", e.Key, e.RetryAfter)
}

// Wait reserves the next free departure of key's queue under q, a
// LeakyBucket quota, and blocks until it comes (a timer; it returns at once
// when the departure is now). Every worker of a fleet that calls Wait on
// one key before each call to an API leaves one interval after the other,
// wherever it runs:
//
//	for job := range jobs {
//		if err := l.Wait(ctx, "stripe-api", q); err != nil {
//			return err
//		}
//		call(job)
//	}
//
// Wait returns at once, having reserved nothing, with a *LimitedError when
// the queue is full (the departure would be more than maxWait away), with
// ctx.Err() when ctx is done already, and with an error wrapping
// ErrInvalidQuota when q is not a valid LeakyBucket quota. When ctx has a
// deadline sooner than maxWait, Wait asks for no departure beyond it, so
// that a waiter bound to time out is refused rather than queued.
//
// When ctx ends during the wait, Wait returns ctx.Err() and the
// reservation is not given back: the departure stays taken and passes
// unused, because LB.THROTTLE keeps only its queue's tail, which has no
// "release" (one waiter's departure cannot be taken out of the middle of
// the queue). So a cancelled waiter delays every later one by an interval,
// and the fleet goes a little slower than the quota, never faster.
//
// The wait counts from the server's reply, so a departure is never early;
// it is late by the reply's trip and the timer's lateness, and the gap
// between two departures can shrink by the difference in those delays.
func (l *Limiter) Wait(ctx context.Context, key string, q Quota) error {
	if err := q.Err(); err != nil {
		return err
	}
	if q.family != familyLB {
		return fmt.Errorf("%w: Wait takes a LeakyBucket quota, not %v, which admits or refuses now", ErrInvalidQuota, q)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		// Whole milliseconds, rounded down: the server rounds the wait up.
		left := max(int64(time.Until(deadline)/time.Millisecond), 0)
		q.maxWait = min(q.maxWait, left)
	}
	res, err := l.ThrottleN(ctx, key, q, 1)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if res.Limited {
		return &LimitedError{Key: key, RetryAfter: res.RetryAfter}
	}
	if res.RetryAfter <= 0 {
		return nil
	}
	timer := time.NewTimer(res.RetryAfter)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
