package engine

import (
	"errors"
	"testing"
	"time"
)

// TestWindowFamiliesSmoke walks each family through a burst, a block and
// the window sliding on, on a fake clock.
func TestWindowFamiliesSmoke(t *testing.T) {
	for _, f := range []Family{FamilySW, FamilySWC, FamilyFW} {
		t.Run(f.Name(), func(t *testing.T) {
			e, c := newTestEngine(t)
			// Align the clock to a window boundary so FW/SWC buckets start now.
			now := c.Now().UnixNano()
			c.Advance(time.Duration(10_000_000_000 - now%10_000_000_000))
			r := Rule{Key: []byte("k"), Family: f, Window: WindowQuota{Limit: 3, Window: int64(10 * time.Second)}}
			for i := int64(0); i < 3; i++ {
				d, err := e.ThrottleWindow(nil, r, 1)
				if err != nil || d.Limited || d.Remaining != 2-i {
					t.Fatalf("hit %d: %+v %v", i, d, err)
				}
			}
			d, _ := e.ThrottleWindow(nil, r, 1)
			if !d.Limited || d.Remaining != 0 || d.RetryAfter <= 0 {
				t.Fatalf("4th: %+v, want limited with a retry", d)
			}
			// SW and FW admit again after the window; SWC once the full bucket,
			// now the previous one, weighs 2/3 or less: 10s + 3.33s.
			wantRetry := int64(10)
			if f == FamilySWC {
				wantRetry = 14
			}
			if s := d.Seconds(); s.RetryAfter != wantRetry || s.ResetAfter < 10 {
				t.Errorf("4th in seconds: %+v, want retry %d", s, wantRetry)
			}
			if _, err := e.Throttle(nil, []byte("k"), quota, 1); err != ErrWrongType {
				t.Errorf("CL on a %s key: %v, want ErrWrongType", f.Name(), err)
			}
			c.Advance(10 * time.Second)
			d, _ = e.ThrottleWindow(nil, r, 1)
			if f != FamilySWC && d.Limited {
				t.Errorf("after the window: %+v", d)
			}
			c.Advance(30 * time.Second)
			if _, ok := e.Get(nil, []byte("k")); ok {
				t.Error("key outlived its window")
			}
		})
	}
}

func TestThrottleAllSmoke(t *testing.T) {
	e, _ := newTestEngine(t)
	rules := []Rule{
		{Key: []byte("sec"), Family: FamilySW, Window: WindowQuota{Limit: 2, Window: int64(time.Second)}},
		{Key: []byte("min"), Family: FamilyFW, Window: WindowQuota{Limit: 100, Window: int64(time.Minute)}},
		{Key: []byte("cl"), Family: FamilyCL, GCRA: GCRAQuota{MaxBurst: 15, Count: 30, Period: 60}},
	}
	for i := 0; i < 2; i++ {
		if d, err := e.ThrottleAll(nil, rules, 1); err != nil || d.Limited {
			t.Fatalf("hit %d: %+v %v", i, d, err)
		}
	}
	d, err := e.ThrottleAll(nil, rules, 1)
	if err != nil || !d.Limited || d.Remaining != 0 || d.Limit != 2 {
		t.Fatalf("3rd: %+v %v", d, err)
	}
	// Nothing was recorded under the other rules.
	if d, _ := e.ThrottleWindow(nil, rules[1], 0); d.Remaining != 98 {
		t.Errorf("FW remaining %d, want 98", d.Remaining)
	}
	if _, err := e.ThrottleAll(nil, []Rule{rules[0], rules[0]}, 1); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("duplicate keys: %v", err)
	}
}
