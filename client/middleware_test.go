package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

// hello is the handler behind the middleware in these tests.
var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("hello\n"))
})

// byUser keys a request by its X-User header.
func byUser(r *http.Request) string { return r.Header.Get("X-User") }

// get serves one GET as user (the X-User header) from remoteAddr.
func get(h http.Handler, user, remoteAddr string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/hello", nil)
	if user != "" {
		r.Header.Set("X-User", user)
	}
	r.RemoteAddr = remoteAddr
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// check compares a response with the status, exact headers and body wanted.
func check(t *testing.T, name string, w *httptest.ResponseRecorder, status int, header http.Header, body string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("%s: status %d, want %d", name, w.Code, status)
	}
	if !reflect.DeepEqual(w.Header(), header) {
		t.Errorf("%s: headers\n%v\nwant\n%v", name, w.Header(), header)
	}
	if w.Body.String() != body {
		t.Errorf("%s: body %q, want %q", name, w.Body.String(), body)
	}
}

// allowed is the header of a request served by hello.
func allowed(limit, remaining, reset string) http.Header {
	return http.Header{
		"Content-Type":          {"text/plain"},
		"X-Ratelimit-Limit":     {limit},
		"X-Ratelimit-Remaining": {remaining},
		"X-Ratelimit-Reset":     {reset},
	}
}

// limited is the header of a 429.
func limited(limit, remaining, reset, retryAfter string) http.Header {
	h := http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"X-Content-Type-Options": {"nosniff"},
		"X-Ratelimit-Limit":      {limit},
		"X-Ratelimit-Remaining":  {remaining},
		"X-Ratelimit-Reset":      {reset},
	}
	if retryAfter != "" {
		h["Retry-After"] = []string{retryAfter}
	}
	return h
}

func TestMiddlewareBurst(t *testing.T) {
	s := startServer(t)
	h := Middleware(s.limiter(t), GCRA(2, 1, 10*time.Second), MiddlewareOptions{Key: byUser}, hello)
	steps := []struct {
		name    string
		advance time.Duration
		user    string
		status  int
		header  http.Header
		body    string
	}{
		{"1st", 0, "ann", 200, allowed("3", "2", "10"), "hello\n"},
		{"2nd", 0, "ann", 200, allowed("3", "1", "20"), "hello\n"},
		{"3rd", 0, "ann", 200, allowed("3", "0", "30"), "hello\n"},
		{"4th, limited", 0, "ann", 429, limited("3", "0", "30", "10"), "Too Many Requests\n"},
		{"another key", 0, "bob", 200, allowed("3", "2", "10"), "hello\n"},
		{"no key, not limited", 0, "", 200, http.Header{"Content-Type": {"text/plain"}}, "hello\n"},
		{"4 s later", 4 * time.Second, "ann", 429, limited("3", "0", "26", "6"), "Too Many Requests\n"},
		{"10 s later", 6 * time.Second, "ann", 200, allowed("3", "0", "30"), "hello\n"},
	}
	for _, st := range steps {
		s.clock.Advance(st.advance)
		check(t, st.name, get(h, st.user, "192.0.2.1:1234"), st.status, st.header, st.body)
	}
}

// TestMiddlewareDefaultKey checks that requests are limited by client IP
// when no Key is given, under the key "ip:" + IP.
func TestMiddlewareDefaultKey(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	q := GCRA(1, 1, time.Minute)
	h := Middleware(l, q, MiddlewareOptions{}, hello)
	check(t, "v4", get(h, "", "192.0.2.1:1234"), 200, allowed("2", "1", "60"), "hello\n")
	check(t, "v4, another port", get(h, "", "192.0.2.1:5678"), 200, allowed("2", "0", "120"), "hello\n")
	check(t, "v4, limited", get(h, "", "192.0.2.1:1234"), 429, limited("2", "0", "120", "60"), "Too Many Requests\n")
	check(t, "v6", get(h, "", "[2001:db8::1]:1234"), 200, allowed("2", "1", "60"), "hello\n")
	for key, remaining := range map[string]int64{"ip:192.0.2.1": 0, "ip:2001:db8::1": 1} {
		res, err := l.ThrottleN(context.Background(), key, q, 0)
		if err != nil || res.Remaining != remaining {
			t.Errorf("%s: %+v, %v; want remaining %d", key, res, err, remaining)
		}
	}
}

// TestMiddlewareNever checks a limited Result that no wait helps: no
// Retry-After.
func TestMiddlewareNever(t *testing.T) {
	h := http.Header{}
	Result{Limited: true, Limit: 16, Remaining: 3, RetryAfter: NoRetry, ResetAfter: 26 * time.Second}.SetHeaders(h)
	want := http.Header{"X-Ratelimit-Limit": {"16"}, "X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"26"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("headers %v, want %v", h, want)
	}
}

// TestMiddlewareServerDown stops the server and checks both failure modes.
func TestMiddlewareServerDown(t *testing.T) {
	s := startServer(t)
	l := s.limiter(t)
	q := GCRA(15, 30, time.Minute)
	var errs []error
	onError := func(r *http.Request, err error) { errs = append(errs, err) }
	open := Middleware(l, q, MiddlewareOptions{Key: byUser, OnError: onError}, hello)
	closed := Middleware(l, q, MiddlewareOptions{Key: byUser, OnError: onError, FailClosed: true}, hello)

	check(t, "up, fail-open", get(open, "ann", ""), 200, allowed("16", "15", "2"), "hello\n")
	check(t, "up, fail-closed", get(closed, "ann", ""), 200, allowed("16", "14", "4"), "hello\n")
	if len(errs) != 0 {
		t.Fatalf("errors while up: %v", errs)
	}
	s.stop()
	check(t, "down, fail-open", get(open, "ann", ""), 200, http.Header{"Content-Type": {"text/plain"}}, "hello\n")
	check(t, "down, fail-closed", get(closed, "ann", ""), 503, http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"X-Content-Type-Options": {"nosniff"},
	}, "Service Unavailable\n")
	if len(errs) != 2 {
		t.Fatalf("OnError called %d times, want 2: %v", len(errs), errs)
	}
	for _, err := range errs {
		if errors.Is(err, ErrInvalidQuota) {
			t.Errorf("error %v, want a connection error", err)
		}
	}
}

func TestMiddlewareInvalidQuota(t *testing.T) {
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, ErrInvalidQuota) {
			t.Errorf("recovered %v, want ErrInvalidQuota", err)
		}
	}()
	Middleware(NewLimiter(nil), GCRA(15, 30, 500*time.Millisecond), MiddlewareOptions{}, hello)
	t.Error("no panic")
}
