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

// refusedOp makes op, as a released op taken again leaves it, the second
// refusal of key (an FW limit of 1) at now, its keys in its reused bytes.
func refusedOp(op *sharedOp, key string, now int64) {
	*op = sharedOp{keyBuf: op.keyBuf[:0]}
	op.op, op.quantity = engine.OpWindow, 1
	op.rule1[0] = engine.Rule{Key: []byte(key), Family: engine.FamilyFW,
		Window: engine.WindowQuota{Limit: 1, Window: int64(time.Hour)}}
	op.rules = op.rule1[:]
	op.setKeys("p:")
	recs := []engine.Record{{Key: op.keys[0]}}
	if _, err := engine.Decide(now, op.op, op.rules, recs, 1); err != nil {
		panic(err)
	}
	op.d, _ = engine.Decide(now, op.op, op.rules, recs, 1)
	op.at, op.state = now, recs[0]
}

// TestDenyCacheKeepsItsOwnKeys: an op's keys are views of bytes it reuses
// once released, so the deny cache keeps copies, also when a second
// refusal of a key replaces the first: after the op decides another key,
// DEL of the first still drops its refusal, and the other key is not
// refused from it.
func TestDenyCacheKeepsItsOwnKeys(t *testing.T) {
	now := time.Now().UnixNano()
	c := denyCache{m: map[string]denyEntry{}, max: 100}
	a, b := new(sharedOp), new(sharedOp)
	refusedOp(a, "k1", now)
	c.add(a)
	refusedOp(b, "k1", now) // the same round's second refusal
	c.add(b)
	refusedOp(b, "k2", now) // b released and taken again
	if _, ok := c.m["p:k1"]; !ok || len(c.m) != 1 {
		t.Fatalf("the cache's keys after b decided k2: %v, want p:k1 only", keysOf(c.m))
	}
	c.drop([]string{"p:k1"}, false) // DEL k1
	if len(c.m) != 0 {
		t.Errorf("after DEL k1 the cache holds %v", keysOf(c.m))
	}
	fresh := new(sharedOp)
	refusedOp(fresh, "k1", now)
	if _, ok := c.lookup(fresh, now); ok {
		t.Error("k1 refused from the cache after its DEL")
	}
}

func keysOf(m map[string]denyEntry) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
