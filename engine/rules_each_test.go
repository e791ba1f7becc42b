package engine

import (
	"testing"
	"time"
)

// TestThrottleAllEach: per-rule quantities, all or nothing, and each rule's
// own decision.
func TestThrottleAllEach(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	e := New(Options{Now: func() time.Time { return now }})
	defer e.Close()
	fw := func(key string, limit int64) Rule {
		return Rule{Key: []byte(key), Family: FamilyFW, Window: WindowQuota{Limit: limit, Window: int64(time.Minute)}}
	}
	rules := []Rule{fw("a", 5), fw("b", 10)}
	each := make([]Decision, 2)

	d, err := e.ThrottleAllEach(nil, rules, []int64{2, 7}, each)
	if err != nil || d.Limited || each[0].Remaining != 3 || each[1].Remaining != 3 {
		t.Fatalf("first: %+v %+v %v", d, each, err)
	}
	// b cannot take 4 more: nothing is recorded, a keeps its 3.
	d, err = e.ThrottleAllEach(nil, rules, []int64{1, 4}, each)
	if err != nil || !d.Limited || each[0].Limited || !each[1].Limited || each[0].Remaining != 3 || each[1].Remaining != 3 {
		t.Fatalf("limited: %+v %+v %v", d, each, err)
	}
	// A quantity of 0 checks without recording.
	d, err = e.ThrottleAllEach(nil, rules, []int64{3, 0}, each)
	if err != nil || d.Limited || each[0].Remaining != 0 || each[1].Remaining != 3 {
		t.Fatalf("check: %+v %+v %v", d, each, err)
	}
	if _, err := e.ThrottleAllEach(nil, []Rule{fw("a", 5), fw("a", 5)}, []int64{1, 1}, each); err == nil {
		t.Fatal("duplicate keys accepted")
	}
}
