package rls

import (
	"context"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// countingThrottler is an AllThrottler over the engine that counts calls.
type countingThrottler struct {
	e     *engine.Engine
	calls int
}

func (c *countingThrottler) Now() time.Time { return c.e.Now() }

func (c *countingThrottler) ThrottleAllEach(rules []engine.Rule, quantities []int64, done func(engine.Decision, []engine.Decision, error)) {
	c.calls++
	each := make([]engine.Decision, len(rules))
	d, err := c.e.ThrottleAllEach(nil, rules, quantities, each)
	done(d, each, err)
}

// TestStoreDeciderOneRule: a request of one rule costs the store one call,
// and its decision is the rule's, as the engine gives it.
func TestStoreDeciderOneRule(t *testing.T) {
	c := &countingThrottler{e: engine.New(engine.Options{SweepInterval: -1})}
	ref := engine.New(engine.Options{SweepInterval: -1})
	rule := []engine.Rule{{Key: []byte("k"), Family: engine.FamilyFW, Window: engine.WindowQuota{Limit: 2, Window: int64(time.Hour)}}}
	for i := range 3 {
		var each, want [1]engine.Decision
		d, err := StoreDecider(c).DecideAll(context.Background(), rule, []int64{1}, each[:])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.ThrottleAllEach(nil, rule, []int64{1}, want[:]); err != nil {
			t.Fatal(err)
		}
		if d.Limited != (i == 2) || each[0].Limited != want[0].Limited || each[0].Remaining != want[0].Remaining || d.Remaining != want[0].Remaining {
			t.Fatalf("call %d: %+v, each %+v, want each %+v", i, d, each[0], want[0])
		}
	}
	if c.calls != 3 {
		t.Fatalf("%d store calls for 3 requests, want 3", c.calls)
	}
}
