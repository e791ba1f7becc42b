package persist

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
)

// TestSharedDenyCacheOtherWindow: a fixed window of another length on the
// same key starts its own count, which makes the key laxer for the first
// window's limit: the refusal remembered under the first is dropped, and
// the store decides the next request, even one sent the moment the
// admission is answered.
func TestSharedDenyCacheOtherWindow(t *testing.T) {
	_, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	hour, minute := spendHour(t, s, "k")
	// The hour's next call is made as soon as the minute's admission is
	// answered, from its callback: the refusal it makes stale must be gone
	// by then (a client told "admitted" may send at once).
	minuteCh, hourCh := make(chan answer, 1), make(chan answer, 1)
	s.ThrottleWindow(minute, 1, false, func(d engine.Decision, err error) {
		minuteCh <- answer{d: d, err: err}
		s.ThrottleWindow(hour, 1, false, func(d engine.Decision, err error) { hourCh <- answer{d: d, err: err} })
	})
	if a := wait(t, minuteCh); a.err != nil || a.d.Limited {
		t.Fatalf("the minute's first call: %+v, want admitted", a)
	}
	if a := wait(t, hourCh); a.err != nil || a.d.Limited {
		t.Fatalf("the hour's limit after the minute's count replaced it: %+v, want admitted as the store does", a)
	}
	if st := s.Stats(); st.DenyCacheHits != 0 {
		t.Fatalf("stats %+v, want no deny-cache answer", st)
	}
}

// TestSharedDenyCacheBehind: a command pipelined behind a refund, or behind
// an admission under another window of its key, is decided after it, as in
// memory, not refused from the refusal remembered before it; the deny
// cache still answers a command with nothing before it.
func TestSharedDenyCacheBehind(t *testing.T) {
	_, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	exhaustCL(t, s, "k")
	hits := s.Stats().DenyCacheHits
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); !a.res.Limited || s.Stats().DenyCacheHits != hits+1 {
		t.Fatalf("a refused key's next call: %+v, deny-cache hits %d (%d before), want refused from the cache", a, s.Stats().DenyCacheHits, hits)
	}
	refund := throttleAsync(s, "k", clQuota, -1)
	ch := make(chan answer, 1)
	s.Throttle([]byte("k"), clQuota, 1, true, engine.ThrottleFunc(func(r engine.Result, err error) { ch <- answer{res: r, err: err} }))
	if a := wait(t, refund); a.err != nil {
		t.Fatalf("refund: %+v", a)
	}
	if a := wait(t, ch); a.err != nil || a.res.Limited || a.res.Remaining != 0 {
		t.Fatalf("the call pipelined behind the refund: %+v, want admitted with 0 left, as in memory", a)
	}

	hour, minute := spendHour(t, s, "w")
	m := windowAsync(s, minute, 1)
	hourCh := make(chan answer, 1)
	s.ThrottleWindow(hour, 1, true, func(d engine.Decision, err error) { hourCh <- answer{d: d, err: err} })
	if a := wait(t, m); a.err != nil || a.d.Limited {
		t.Fatalf("the minute's call: %+v, want admitted", a)
	}
	if a := wait(t, hourCh); a.err != nil || a.d.Limited {
		t.Fatalf("the hour's call pipelined behind the minute's admission: %+v, want admitted as in memory", a)
	}
}

// TestSharedDenyCacheDropDuringRound: a key deleted (and invalidated)
// after a round's compare-and-set ran in the store and before its reply is
// taken: the round's refusal of the key is not remembered, since it was
// decided on the state the deletion removed.
func TestSharedDenyCacheDropDuringRound(t *testing.T) {
	var armed atomic.Bool
	var m *miniredis.Miniredis
	var s *Shared
	m, s, _ = newSharedMini(t, SharedOptions{answered: func() {
		if armed.CompareAndSwap(true, false) {
			m.Del("k")
			s.Invalidate("k")
		}
	}})
	startShared(t, s)
	exhaustCL(t, s, "k")
	s.deny.clear() // the next refusal is the store's
	armed.Store(true)
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || !a.res.Limited {
		t.Fatalf("the refusal whose reply the DEL overtook: %+v, want refused (decided before the DEL)", a)
	}
	if armed.Load() || m.Exists("k") {
		t.Fatal("the DEL did not run between the round and its reply")
	}
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || a.res.Limited {
		t.Fatalf("after the key was deleted: %+v (deny-cache hits %d), want admitted", a, s.Stats().DenyCacheHits)
	}
}

// TestSharedDenyCacheOtherDropDuringRound: an invalidation of another key
// during a round leaves the round's refusal of k remembered.
func TestSharedDenyCacheOtherDropDuringRound(t *testing.T) {
	var armed atomic.Bool
	var s *Shared
	_, s, _ = newSharedMini(t, SharedOptions{answered: func() {
		if armed.CompareAndSwap(true, false) {
			s.Invalidate("other")
		}
	}})
	startShared(t, s)
	exhaustCL(t, s, "k")
	s.deny.clear()
	armed.Store(true)
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || !a.res.Limited {
		t.Fatalf("k: %+v, want refused", a)
	}
	if armed.Load() || !remembered(s, "k") {
		t.Fatal("k's refusal not remembered after another key's invalidation during its round")
	}
}

// spendHour spends key's hourly fixed window of 2 on s, the third call
// refused (and remembered), and returns that rule and a minute's of 100 on
// the same key.
func spendHour(t *testing.T, s *Shared, key string) (hour, minute engine.Rule) {
	t.Helper()
	fw := func(limit int64, window time.Duration) engine.Rule {
		return engine.Rule{Key: []byte(key), Family: engine.FamilyFW, Window: engine.WindowQuota{Limit: limit, Window: int64(window)}}
	}
	hour, minute = fw(2, time.Hour), fw(100, time.Minute)
	for range 2 {
		wait(t, windowAsync(s, hour, 1))
	}
	if a := wait(t, windowAsync(s, hour, 1)); !a.d.Limited {
		t.Fatalf("3rd call admitted: %+v", a)
	}
	return hour, minute
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
	c := newDenyCache(100, denyBuckets)
	a, b := new(sharedOp), new(sharedOp)
	refusedOp(a, "k1", now)
	c.add(a, c.epoch.Load())
	refusedOp(b, "k1", now) // the same round's second refusal
	c.add(b, c.epoch.Load())
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

// TestDenyCacheFilter: random refusals remembered, looked up (some past
// their time), dropped, evicted (the cache holds at most 20 keys) and
// cleared, in a filter of 64 buckets so that keys share them: after every
// step, each bucket's count is the number of keys it holds and its bit is
// set exactly when that is not 0, and a key remembered is always found
// (the filter never hides one).
func TestDenyCacheFilter(t *testing.T) {
	now := time.Now().UnixNano()
	c := newDenyCache(20, 64)
	shared := false // some bucket held two keys at once
	rng := rand.New(rand.NewPCG(3, 4))
	op := new(sharedOp)
	check := func(step int) {
		t.Helper()
		counts := map[uint64]uint32{}
		for k := range c.m {
			counts[c.bucket(k)]++
			if !c.mayHold(k) {
				t.Fatalf("step %d: %s is held, and the filter says it is not", step, k)
			}
		}
		for b := range uint64(64) {
			shared = shared || counts[b] > 1
			bit := c.present[b/64].Load()&(1<<(b%64)) != 0
			if c.counts[b] != counts[b] || bit != (counts[b] != 0) {
				t.Fatalf("step %d: bucket %d count %d bit %v, holding %d keys", step, b, c.counts[b], bit, counts[b])
			}
		}
	}
	for step := range 3000 {
		key := "k" + strconv.Itoa(rng.IntN(40))
		switch rng.IntN(5) {
		case 0, 1:
			refusedOp(op, key, now)
			c.add(op, c.epoch.Load())
			if _, ok := c.m["p:"+key]; !ok {
				t.Fatalf("step %d: %s not remembered", step, key)
			}
		case 2:
			refusedOp(op, key, now)
			at := now
			if rng.IntN(2) == 0 {
				at += int64(2 * time.Hour) // past the refusal's time: dropped
			}
			_, held := c.m["p:"+key]
			if _, ok := c.lookup(op, at); ok != (held && at == now) {
				t.Fatalf("step %d: lookup of %s at +%v: %v, held %v", step, key, time.Duration(at-now), ok, held)
			}
		case 3:
			c.drop([]string{"p:" + key, "p:k" + strconv.Itoa(rng.IntN(40))}, false)
		default:
			if rng.IntN(20) == 0 {
				c.clear()
			}
		}
		check(step)
	}
	if !shared {
		t.Error("no bucket held two keys: the counts were not tested")
	}
}

// publishGate is a go-redis hook that holds every pipeline with a PUBLISH
// until open is closed.
type publishGate struct{ open chan struct{} }

func (publishGate) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (publishGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (g publishGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "publish" {
				<-g.open
				break
			}
		}
		return next(ctx, cmds)
	}
}

// TestSharedSlowPublishHoldsNoRound: an invalidation the store is slow to
// take holds up no decision: the rounds go on while it is being published.
func TestSharedSlowPublishHoldsNoRound(t *testing.T) {
	_, s, client := newSharedMini(t, SharedOptions{})
	gate := publishGate{open: make(chan struct{})}
	client.AddHook(gate)
	startShared(t, s)
	defer close(gate.open)
	s.Invalidate("z")
	select {
	case a := <-throttleAsync(s, "x", clQuota, 1):
		if a.err != nil || a.res.Limited {
			t.Fatalf("x: %+v, want admitted", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a decision waited for the invalidation's publish")
	}
}

// TestSharedRemembersRefusalsOnceSubscribed: until the invalidations'
// subscription has taken effect (its first connection failed here, and
// go-redis makes it again later), what another instance publishes is lost,
// so no refusal is remembered: a key deleted elsewhere is admitted at once.
// Once it has, refusals are remembered again.
func TestSharedRemembersRefusalsOnceSubscribed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// The client's first connection serves every decision; the
	// subscription's is refused, and every later one waits for the gate.
	var dials atomic.Int32
	gate := make(chan struct{})
	var dialer net.Dialer
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch n := dials.Add(1); {
		case n == 2:
			return nil, errors.New("test: dial refused")
		case n > 2:
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return dialer.DialContext(ctx, network, addr)
	}})
	t.Cleanup(func() { client.Close() })
	s := NewShared(client, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: time.Second})
	startShared(t, s)
	opened := false
	defer func() {
		if !opened {
			close(gate)
		}
	}()
	if s.Stats().StoreDown || s.isSubscribed.Load() {
		t.Fatalf("store down %v, subscribed %v: want up, not subscribed", s.Stats().StoreDown, s.isSubscribed.Load())
	}
	b := NewShared(srv.Client(t), SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	startShared(t, b)
	exhaustCL(t, s, "d")
	if remembered(s, "d") {
		t.Fatal("a refusal was remembered before the subscription took effect")
	}
	if _, err := b.Keyspace().Delete(context.Background(), []string{"d"}); err != nil {
		t.Fatal(err)
	}
	if a := wait(t, throttleAsync(s, "d", clQuota, 1)); a.err != nil || a.res.Limited {
		t.Errorf("d after another instance's DEL: %+v, want admitted", a)
	}
	close(gate)
	opened = true
	waitFor(t, "the subscription made", s.isSubscribed.Load)
	exhaustCL(t, s, "e")
	if !remembered(s, "e") {
		t.Error("a refusal was not remembered once the subscription took effect")
	}
}
