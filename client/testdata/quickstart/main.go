// Command quickstart asks cellserver whether four requests of one user may
// pass: three at once, then one every 20 seconds.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/cellserver/cellserver/client"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := os.Getenv("CELLSERVER_ADDR") // host:port of cellserver
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	limiter := client.NewLimiter(rdb)

	quota := client.GCRA(2, 3, time.Minute) // CL.THROTTLE user:42 2 3 60
	for i := 1; i <= 4; i++ {
		res, err := limiter.Throttle(context.Background(), "user:42", quota)
		if err != nil {
			log.Fatal(err) // no decision: cellserver unreachable, or an invalid quota
		}
		if res.Limited {
			fmt.Printf("request %d: limited, retry in %v\n", i, res.RetryAfter)
		} else {
			fmt.Printf("request %d: allowed, %d left\n", i, res.Remaining)
		}
	}
}
