package commands

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestStoreFailedTimeout: a store that does not answer in time is named so,
// whether the context's deadline or the connection's (which go-redis sets
// from it) cut the wait, and no socket's addresses are shown.
func TestStoreFailedTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, connErr := conn.Read(make([]byte, 1)) // nothing is ever sent
	if connErr == nil {
		t.Fatal("a read with nothing to read did not time out")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	for _, err := range []error{connErr, ctx.Err()} {
		got := storeFailed(err)
		if got != "ERR the shared store failed: no answer within the timeout (--shared-timeout)" {
			t.Errorf("storeFailed(%v) = %q", err, got)
		}
		if strings.Contains(got, "127.0.0.1") {
			t.Errorf("storeFailed shows a socket: %q", got)
		}
	}
}
