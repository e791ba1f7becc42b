package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
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

// TestThrottleAllPeekTakesNoMemory: a quantity of 0 creates no SW, SWC or
// FW key, so THROTTLE.ALL, like SW/SWC/FW.THROTTLE of quantity 0, is never
// refused for memory on its account; nor is a rule of quantity 0 among
// ThrottleAllEach's. A CL rule of quantity 0 writes its key, as redis-cell
// does, and is refused alone and among rules alike when that key cannot fit.
func TestThrottleAllPeekTakesNoMemory(t *testing.T) {
	e := New(Options{Shards: 1, MaxMemory: keyCost(FamilyFW, 1), SweepInterval: -1})
	t.Cleanup(e.Close)
	huge := []byte(strings.Repeat("x", 300)) // alone over the budget
	fw := Rule{Key: []byte("a"), Family: FamilyFW, Window: WindowQuota{Limit: 10, Window: 60e9}}
	for _, f := range []Family{FamilySW, FamilySWC, FamilyFW} {
		r := Rule{Key: huge, Family: f, Window: WindowQuota{Limit: 10, Window: 60e9}}
		alone, err := e.ThrottleWindow(nil, r, 0)
		if err != nil {
			t.Fatalf("%s.THROTTLE of 0 alone: %v", f.Name(), err)
		}
		d, err := e.ThrottleAll(nil, []Rule{fw, r}, 0)
		if err != nil {
			t.Fatalf("THROTTLE.ALL of 0 with %s: %v, want what %s.THROTTLE answers alone", f.Name(), err, f.Name())
		}
		if d.Limited || d.Remaining != alone.Remaining || d.Remaining != 10 {
			t.Errorf("THROTTLE.ALL of 0 with %s: %s", f.Name(), fmtDecision(d))
		}
		each := make([]Decision, 2)
		if _, err := e.ThrottleAllEach(nil, []Rule{fw, r}, []int64{1, 0}, each); err != nil {
			t.Fatalf("ThrottleAllEach with %s of 0: %v", f.Name(), err)
		}
		if got := fmt.Sprint(held(e)); got != "[a]" {
			t.Errorf("ThrottleAllEach with %s of 0: held %s, want [a]", f.Name(), got)
		}
		e.Flush(nil)
	}
	cl := Rule{Key: huge, Family: FamilyCL, GCRA: quota}
	if _, err := e.Throttle(nil, huge, quota, 0); err != ErrOutOfMemory {
		t.Fatalf("CL.THROTTLE of 0 on a key over the budget: %v, want ErrOutOfMemory", err)
	}
	if _, err := e.ThrottleAll(nil, []Rule{fw, cl}, 0); err != ErrOutOfMemory {
		t.Errorf("THROTTLE.ALL of 0 with that CL rule: %v, want ErrOutOfMemory", err)
	}
}

// TestThrottleAllCountsLogGrowth: THROTTLE.ALL reserves room for the SW
// logs it grows, as for the keys it creates: when its keys, their logs
// grown, cannot fit the budget together it records nothing, rather than
// leave the shard over its bound; when evicting another key makes room, it
// records as an SW.THROTTLE would.
func TestThrottleAllCountsLogGrowth(t *testing.T) {
	q := WindowQuota{Limit: 100, Window: 60e9}
	sw := Rule{Key: []byte("s"), Family: FamilySW, Window: q}
	fw := Rule{Key: []byte("f"), Family: FamilyFW, Window: q}
	full := keyCost(FamilySW, 1) + 4*8 + keyCost(FamilyFW, 1) // s, its ring of 4 full, and f
	for _, tc := range []struct {
		name    string
		budget  int64
		setUp   int64 // requests in s before the call
		other   bool  // an unrelated key, expiring first, fills the rest
		wantErr error
		held    string
	}{
		{"a grown ring does not fit", full, 4, false, ErrOutOfMemory, "[f s]"},
		{"a grown ring evicts another key", full + keyCost(FamilyCL, 1), 4, true, nil, "[f s]"},
		{"a new key's first ring does not fit", keyCost(FamilySW, 1) + keyCost(FamilyFW, 1) + 16, 0, false, ErrOutOfMemory, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewManualClock(time.Unix(0, epochDay))
			e := New(Options{Now: c.Now, Shards: 1, MaxMemory: tc.budget, SweepInterval: -1})
			t.Cleanup(e.Close)
			for range tc.setUp {
				if _, err := e.ThrottleWindow(nil, sw, 1); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setUp > 0 {
				if _, err := e.ThrottleWindow(nil, fw, 1); err != nil {
					t.Fatal(err)
				}
			}
			if tc.other {
				hit(t, e, "o", 1)
			}
			_, err := e.ThrottleAll(nil, []Rule{sw, fw}, 1)
			if err != tc.wantErr {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := e.Used(); got > tc.budget {
				t.Errorf("Used = %d, over MaxMemory %d", got, tc.budget)
			}
			if got := fmt.Sprint(held(e)); got != tc.held {
				t.Errorf("held %s, want %s", got, tc.held)
			}
			recorded := int64(0)
			if err == nil {
				recorded = 1
			}
			if tc.setUp > 0 {
				if d := peek(t, e, sw); d.Remaining != 100-tc.setUp-recorded {
					t.Errorf("s remaining %d, want %d", d.Remaining, 100-tc.setUp-recorded)
				}
				if d := peek(t, e, fw); d.Remaining != 99-recorded {
					t.Errorf("f remaining %d, want %d", d.Remaining, 99-recorded)
				}
			}
			checkShard(t, e.shards[0])
		})
	}
}

// TestThrottleAllLoneLogGrowsAsAlone: a rule whose key is the call's only
// one in its shard is held to what its command alone is held to: an SW
// key's log may grow past the budget, as SW.THROTTLE's does, rather than
// be refused.
func TestThrottleAllLoneLogGrowsAsAlone(t *testing.T) {
	sw := Rule{Key: []byte("s"), Family: FamilySW, Window: WindowQuota{Limit: 100, Window: 60e9}}
	budget := keyCost(FamilySW, 1) + 4*8 // s and its ring of 4, full
	var used [2]int64
	for i, all := range []bool{false, true} {
		e := New(Options{Shards: 1, MaxMemory: budget, SweepInterval: -1})
		t.Cleanup(e.Close)
		for range 4 {
			if _, err := e.ThrottleWindow(nil, sw, 1); err != nil {
				t.Fatal(err)
			}
		}
		var d Decision
		var err error
		if all {
			d, err = e.ThrottleAll(nil, []Rule{sw}, 1)
		} else {
			d, err = e.ThrottleWindow(nil, sw, 1)
		}
		if err != nil || d.Limited {
			t.Fatalf("THROTTLE.ALL %v: %s, %v; want admitted", all, fmtDecision(d), err)
		}
		if got := fmt.Sprint(held(e)); got != "[s]" {
			t.Errorf("THROTTLE.ALL %v: held %s, want [s]", all, got)
		}
		used[i] = e.Used()
		checkShard(t, e.shards[0])
	}
	if used[0] != used[1] {
		t.Errorf("Used %d after SW.THROTTLE, %d after THROTTLE.ALL", used[0], used[1])
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
