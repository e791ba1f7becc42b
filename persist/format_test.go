package persist

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
	"github.com/cellserver/cellserver/persist/redistest"
	"github.com/redis/go-redis/v9"
)

// encode is encodeState into a string, failing the test for a family
// without a format.
func encode(t testing.TB, rec engine.Record) string {
	t.Helper()
	b, ok := encodeState(nil, &rec)
	if !ok {
		t.Fatalf("no format for %+v", rec)
	}
	return string(b)
}

// decode is decodeState into a fresh record.
func decode(val string) (engine.Record, error) {
	var rec engine.Record
	err := decodeState(val, &rec)
	return rec, err
}

// TestFormatDocumentedExamples: the package doc's examples, byte for byte.
func TestFormatDocumentedExamples(t *testing.T) {
	const s = int64(1_795_336_190) * 1e9
	swc := engine.Record{Family: engine.FamilySWC, Start: s, Cur: 7, Prev: 12}
	if got, want := encode(t, swc), "\x01swc:\x80\xb0\xd3\x95\x96\xb0\xa8\xea1\a\x0c"; got != want || len(got) != 16 {
		t.Errorf("SWC example = %q, want %q", got, want)
	}
	sw := engine.Record{Family: engine.FamilySW, Log: []int64{s, s + 10e6, s + 260e6}, Quantities: []uint32{1, 1, 5}}
	if got, want := encode(t, sw), "\x01sw:\x03\x80\xb0\xd3\x95\x96\xb0\xa8\xea1\x01\x80\xda\xc4\t\x01\x80\xca\xb5\xee\x01\x05"; got != want || len(got) != 26 {
		t.Errorf("SW example = %q, want %q", got, want)
	}
	fw := engine.Record{Family: engine.FamilyFW, Start: s, Cur: 300}
	if got, want := encode(t, fw), "\x01fw:\x80\xb0\xd3\x95\x96\xb0\xa8\xea1\xac\x02"; got != want {
		t.Errorf("FW = %q, want %q", got, want)
	}
}

// TestFormatRoundTrip: every family's state, extremes included, decodes to
// what was encoded.
func TestFormatRoundTrip(t *testing.T) {
	recs := []engine.Record{
		{Family: engine.FamilyFW, Start: 0, Cur: 0},
		{Family: engine.FamilyFW, Start: math.MinInt64, Cur: math.MaxUint32},
		{Family: engine.FamilySWC, Start: math.MaxInt64, Cur: math.MaxUint32, Prev: math.MaxUint32},
		{Family: engine.FamilySWC, Start: -250e6, Cur: 1, Prev: 0},
		{Family: engine.FamilySW, Log: []int64{1}, Quantities: []uint32{1}},
		{Family: engine.FamilyLB, Tail: 0},
		{Family: engine.FamilyLB, Tail: math.MaxInt64},
		{Family: engine.FamilyLB, Tail: math.MinInt64},
		{Family: engine.FamilyLB, Tail: 1_795_336_190_123_456_789},
		// Times that go back (a wall clock stepped back) and wrap.
		{Family: engine.FamilySW, Log: []int64{math.MaxInt64, math.MinInt64, 0, -5, -5}, Quantities: []uint32{math.MaxUint32, 1, 2, 3, 4}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	big := engine.Record{Family: engine.FamilySW}
	at := time.Now().UnixNano()
	for range 10_000 {
		at += rng.Int64N(int64(time.Second))
		big.Log = append(big.Log, at)
		big.Quantities = append(big.Quantities, 1+uint32(rng.IntN(3)))
	}
	recs = append(recs, big)
	for _, rec := range recs {
		val := encode(t, rec)
		got, err := decode(val)
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Errorf("%q decodes to %+v, %v; want %+v", val[:min(len(val), 40)], got, err, rec)
		}
	}
	t.Logf("an SW log of 10,000 requests up to 1s apart: %d bytes (%.1f a request)",
		len(encode(t, big)), float64(len(encode(t, big)))/10_000)
}

// TestFormatRejectsMalformed: anything that is not exactly a state in the
// format is refused, and a value never makes the decoder allocate more than
// its own length justifies.
func TestFormatRejectsMalformed(t *testing.T) {
	good := []string{
		encode(t, engine.Record{Family: engine.FamilyFW, Start: 12345, Cur: 2}),
		encode(t, engine.Record{Family: engine.FamilySWC, Start: 12345, Cur: 2, Prev: 3}),
		encode(t, engine.Record{Family: engine.FamilySW, Log: []int64{5, 6, 7}, Quantities: []uint32{1, 2, 300}}),
		encode(t, engine.Record{Family: engine.FamilyLB, Tail: 1_795_336_190_123_456_789}),
	}
	var bad []string
	for _, g := range good {
		for i := range len(g) { // every truncation
			bad = append(bad, g[:i])
		}
		bad = append(bad, g+"\x00")                     // trailing bytes
		bad = append(bad, "\x02"+g[1:])                 // another version
		bad = append(bad, strings.ToUpper(g[:4])+g[4:]) // another tag
	}
	bad = append(bad,
		"",
		"\x01",
		"\x01sw",
		"\x01xx:\x00\x00",
		"\x01fw:\x00\x80\x80\x80\x80\x10",      // a count of 2^32
		"\x01swc:\x00\x00\xff\xff\xff\xff\x1f", // a previous count above 2^32
		"\x01sw:\x00",                          // no requests
		"\x01sw:\x01\x02\x00",                  // a quantity of 0
		"\x01sw:\x02\x02\x01",                  // fewer requests than the count
		"\x01fw:\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00", // a varint over 64 bits
	)
	for _, b := range bad {
		if rec, err := decode(b); err == nil {
			t.Errorf("%q decoded to %+v", b, rec)
		}
	}
	// A count claiming a billion requests in a few bytes allocates nothing
	// for them.
	claim := "\x01sw:\x80\x94\xeb\xdc\x03\x02\x01\x02\x01"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		if _, err := decode(claim); err == nil {
			t.Fatal("a billion claimed, two given: decoded")
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64*1024 {
		t.Errorf("decoding a lying count allocated %d bytes", n)
	}
}

// FuzzDecodeState: no input panics the decoder, and whatever it accepts
// encodes back to a value that decodes to the same state.
func FuzzDecodeState(f *testing.F) {
	f.Add("\x01swc:\x80\xb0\xd3\x95\x96\xb0\xa8\xea1\a\x0c")
	f.Add("\x01sw:\x03\x80\xb0\xd3\x95\x96\xb0\xa8\xea1\x01\x80\xda\xc4\t\x01\x80\xca\xb5\xee\x01\x05")
	f.Add("\x01fw:\x00\x00")
	f.Add("\x01sw:\x80\x94\xeb\xdc\x03\x02\x01")
	f.Fuzz(func(t *testing.T, val string) {
		rec, err := decode(val)
		if err != nil {
			return
		}
		again, err := decode(encode(t, rec))
		if err != nil || !reflect.DeepEqual(again, rec) {
			t.Errorf("%q: %+v, re-encoded: %+v, %v", val, rec, again, err)
		}
	})
}

// windowRecords returns one record of each family, expiring after ttl.
func windowRecords(nowMs int64, ttl int64) []engine.Record {
	now := nowMs * 1e6
	return []engine.Record{
		{Key: "cl", Family: engine.FamilyCL, TAT: uint64(now) + 2e9, ExpireAtMs: nowMs + ttl},
		{Key: "fw", Family: engine.FamilyFW, Start: now - now%60e9, Cur: 17, ExpireAtMs: nowMs + ttl},
		{Key: "swc", Family: engine.FamilySWC, Start: now - now%60e9, Cur: 3, Prev: 99, ExpireAtMs: nowMs + ttl},
		{Key: "sw", Family: engine.FamilySW, Log: []int64{now - 5e9, now - 5e9, now - 1, now},
			Quantities: []uint32{1, 4, 1, 2}, ExpireAtMs: nowMs + ttl},
		{Key: "sw\x00bin\xff", Family: engine.FamilySW, Log: []int64{now}, Quantities: []uint32{1}, ExpireAtMs: nowMs + ttl},
		{Key: "lb", Family: engine.FamilyLB, Tail: now + 3e9, ExpireAtMs: nowMs + ttl},
	}
}

// TestSaveLoadWindowFamilies: each family round-trips through miniredis
// under its own name, with its expiry, CL still in redis-cell's format.
func TestSaveLoadWindowFamilies(t *testing.T) {
	m, r := newMini(t, "p:")
	nowMs := r.now().UnixMilli()
	recs := windowRecords(nowMs, 30_000)
	if err := r.Save(context.Background(), recs); err != nil {
		t.Fatalf("Save: %v", err)
	}
	for _, rec := range recs {
		got, err := m.Get("p:" + rec.Key)
		if err != nil {
			t.Fatalf("GET %q: %v", rec.Key, err)
		}
		want := strconv.FormatUint(rec.TAT, 10)
		if rec.Family != engine.FamilyCL {
			want = encode(t, rec)
		}
		if got != want {
			t.Errorf("GET %q = %q, want %q", rec.Key, got, want)
		}
		if ttl := m.TTL("p:" + rec.Key).Milliseconds(); ttl != 30_000 {
			t.Errorf("TTL %q = %dms, want 30000", rec.Key, ttl)
		}
	}
	got := loadAll(t, r)
	for _, rec := range recs {
		if !reflect.DeepEqual(got[rec.Key], rec) {
			t.Errorf("loaded %q = %+v, want %+v", rec.Key, got[rec.Key], rec)
		}
	}
	if len(got) != len(recs) || r.Skipped() != 0 {
		t.Errorf("loaded %d records, skipped %d; want %d and 0", len(got), r.Skipped(), len(recs))
	}
	// A deleted record of any family is a DEL.
	if err := r.Save(context.Background(), []engine.Record{{Key: "sw", Deleted: true}}); err != nil {
		t.Fatal(err)
	}
	if m.Exists("p:sw") {
		t.Error("a deleted SW key is still there")
	}
}

// TestLoadSkipsMalformedStates: a value in the format that does not decode,
// or a state without an expiry, is skipped and counted; the rest loads.
func TestLoadSkipsMalformedStates(t *testing.T) {
	m, r := newMini(t, "")
	nowMs := r.now().UnixMilli()
	good := windowRecords(nowMs, 10_000)[1] // fw
	if err := r.Save(context.Background(), []engine.Record{good}); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"truncated": encode(t, good)[:5],
		"version2":  "\x02fw:\x00\x00",
		"unknown":   "\x01zz:\x00\x00",
		"trailing":  encode(t, good) + "x",
	} {
		m.Set(k, v)
		m.SetTTL(k, time.Minute)
	}
	m.Set("no-expiry", encode(t, good))
	got := loadAll(t, r)
	if len(got) != 1 || !reflect.DeepEqual(got["fw"], good) {
		t.Errorf("Load = %+v, want only fw", got)
	}
	if n := r.Skipped(); n != 5 {
		t.Errorf("Skipped = %d, want 5", n)
	}
}

// hitEveryFamily spends part of one key of each family on e, at the
// engine's clock, moving it on between hits; it returns the rules.
func hitEveryFamily(t *testing.T, e *engine.Engine, advance func(time.Duration)) []engine.Rule {
	t.Helper()
	q := engine.WindowQuota{Limit: 20, Window: int64(time.Minute)}
	rules := []engine.Rule{
		{Key: []byte("cl"), Family: engine.FamilyCL, GCRA: engine.GCRAQuota{MaxBurst: 19, Count: 20, Period: 60}},
		{Key: []byte("sw"), Family: engine.FamilySW, Window: q},
		{Key: []byte("swc"), Family: engine.FamilySWC, Window: q},
		{Key: []byte("fw"), Family: engine.FamilyFW, Window: q},
		{Key: []byte("lb"), Family: engine.FamilyLB, Leaky: engine.LeakyQuota{Count: 20, Period: int64(time.Minute), MaxWait: int64(2 * time.Minute)}},
	}
	for i := range 12 {
		for _, r := range rules {
			if _, err := throttleOne(e, r, int64(1+i%3)); err != nil {
				t.Fatal(err)
			}
		}
		advance(7*time.Second + 123*time.Microsecond)
	}
	return rules
}

// peeked is a rule's answer to a peek, and its key's PTTL.
type peeked struct {
	key                          string
	remaining, retry, reset, ttl int64
}

// peeks peeks at each rule.
func peeks(t *testing.T, e *engine.Engine, rules []engine.Rule) []peeked {
	t.Helper()
	var out []peeked
	for _, r := range rules {
		d, err := throttleOne(e, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, peeked{string(r.Key), d.Remaining, d.RetryAfter, d.ResetAfter, e.PTTL(nil, r.Key)})
	}
	return out
}

// restartThrough writes an engine's keys of every family through a Writer
// to the backing store b, stops, and loads them into a fresh engine at the
// same instant: every key answers as it did (remaining, retry_after and
// reset_after to the nanosecond), and its PTTL is within ttlSlack ms (0
// when both clocks stand still).
func restartThrough(t *testing.T, b Backing, now time.Time, ttlSlack int64) {
	t.Helper()
	// Start 5s into the minute after now's, so that the trace's buckets
	// fall the same way on every run (and the keys' absolute expiries stay
	// ahead of a real server's clock).
	c := engine.NewManualClock(now.Truncate(time.Minute).Add(time.Minute + 5*time.Second))
	clock, advance := c.Now, c.Advance
	e1 := engine.New(engine.Options{SweepInterval: -1, TrackChanges: true, Now: clock})
	defer e1.Close()
	w1 := New(e1, b, Options{FlushInterval: time.Hour})
	if err := w1.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	w1.Start()
	rules := hitEveryFamily(t, e1, advance)
	before := peeks(t, e1, rules)
	if err := w1.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}

	e2 := engine.New(engine.Options{SweepInterval: -1, TrackChanges: true, Now: clock})
	defer e2.Close()
	w2 := New(e2, b, Options{})
	if err := w2.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := w2.Stats(); s.LoadedKeys != int64(len(rules)) || s.SkippedKeys != 0 {
		t.Errorf("loaded %d keys, skipped %d; want %d and 0", s.LoadedKeys, s.SkippedKeys, len(rules))
	}
	after := peeks(t, e2, rules)
	for i := range after {
		a, b := after[i], before[i]
		if a.remaining != b.remaining || a.retry != b.retry || a.reset != b.reset || a.ttl < b.ttl || a.ttl > b.ttl+ttlSlack {
			t.Errorf("after the restart %+v, before %+v", a, b)
		}
	}
	t.Logf("before and after the restart: %+v", before)
	// Both go on alike.
	for range 3 {
		advance(11 * time.Second)
		for _, r := range rules {
			d1, _ := throttleOne(e1, r, 2)
			d2, _ := throttleOne(e2, r, 2)
			if d1 != d2 {
				t.Errorf("%s: %+v after the restart, %+v without", r.Key, d2, d1)
			}
		}
	}
}

// TestRestartKeepsEveryFamily: through miniredis.
func TestRestartKeepsEveryFamily(t *testing.T) {
	_, r := newMini(t, "")
	restartThrough(t, r, r.now(), 0)
}

// TestRestartKeepsEveryFamilyRealRedis: through a real redis-server.
func TestRestartKeepsEveryFamilyRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { client.Close() })
	// The loader turns the server's PTTL into an instant by its own clock,
	// read a moment later: the expiry may come back a few ms later.
	restartThrough(t, NewRedis(client, "cellserver:"), time.Now(), 5)
}

// throttleOne decides one rule of any family: through ThrottleAll, which
// decides a CL rule as THROTTLE.ALL does, except for an LB rule, which
// ThrottleAll refuses.
func throttleOne(e *engine.Engine, r engine.Rule, qty int64) (engine.Decision, error) {
	if r.Family == engine.FamilyLB {
		return e.ThrottleWindow(nil, r, qty)
	}
	return e.ThrottleAll(nil, []engine.Rule{r}, qty)
}

// TestParseValue: a stored value reads as cellserver's format when it
// starts with the version byte, as redis-cell's decimal TAT otherwise, and
// as neither (another application's value) when it is not one of them.
func TestParseValue(t *testing.T) {
	fw := engine.Record{Family: engine.FamilyFW, Start: 1_795_336_190_000_000_000, Cur: 3}
	var rec engine.Record
	if !parseValue("1795336190123456789", &rec) || rec.Family != engine.FamilyCL || rec.TAT != 1795336190123456789 {
		t.Errorf("a TAT read as %+v", rec)
	}
	rec = engine.Record{}
	if !parseValue(encode(t, fw), &rec) || !reflect.DeepEqual(rec, fw) {
		t.Errorf("an FW state read as %+v, want %+v", rec, fw)
	}
	for _, v := range []string{"", "abc", "-5", "12 ", "99999999999999999999", "\x01fw:", "\x02fw:\x00\x01", encode(t, fw) + "x"} {
		rec = engine.Record{}
		if parseValue(v, &rec) {
			t.Errorf("parseValue(%q) = true (%+v), want false", v, rec)
		}
	}
}
