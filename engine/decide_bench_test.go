package engine

import (
	"testing"
	"time"
)

// BenchmarkDecide runs Decide as shared mode does, on a state that each
// call's new state replaces, 1ms apart: one family's command per
// sub-benchmark, and THROTTLE.ALL over one rule of each family. The SW
// limit lets the log hold up to 100 requests.
func BenchmarkDecide(b *testing.B) {
	window := WindowQuota{Limit: 100, Window: int64(100 * time.Millisecond)}
	rule := func(f Family) Rule {
		return Rule{Key: []byte(f.Name()), Family: f, GCRA: GCRAQuota{MaxBurst: 100, Count: 1000, Period: 1}, Window: window}
	}
	cases := []struct {
		name  string
		op    Op
		rules []Rule
	}{
		{"CL", OpThrottle, []Rule{rule(FamilyCL)}},
		{"SW", OpWindow, []Rule{rule(FamilySW)}},
		{"SWC", OpWindow, []Rule{rule(FamilySWC)}},
		{"FW", OpWindow, []Rule{rule(FamilyFW)}},
		{"ALL", OpAll, []Rule{rule(FamilyCL), rule(FamilySW), rule(FamilySWC), rule(FamilyFW)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			states := make([]Record, len(c.rules))
			for i, r := range c.rules {
				states[i].Key = string(r.Key)
			}
			now := epochDay
			b.ReportAllocs()
			for range b.N {
				now += 1_000_000
				if _, err := Decide(now, c.op, c.rules, states, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
