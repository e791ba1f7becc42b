package client

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// The response headers, in the canonical form http.Header keeps them in
// (X-RateLimit-Limit on the wire reads the same to every HTTP client).
const (
	HeaderLimit      = "X-Ratelimit-Limit"
	HeaderRemaining  = "X-Ratelimit-Remaining"
	HeaderReset      = "X-Ratelimit-Reset"
	HeaderRetryAfter = "Retry-After"
)

// SetHeaders sets the rate-limit headers of a response from r:
// X-RateLimit-Limit (Limit), X-RateLimit-Remaining (Remaining),
// X-RateLimit-Reset (ResetAfter, in seconds from now) and, when the request
// was limited and can be retried, Retry-After (RetryAfter, in seconds).
func (r Result) SetHeaders(h http.Header) {
	h[HeaderLimit] = []string{strconv.FormatInt(r.Limit, 10)}
	h[HeaderRemaining] = []string{strconv.FormatInt(r.Remaining, 10)}
	h[HeaderReset] = []string{strconv.FormatInt(ceilSeconds(r.ResetAfter), 10)}
	if r.Limited && r.RetryAfter >= 0 {
		h[HeaderRetryAfter] = []string{strconv.FormatInt(ceilSeconds(r.RetryAfter), 10)}
	}
}

// ceilSeconds is d in whole seconds, rounded up, so that a client waiting
// that long is never early (the window families' times are milliseconds).
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

// MiddlewareOptions configures Middleware. The zero value limits by client
// IP and fails open.
type MiddlewareOptions struct {
	// Key names the limit a request counts against. A request whose key is
	// "" is not limited (and gets no rate-limit headers): return "" for
	// requests to exempt, such as health checks. nil means the client's IP,
	// as "ip:" + the host of Request.RemoteAddr; behind a proxy, read the
	// address the proxy forwards, from a header only it can set.
	Key func(*http.Request) string
	// FailClosed answers 503 Service Unavailable when the limiter fails
	// (the server is unreachable or refuses the command). false, the
	// default, fails open: the request is served, without rate-limit
	// headers, so an outage of the limiter is not an outage of the service.
	FailClosed bool
	// OnError, if not nil, is called with every limiter error, before the
	// request is served or refused, to log or count them.
	OnError func(*http.Request, error)
}

// Middleware returns a handler that counts every request against q before
// passing it to next. Every decision sets the headers of Result.SetHeaders;
// a limited request is answered 429 Too Many Requests, with Retry-After,
// and does not reach next. When the limiter fails, the request is served
// (fail open, the default) or answered 503 (opts.FailClosed).
//
// Middleware panics if q is invalid (q.Err() is not nil), so that a wrong
// quota is found at start-up rather than on every request, and if q is a
// LeakyBucket quota, which tells a request when to go rather than whether
// (pace outgoing calls with Limiter.Wait instead).
func Middleware(l *Limiter, q Quota, opts MiddlewareOptions, next http.Handler) http.Handler {
	if err := q.Err(); err != nil {
		panic(err)
	}
	if q.family == familyLB {
		panic(fmt.Errorf("%w: Middleware admits or refuses a request now, and LeakyBucket quota %v paces it; use Limiter.Wait", ErrInvalidQuota, q))
	}
	key := opts.Key
	if key == nil {
		key = clientIP
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := key(r)
		if k == "" {
			next.ServeHTTP(w, r)
			return
		}
		res, err := l.Throttle(r.Context(), k, q)
		if err != nil {
			if opts.OnError != nil {
				opts.OnError(r, err)
			}
			if opts.FailClosed {
				http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		res.SetHeaders(w.Header())
		if res.Limited {
			http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clientIP is the default key: "ip:" and the host of r.RemoteAddr.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}
