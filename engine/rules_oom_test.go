package engine

import (
	"strings"
	"testing"
)

// TestThrottleAllAllOrNothingUnderMaxMemory: a THROTTLE.ALL whose new key
// cannot fit records none of its rules, and one rule's new key never evicts
// another rule's key.
func TestThrottleAllAllOrNothingUnderMaxMemory(t *testing.T) {
	e := New(Options{Shards: 1, MaxMemory: 2*keyCost(FamilyFW, 1) + 18, SweepInterval: -1})
	t.Cleanup(e.Close)
	fw := func(key string) Rule {
		return Rule{Key: []byte(key), Family: FamilyFW, Window: WindowQuota{Limit: 10, Window: 60e9}}
	}
	// Two keys with short names fit, the huge one never does.
	if _, err := e.ThrottleAll(nil, []Rule{fw("a"), fw(strings.Repeat("x", 300))}, 1); err != ErrOutOfMemory {
		t.Fatalf("err = %v, want ErrOutOfMemory", err)
	}
	if _, ok := e.Get(nil, []byte("a")); ok {
		t.Fatal("rule 1 was recorded although the call failed")
	}
	// a exists; b and c are new: a and one new key fit, not both new ones.
	e.ThrottleWindow(nil, fw("a"), 1)
	if _, err := e.ThrottleAll(nil, []Rule{fw("a"), fw("b"), fw("c")}, 1); err != ErrOutOfMemory {
		t.Fatalf("three keys in a budget of two: err = %v, want ErrOutOfMemory", err)
	}
	if d, _ := e.ThrottleWindow(nil, fw("a"), 0); d.Remaining != 9 {
		t.Errorf("a remaining %d, want 9: the failed call changed it", d.Remaining)
	}
	// Two keys, one new: the new one evicts an unrelated key, never a.
	e.Flush(nil)
	e.ThrottleWindow(nil, fw("other"), 1)
	e.ThrottleWindow(nil, fw("a"), 1)
	if _, err := e.ThrottleAll(nil, []Rule{fw("b"), fw("a")}, 1); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.ThrottleWindow(nil, fw("a"), 0); d.Remaining != 8 {
		t.Errorf("a remaining %d, want 8", d.Remaining)
	}
	if _, ok := e.Get(nil, []byte("other")); ok {
		t.Error("the unrelated key should have been evicted")
	}
	// Nothing stays pinned: a later new key can evict a.
	e.ThrottleWindow(nil, fw("z"), 1)
	if e.EvictedKeys() < 2 {
		t.Errorf("evicted %d keys, want at least 2 (pins released)", e.EvictedKeys())
	}
}

// TestDuplicateKeyManyRules: the duplicate check finds a repeated key among
// many rules (the set path) as among few (the pairwise path).
func TestDuplicateKeyManyRules(t *testing.T) {
	for _, n := range []int{3, 40, 5000} {
		rules := make([]Rule, n)
		for i := range rules {
			rules[i] = Rule{Key: []byte(strings.Repeat("k", 1+i%7) + string(rune('a'+i/7%26)) + string(rune(i)))}
		}
		if _, _, dup := duplicateKey(rules); dup {
			t.Fatalf("%d distinct keys reported as duplicates", n)
		}
		rules[n-1].Key = rules[0].Key
		if first, second, dup := duplicateKey(rules); !dup || first != 0 || second != n-1 {
			t.Errorf("%d rules: the repeated key found as %d, %d, %v; want 0, %d, true", n, first, second, dup, n-1)
		}
	}
}
