package persist

import (
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// TestSharedDenyCacheOtherWindow: a fixed window of another length on the
// same key starts its own count, which makes the key laxer for the first
// window's limit: the refusal remembered under the first is dropped, and
// the store decides the next request.
func TestSharedDenyCacheOtherWindow(t *testing.T) {
	_, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	fw := func(limit int64, window time.Duration) engine.Rule {
		return engine.Rule{Key: []byte("k"), Family: engine.FamilyFW, Window: engine.WindowQuota{Limit: limit, Window: int64(window)}}
	}
	hour, minute := fw(2, time.Hour), fw(100, time.Minute)
	for range 2 {
		wait(t, windowAsync(s, hour, 1))
	}
	if a := wait(t, windowAsync(s, hour, 1)); !a.d.Limited {
		t.Fatalf("3rd call admitted: %+v", a)
	}
	if a := wait(t, windowAsync(s, minute, 1)); a.err != nil || a.d.Limited {
		t.Fatalf("the minute's first call: %+v, want admitted", a)
	}
	if a := wait(t, windowAsync(s, hour, 1)); a.err != nil || a.d.Limited {
		t.Fatalf("the hour's limit after the minute's count replaced it: %+v, want admitted as the store does", a)
	}
	if st := s.Stats(); st.DenyCacheHits != 0 {
		t.Fatalf("stats %+v, want no deny-cache answer", st)
	}
}

// TestSharedRefundPastStateClearsDenyCache: a refund larger than a CL
// key's state deletes the key (with redis-cell's error): the refusal
// remembered before it goes too.
func TestSharedRefundPastStateClearsDenyCache(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	exhaustCL(t, s, "k")
	if a := wait(t, throttleAsync(s, "k", clQuota, -1000)); a.err == nil {
		t.Fatalf("a refund past the key's state: %+v, want an error", a)
	}
	if m.Exists("k") {
		t.Fatal("the key is still in the store")
	}
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || a.res.Limited {
		t.Fatalf("after the key was deleted: %+v, want admitted", a)
	}
}
