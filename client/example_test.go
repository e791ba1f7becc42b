package client_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/cellserver/cellserver/client"
	"github.com/redis/go-redis/v9"
)

func ExampleLimiter_Throttle() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	l := client.NewLimiter(rdb)

	// CL.THROTTLE user:42 15 30 60: 16 at once, then 30 a minute.
	res, err := l.Throttle(context.Background(), "user:42", client.GCRA(15, 30, time.Minute))
	switch {
	case err != nil:
		fmt.Println("no decision:", err)
	case res.Limited:
		fmt.Println("limited; retry in", res.RetryAfter)
	default:
		fmt.Println("allowed;", res.Remaining, "left")
	}
}

func ExampleMiddleware() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	l := client.NewLimiter(rdb)

	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	// 5 requests at once per API key, then 1 a second; requests without a
	// key are not limited.
	h := client.Middleware(l, client.GCRA(4, 1, time.Second), client.MiddlewareOptions{
		Key: func(r *http.Request) string {
			if k := r.Header.Get("X-Api-Key"); k != "" {
				return "api:" + k
			}
			return ""
		},
	}, hello)
	http.Handle("/hello", h)
}
