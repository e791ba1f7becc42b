package persist

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// TestSharedAllManyKeys: a THROTTLE.ALL of more keys than Lua's unpack
// takes at once is decided in a real Redis, all or nothing, without
// marking the store down.
func TestSharedAllManyKeys(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	s := NewShared(c, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 20 * time.Second})
	startShared(t, s)
	rules := make([]engine.Rule, 9000)
	for i := range rules {
		rules[i] = engine.Rule{Key: []byte("k" + strconv.Itoa(i)), Family: engine.FamilyFW,
			Window: engine.WindowQuota{Limit: 1, Window: int64(time.Hour)}}
	}
	if a := wait(t, allAsync(s, rules, 1)); a.err != nil || a.d.Limited {
		t.Fatalf("first: %+v", a)
	}
	if a := wait(t, allAsync(s, rules, 1)); a.err != nil || !a.d.Limited {
		t.Fatalf("second: %+v, want refused", a)
	}
	if st := s.Stats(); st.Downs != 0 || st.LocalDecisions != 0 {
		t.Fatalf("stats %+v, want the store up throughout", st)
	}
	n, err := c.DBSize(context.Background()).Result()
	if err != nil || n != 9000 {
		t.Fatalf("DBSIZE %d %v, want 9000", n, err)
	}
}
