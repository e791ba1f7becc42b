package client_test

import (
	"context"
	"errors"
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

func ExampleLimiter_Wait() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	l := client.NewLimiter(rdb)

	// The partner's API takes 25 calls a second from all of us together:
	// every worker of every instance waits for its turn on one key, at most
	// a second (LB.THROTTLE stripe-api 25 1000ms 1 MAXWAIT 1000ms MS).
	q := client.LeakyBucket(25, time.Second, time.Second)
	ctx := context.Background()
	jobs := make(chan string)
	go func() {
		defer close(jobs)
		for _, j := range []string{"invoice-1", "invoice-2", "invoice-3"} {
			jobs <- j
		}
	}()
	for job := range jobs {
		var limited *client.LimitedError
		switch err := l.Wait(ctx, "stripe-api", q); {
		case errors.As(err, &limited):
			fmt.Println("queue full; come back in", limited.RetryAfter)
			continue
		case err != nil:
			fmt.Println("no departure:", err)
			return
		}
		fmt.Println("calling the API for", job) // at most one call every 40 ms
	}
}
