package persist

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// newSharedMini returns a miniredis whose clock stands still, and a Shared
// over it (not started) whose clock is miniredis's.
func newSharedMini(t *testing.T, opts SharedOptions) (*miniredis.Miniredis, *Shared, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	now := time.Now().Truncate(time.Millisecond)
	if now.Minute() == 0 {
		// A minute's fixed window then starts with the hour's: the tests
		// that mean a minute's call to start a new count under an hour's
		// limit need another minute.
		now = now.Add(time.Minute)
	}
	m.SetTime(now)
	client := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	if opts.Local == nil {
		opts.Local = engine.New(engine.Options{SweepInterval: -1})
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second // miniredis under -race on a loaded machine
	}
	opts.now = func() int64 { return now.UnixNano() }
	s := NewShared(client, opts)
	t.Cleanup(func() { s.Close() })
	return m, s, client
}

func startShared(t *testing.T, s *Shared) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
}

// answer is one operation's reply.
type answer struct {
	res engine.Result
	d   engine.Decision
	err error
}

// throttleAsync starts a CL call; the channel gets its answer.
func throttleAsync(s *Shared, key string, q engine.GCRAQuota, n int64) <-chan answer {
	ch := make(chan answer, 1)
	s.Throttle([]byte(key), q, n, false, engine.ThrottleFunc(func(r engine.Result, err error) { ch <- answer{res: r, err: err} }))
	return ch
}

func windowAsync(s *Shared, r engine.Rule, n int64) <-chan answer {
	ch := make(chan answer, 1)
	s.ThrottleWindow(r, n, false, func(d engine.Decision, err error) { ch <- answer{d: d, res: d.Seconds(), err: err} })
	return ch
}

func allAsync(s *Shared, rules []engine.Rule, n int64) <-chan answer {
	ch := make(chan answer, 1)
	s.ThrottleAll(rules, n, func(d engine.Decision, err error) { ch <- answer{d: d, res: d.Seconds(), err: err} })
	return ch
}

func wait(t *testing.T, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("no answer within 30s")
	}
	return answer{}
}

var (
	clQuota = engine.GCRAQuota{MaxBurst: 4, Count: 1, Period: 60}
	fwRule  = func(key string, limit int64) engine.Rule {
		return engine.Rule{Key: []byte(key), Family: engine.FamilyFW,
			Window: engine.WindowQuota{Limit: limit, Window: int64(time.Hour)}}
	}
)

// TestSharedCASConflict: a key changed behind Shared's back makes its
// compare-and-set conflict; the op is decided again on the store's value.
func TestSharedCASConflict(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{Prefix: "p:"})
	startShared(t, s)
	a := wait(t, throttleAsync(s, "k", clQuota, 1))
	if a.err != nil || a.res.Limited || a.res.Remaining != 4 {
		t.Fatalf("first call: %+v", a)
	}
	tat1, _ := m.Get("p:k")
	// Another instance admits 3 more: the TAT moves 3 emission intervals on.
	tat, _ := strconv.ParseUint(tat1, 10, 64)
	m.Set("p:k", strconv.FormatUint(tat+3*60e9, 10))
	a = wait(t, throttleAsync(s, "k", clQuota, 1))
	if a.err != nil || a.res.Remaining != 0 {
		t.Fatalf("after another instance's writes: %+v, want remaining 0", a)
	}
	if st := s.Stats(); st.Conflicts != 1 || st.RoundTrips != 3 {
		t.Fatalf("stats %+v, want 1 conflict in 3 round trips", st)
	}
	got, _ := m.Get("p:k")
	if want := strconv.FormatUint(tat+4*60e9, 10); got != want {
		t.Fatalf("stored TAT %s, want %s", got, want)
	}
}

// TestSharedAllRefusedWritesNothing: a THROTTLE.ALL refused by one rule
// writes no key.
func TestSharedAllRefusedWritesNothing(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	full := wait(t, windowAsync(s, fwRule("fw", 2), 2))
	if full.err != nil || full.d.Limited {
		t.Fatalf("filling fw: %+v", full)
	}
	before, _ := m.Get("fw")
	rules := []engine.Rule{{Key: []byte("cl"), Family: engine.FamilyCL, GCRA: clQuota}, fwRule("fw", 2)}
	a := wait(t, allAsync(s, rules, 1))
	if a.err != nil || !a.d.Limited {
		t.Fatalf("THROTTLE.ALL: %+v, want limited", a)
	}
	if m.Exists("cl") {
		t.Fatal("a refused THROTTLE.ALL wrote its CL key")
	}
	if after, _ := m.Get("fw"); after != before {
		t.Fatal("a refused THROTTLE.ALL changed its FW key")
	}
	// Admitted, it writes both.
	rules[1] = fwRule("fw", 3)
	if a = wait(t, allAsync(s, rules, 1)); a.err != nil || a.d.Limited || !m.Exists("cl") {
		t.Fatalf("THROTTLE.ALL admitted: %+v, cl exists %v", a, m.Exists("cl"))
	}
}

// TestSharedChainedOneBatch: ops on one key queued together go in one
// round trip, each decided on the state the one before left, and so do the
// ops on another key.
func TestSharedChainedOneBatch(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	var chs []<-chan answer
	for range 6 {
		chs = append(chs, throttleAsync(s, "k", clQuota, 1)) // queued before Start
	}
	sw := engine.Rule{Key: []byte("sw"), Family: engine.FamilySW, Window: engine.WindowQuota{Limit: 3, Window: int64(time.Minute)}}
	var sws []<-chan answer
	for range 4 {
		sws = append(sws, windowAsync(s, sw, 1))
	}
	startShared(t, s)
	for i, ch := range chs {
		a := wait(t, ch)
		wantLimited, wantRem := i == 5, int64(4-i)
		if i == 5 {
			wantRem = 0
		}
		if a.err != nil || a.res.Limited != wantLimited || a.res.Remaining != wantRem {
			t.Errorf("CL call %d: %+v, want limited %v remaining %d", i, a.res, wantLimited, wantRem)
		}
	}
	for i, ch := range sws {
		if a := wait(t, ch); a.err != nil || a.d.Limited != (i == 3) {
			t.Errorf("SW call %d: %+v", i, a)
		}
	}
	if st := s.Stats(); st.RoundTrips != 1 || st.Decisions != 10 {
		t.Fatalf("stats %+v, want 10 decisions in 1 round trip", st)
	}
	val, _ := m.Get("sw")
	var rec engine.Record
	if err := decodeState(val, &rec); err != nil || len(rec.Log) != 3 {
		t.Fatalf("stored SW %q: %+v %v, want 3 requests", val, rec, err)
	}
}

// TestSharedNoScript: after SCRIPT FLUSH the next call loads the script
// again and succeeds.
func TestSharedNoScript(t *testing.T) {
	_, s, client := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	wait(t, throttleAsync(s, "k", clQuota, 1))
	if err := client.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if a := wait(t, throttleAsync(s, "k", clQuota, 1)); a.err != nil || a.res.Remaining != 3 {
		t.Fatalf("after SCRIPT FLUSH: %+v", a)
	}
	if st := s.Stats(); st.Downs != 0 || st.LocalDecisions != 0 {
		t.Fatalf("stats %+v: NOSCRIPT took the store down", st)
	}
}

// TestSharedWrongType: another application's key, a string or another
// type, gets ErrWrongType and is left alone.
func TestSharedWrongType(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	m.Set("str", "hello")
	m.Lpush("list", "x")
	for _, key := range []string{"str", "list"} {
		if a := wait(t, throttleAsync(s, key, clQuota, 1)); !errors.Is(a.err, engine.ErrWrongType) {
			t.Errorf("%s: %+v, want ErrWrongType", key, a)
		}
		if a := wait(t, windowAsync(s, fwRule(key, 5), 1)); !errors.Is(a.err, engine.ErrWrongType) {
			t.Errorf("%s: %+v, want ErrWrongType", key, a)
		}
		// THROTTLE.ALL names the rule, one rule or several, as in memory.
		var wrong *engine.RuleWrongTypeError
		if a := wait(t, allAsync(s, []engine.Rule{fwRule(key, 5)}, 1)); !errors.As(a.err, &wrong) || wrong.Rule != 0 {
			t.Errorf("%s in THROTTLE.ALL: %+v, want rule 0's RuleWrongTypeError", key, a)
		}
	}
	// A CL key met by an FW rule.
	wait(t, throttleAsync(s, "cl", clQuota, 1))
	if a := wait(t, windowAsync(s, fwRule("cl", 5), 1)); !errors.Is(a.err, engine.ErrWrongType) {
		t.Errorf("cl as fw: %+v, want ErrWrongType", a)
	}
	if v, _ := m.Get("str"); v != "hello" {
		t.Fatalf("str is %q", v)
	}
}

// TestSharedValidation: errors that depend on no key are answered before
// the method returns.
func TestSharedValidation(t *testing.T) {
	_, s, _ := newSharedMini(t, SharedOptions{})
	for _, c := range []struct {
		name string
		ch   <-chan answer
		want error
	}{
		{"zero rate", throttleAsync(s, "k", engine.GCRAQuota{MaxBurst: 1, Count: 0, Period: 1}, 1), engine.ErrZeroRate},
		{"no rules", allAsync(s, nil, 1), engine.ErrNoRules},
		{"duplicate", allAsync(s, []engine.Rule{fwRule("a", 1), fwRule("a", 2)}, 1), engine.ErrDuplicateKey},
	} {
		select {
		case a := <-c.ch:
			if !errors.Is(a.err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, a.err, c.want)
			}
		default:
			t.Errorf("%s: not answered synchronously", c.name)
		}
	}
}

// TestSharedDenyCache: a verified refusal answers the same request again
// without a round trip until retry_after, and Invalidate ends that.
func TestSharedDenyCache(t *testing.T) {
	_, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	exhaustCL(t, s, "k")
	trips := s.Stats().RoundTrips
	ch := throttleAsync(s, "k", clQuota, 2) // larger: refused too
	select {
	case a := <-ch:
		if !a.res.Limited || a.res.RetryAfter != 120 {
			t.Fatalf("deny-cache answer %+v", a.res)
		}
	default:
		t.Fatal("a refused request went to the store")
	}
	if st := s.Stats(); st.RoundTrips != trips || st.DenyCacheHits != 1 {
		t.Fatalf("stats %+v", st)
	}
	s.Invalidate("k")
	wait(t, throttleAsync(s, "k", clQuota, 1))
	if st := s.Stats(); st.RoundTrips == trips || st.DenyCacheHits != 1 {
		t.Fatalf("after Invalidate: stats %+v, want a round trip", st)
	}
}

// TestInvalidationMessage: the message format round-trips.
func TestInvalidationMessage(t *testing.T) {
	_, s, _ := newSharedMini(t, SharedOptions{Prefix: "p:"})
	s.Invalidate("a", "", "b\x00c")
	s.mu.Lock()
	msg := s.publishes[0]
	s.mu.Unlock()
	keys, ok := decodeInvalidation(msg)
	if !ok || len(keys) != 3 || keys[0] != "p:a" || keys[1] != "p:" || keys[2] != "p:b\x00c" {
		t.Fatalf("decoded %q %v", keys, ok)
	}
	if _, ok := decodeInvalidation("\x05ab"); ok {
		t.Fatal("a truncated message decoded")
	}
}

// TestKeySlot checks the hash slot against values Redis gives.
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{"foo": 12182, "bar": 5061, "{user1000}.following": 3443,
		"{user1000}.followers": 3443, "foo{}{bar}": 8363, "foo{{bar}}zap": 4015, "foo{bar}{zap}": 5061} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

// TestSharedNoExpiry: a CL key without an expiry (redis-cell leaves such
// keys) is decided on; a window state without one is not cellserver's
// (ErrWrongType) and is left alone.
func TestSharedNoExpiry(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	m.Set("fw", string([]byte{formatVersion, 'f', 'w', ':', 0, 1}))
	if a := wait(t, windowAsync(s, fwRule("fw", 5), 1)); !errors.Is(a.err, engine.ErrWrongType) {
		t.Fatalf("fw without expiry: %+v", a)
	}
	m.Set("cl", "1")
	if a := wait(t, throttleAsync(s, "cl", clQuota, 1)); a.err != nil || a.res.Remaining != 4 {
		t.Fatalf("cl without expiry: %+v", a)
	}
	if m.TTL("cl") <= 0 {
		t.Fatal("the CL key was written without an expiry")
	}
}

// TestSharedInvalidateAcrossInstances: a DEL through one instance clears
// the key from another instance's deny cache.
func TestSharedInvalidateAcrossInstances(t *testing.T) {
	m, a, b := twoSharedRefused(t)
	m.Del("k")
	b.Invalidate("k")
	waitFor(t, "the deny entry dropped", func() bool { return !remembered(a, "k") })
	if r := wait(t, throttleAsync(a, "k", clQuota, 1)); r.err != nil || r.res.Limited {
		t.Fatalf("after DEL and Invalidate elsewhere: %+v, want admitted", r)
	}
}

// TestSharedInvalidationKeptWhileDown: an invalidation made while the
// instance counts its store as down is published once the store is back,
// not lost: the other instance's remembered refusal goes.
func TestSharedInvalidationKeptWhileDown(t *testing.T) {
	m, a, b := twoSharedRefused(t)
	m.Del("k")
	b.markDown() // its prober finds the store up again probeInterval later
	b.Invalidate("k")
	waitFor(t, "the deny entry dropped once the store is back", func() bool { return !remembered(a, "k") })
	if st := b.Stats(); st.Downs != 1 {
		t.Fatalf("b's stats %+v, want one spell down", st)
	}
}

// TestSharedTimedOutRefundInvalidates: a refund answered by the timeout
// while its round was still on its way, and written by that round, still
// clears the key on the other instances: the store holds it.
func TestSharedTimedOutRefundInvalidates(t *testing.T) {
	var rounds atomic.Int32
	var landed atomic.Bool
	m, a, _ := newSharedMini(t, SharedOptions{Timeout: time.Second, answered: func() {
		// The armed rounds: the first holds the refund in the queue, the
		// second outlives the refund's deadline but not its own.
		switch rounds.Add(-1) {
		case 1:
			time.Sleep(500 * time.Millisecond)
		case 0:
			time.Sleep(600 * time.Millisecond)
			landed.Store(true)
		}
	}})
	startShared(t, a)
	b := startOnMini(t, m)
	exhaustCL(t, b, "k")
	if !remembered(b, "k") {
		t.Fatal("the refusal was not remembered")
	}
	rounds.Store(2)
	first := throttleAsync(a, "o", clQuota, 1)
	refund := throttleAsync(a, "k", clQuota, -1)
	wait(t, first)
	wait(t, refund) // by the timeout, from a's own memory
	waitFor(t, "the refund's round to land", landed.Load)
	waitFor(t, "b's refusal of k dropped", func() bool { return !remembered(b, "k") })
	if st := a.Stats(); st.Timeouts == 0 {
		t.Fatalf("a's stats %+v: the refund did not time out", st)
	}
}

// TestSharedAbandonedRefundInvalidates: a refund whose round outlived its
// own timeout (the round abandoned, the store marked down) may have been
// carried out by the store, and here was: the other instances drop their
// refusals of the key all the same.
func TestSharedAbandonedRefundInvalidates(t *testing.T) {
	var arm, landed atomic.Bool
	m, a, _ := newSharedMini(t, SharedOptions{Timeout: 300 * time.Millisecond, answered: func() {
		if arm.Swap(false) {
			time.Sleep(600 * time.Millisecond) // the store answered; the reply comes late
			landed.Store(true)
		}
	}})
	startShared(t, a)
	b := startOnMini(t, m)
	exhaustCL(t, b, "k")
	if r := wait(t, throttleAsync(a, "k", clQuota, 1)); !r.res.Limited { // a holds k's value
		t.Fatalf("a admitted k: %+v", r)
	}
	before, _ := m.Get("k")
	arm.Store(true)
	wait(t, throttleAsync(a, "k", clQuota, -1)) // from a's own memory, by the timeout
	waitFor(t, "the refund's round to land", landed.Load)
	if after, _ := m.Get("k"); after == before {
		t.Fatalf("the store did not carry the refund out (TAT %s)", after)
	}
	waitFor(t, "b's refusal of k dropped", func() bool { return !remembered(b, "k") })
	if r := wait(t, throttleAsync(b, "k", clQuota, 1)); r.err != nil || r.res.Limited {
		t.Errorf("b after the refund: %+v; the store gave one back", r)
	}
}

// TestSharedExpireErrorInvalidates: a CL.THROTTLE whose increment
// overflows answers an error and deletes its key, in memory (as redis-cell
// does) and in the store; every instance drops its refusal of the key, as
// for a DEL.
func TestSharedExpireErrorInvalidates(t *testing.T) {
	const huge = 200_000_000 // 60 s a request, times huge, overflows
	mem := engine.New(engine.Options{SweepInterval: -1})
	for range 6 {
		mem.Throttle(nil, []byte("k"), clQuota, 1)
	}
	if _, err := mem.Throttle(nil, []byte("k"), clQuota, huge); err == nil {
		t.Fatal("in memory, the overflowing increment gave no error")
	}
	if r, err := mem.Throttle(nil, []byte("k"), clQuota, 1); err != nil || r.Limited {
		t.Fatalf("in memory, the key was not deleted: %+v, %v", r, err)
	}
	m, a, b := twoSharedMini(t)
	exhaustCL(t, a, "k")
	if r := wait(t, throttleAsync(b, "k", clQuota, 1)); !r.res.Limited {
		t.Fatalf("b admitted k: %+v", r)
	}
	if r := wait(t, throttleAsync(a, "k", clQuota, huge)); r.err == nil {
		t.Fatalf("the overflowing increment gave no error: %+v", r)
	}
	if m.Exists("k") {
		t.Fatal("the store's key was not deleted")
	}
	for _, s := range []*Shared{a, b} {
		waitFor(t, "the refusal of k dropped", func() bool { return !remembered(s, "k") })
		if r := wait(t, throttleAsync(s, "k", clQuota, 1)); r.err != nil || r.res.Limited {
			t.Errorf("after the key's deletion: %+v; the store admits", r)
		}
	}
}

// TestSharedResubscribeDropsAll: the subscription's connection dropped and
// made again may have missed invalidations: every remembered refusal goes.
func TestSharedResubscribeDropsAll(t *testing.T) {
	srv := redistest.Start(t)
	s := NewShared(srv.Client(t), SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	startShared(t, s)
	exhaustCL(t, s, "k")
	if !remembered(s, "k") {
		t.Fatal("the refusal was not remembered")
	}
	if err := srv.Client(t).Do(context.Background(), "client", "kill", "type", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deny entry dropped on subscribing again", func() bool { return !remembered(s, "k") })
}

// TestSharedDenyCacheRefund: a refund (CL.THROTTLE with a negative
// quantity) makes a key laxer, so no instance refuses it from a remembered
// refusal afterwards: not the one that refunded, not another.
func TestSharedDenyCacheRefund(t *testing.T) {
	_, a, b := twoSharedMini(t)
	for range 5 {
		wait(t, throttleAsync(a, "k", clQuota, 1))
	}
	for _, s := range []*Shared{a, b} {
		if r := wait(t, throttleAsync(s, "k", clQuota, 1)); !r.res.Limited {
			t.Fatalf("the 6th call was admitted: %+v", r)
		}
	}
	// a refunds one request: a's own remembered refusal goes at once, b's
	// when the invalidation arrives.
	if r := wait(t, throttleAsync(a, "k", clQuota, -1)); r.err != nil {
		t.Fatalf("refund: %+v", r)
	}
	waitFor(t, "b's deny entry dropped", func() bool { return !remembered(b, "k") })
	if r := wait(t, throttleAsync(b, "k", clQuota, 1)); r.err != nil || r.res.Limited {
		t.Fatalf("after a refund elsewhere: %+v, want admitted", r)
	}
	if r := wait(t, throttleAsync(a, "k", clQuota, -1)); r.err != nil {
		t.Fatalf("second refund: %+v", r)
	}
	if r := wait(t, throttleAsync(a, "k", clQuota, 1)); r.err != nil || r.res.Limited {
		t.Fatalf("after its own refund: %+v, want admitted", r)
	}
}

// twoSharedMini returns two started instances on one miniredis.
func twoSharedMini(t *testing.T) (m *miniredis.Miniredis, a, b *Shared) {
	t.Helper()
	m, a, _ = newSharedMini(t, SharedOptions{})
	startShared(t, a)
	return m, a, startOnMini(t, m)
}

// startOnMini starts another instance on m, a client of its own.
func startOnMini(t *testing.T, m *miniredis.Miniredis) *Shared {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { client.Close() })
	s := NewShared(client, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	startShared(t, s)
	return s
}

// twoSharedRefused is twoSharedMini with the key "k" refused on a, and the
// refusal remembered.
func twoSharedRefused(t *testing.T) (m *miniredis.Miniredis, a, b *Shared) {
	t.Helper()
	m, a, b = twoSharedMini(t)
	exhaustCL(t, a, "k")
	if !remembered(a, "k") {
		t.Fatal("the refusal was not remembered")
	}
	return m, a, b
}

// exhaustCL spends key's clQuota on s: five calls admitted, the sixth
// refused (and remembered by the deny cache).
func exhaustCL(t *testing.T, s *Shared, key string) {
	t.Helper()
	for i := range 5 {
		if a := wait(t, throttleAsync(s, key, clQuota, 1)); a.err != nil || a.res.Limited {
			t.Fatalf("call %d refused: %+v", i+1, a)
		}
	}
	if a := wait(t, throttleAsync(s, key, clQuota, 1)); !a.res.Limited {
		t.Fatalf("6th call admitted: %+v", a)
	}
}

// remembered reports whether s's deny cache holds a refusal of key.
func remembered(s *Shared, key string) bool {
	s.deny.mu.Lock()
	defer s.deny.mu.Unlock()
	_, ok := s.deny.m[key]
	return ok
}

// refuseThenDeleteElsewhere has s remember a refusal of the CL key d, and
// then deletes d through another instance on srv, which publishes the
// invalidation: the caller checks what s makes of it.
func refuseThenDeleteElsewhere(t *testing.T, s *Shared, srv *redistest.Server) {
	t.Helper()
	b := NewShared(srv.Client(t), SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	startShared(t, b)
	exhaustCL(t, s, "d")
	if !remembered(s, "d") {
		t.Fatal("the refusal was not remembered")
	}
	if _, err := b.Keyspace().Delete(context.Background(), []string{"d"}); err != nil {
		t.Fatal(err)
	}
}

// TestSharedAllForeignKeyErrorOrder: a THROTTLE.ALL whose second key holds
// another application's value answers the first rule's own error first, as
// the engine decides rules in order (a refund past a CL key's state).
func TestSharedAllForeignKeyErrorOrder(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	m.Lpush("list", "x")
	rules := []engine.Rule{
		{Key: []byte("cl"), Family: engine.FamilyCL, GCRA: engine.GCRAQuota{MaxBurst: 0, Count: 1, Period: 1}},
		fwRule("list", 5),
	}
	want := func() error {
		e := engine.New(engine.Options{SweepInterval: -1})
		defer e.Close()
		_, err := e.ThrottleAll(nil, rules[:1], -1)
		return err
	}()
	if a := wait(t, allAsync(s, rules, -1)); a.err == nil || a.err.Error() != want.Error() {
		t.Fatalf("%+v, want the first rule's error %v", a, want)
	}
	if a := wait(t, allAsync(s, rules, 1)); !errors.Is(a.err, engine.ErrWrongType) {
		t.Fatalf("%+v, want the second rule's wrong type", a)
	}
}

// TestSharedAllEachNegativeQuantity: ThrottleAllEach takes nothing back, so
// a negative quantity is an error, answered at once, and writes nothing.
func TestSharedAllEachNegativeQuantity(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	rules := []engine.Rule{{Key: []byte("a"), Family: engine.FamilyCL, GCRA: clQuota}, fwRule("b", 5)}
	ch := make(chan error, 1)
	s.ThrottleAllEach(rules, []int64{1, -1}, func(_ engine.Decision, _ []engine.Decision, err error) { ch <- err })
	if err := <-ch; !errors.Is(err, engine.ErrNegativeQuantity) {
		t.Fatalf("error %v, want ErrNegativeQuantity", err)
	}
	if keys := m.Keys(); len(keys) != 0 {
		t.Fatalf("the store holds %v, want nothing", keys)
	}
}

// TestSharedAllRefusalNotRemembered: the deny cache answers commands of one
// rule only, so a refused THROTTLE.ALL or ThrottleAllEach leaves nothing
// in it; a ThrottleAllEach of no rules is ErrNoRules, as in the engine.
func TestSharedAllRefusalNotRemembered(t *testing.T) {
	_, s, _ := newSharedMini(t, SharedOptions{})
	startShared(t, s)
	rule := []engine.Rule{fwRule("all", 1)}
	wait(t, allAsync(s, rule, 1))
	if a := wait(t, allAsync(s, rule, 1)); a.err != nil || !a.d.Limited {
		t.Fatalf("2nd THROTTLE.ALL: %+v, want refused", a)
	}
	if remembered(s, "all") {
		t.Error("a refused THROTTLE.ALL is in the deny cache, which never answers one")
	}
	ch := make(chan error, 1)
	s.ThrottleAllEach(nil, nil, func(_ engine.Decision, _ []engine.Decision, err error) { ch <- err })
	if err := <-ch; !errors.Is(err, engine.ErrNoRules) {
		t.Errorf("no rules: %v, want ErrNoRules", err)
	}
}

// TestSharedCrossSlotQueuedBeforeCluster: a THROTTLE.ALL across hash slots
// queued while the store was taken for a single Redis, and decided once it
// turned out to be a Redis Cluster (Shared.ask), is refused with CROSSSLOT
// and writes nothing, as one queued after.
func TestSharedCrossSlotQueuedBeforeCluster(t *testing.T) {
	m, s, _ := newSharedMini(t, SharedOptions{})
	if keySlot("a") == keySlot("b") {
		t.Fatal("a and b share a hash slot")
	}
	ch := allAsync(s, []engine.Rule{fwRule("a", 5), fwRule("b", 5)}, 1) // queued; the batcher is not running yet
	s.mode.Store(&storeMode{client: s.Client(), cluster: true})
	startShared(t, s)
	if a := wait(t, ch); !errors.Is(a.err, ErrCrossSlot) {
		t.Errorf("THROTTLE.ALL across slots queued before the store was known a cluster: %+v, want CROSSSLOT", a)
	}
	if keys := m.Keys(); len(keys) != 0 {
		t.Errorf("the store holds %v, want nothing written", keys)
	}
}

// TestSharedProbesTouchNoKey: the prober's writes (whether the store takes
// writes, whether it has SET IFEQ) name a key of the instance's own, and
// leave every key a client named as it was: a CL key named as the probes'
// keys once were, among them.
func TestSharedProbesTouchNoKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := NewShared(rdb, SharedOptions{Local: engine.New(engine.Options{SweepInterval: -1}), Timeout: 5 * time.Second})
	startShared(t, s)
	for _, key := range []string{"cellserver:write-probe", "cellserver:cas-probe"} {
		if a := wait(t, throttleAsync(s, key, clQuota, 1)); a.err != nil {
			t.Fatal(a.err)
		}
	}
	before, _ := rdb.MGet(ctx, "cellserver:write-probe", "cellserver:cas-probe").Result()
	if err := s.probeWrite(ctx); err != nil {
		t.Fatal(err)
	}
	s.probeNative(ctx)
	after, _ := rdb.MGet(ctx, "cellserver:write-probe", "cellserver:cas-probe").Result()
	if !slices.Equal(before, after) {
		t.Errorf("the probes changed clients' keys: %v, then %v", before, after)
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 2 {
		t.Errorf("the store holds %d keys, want the 2 limits: the probes wrote one", n)
	}
}
