package engine

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func newTestEngine(t testing.TB) (*Engine, *ManualClock) {
	t.Helper()
	c := NewManualClock(time.Unix(0, start))
	e := New(Options{Now: c.Now, SweepInterval: -1, Shards: 4})
	t.Cleanup(e.Close)
	return e, c
}

var quota = GCRAQuota{MaxBurst: 15, Count: 30, Period: 60}

func TestThrottleStoresTATAndExpiry(t *testing.T) {
	e, _ := newTestEngine(t)
	if _, err := e.Throttle(nil, []byte("user123"), quota, 1); err != nil {
		t.Fatal(err)
	}
	v, ok := e.Get(nil, []byte("user123"))
	if !ok || v.Family != FamilyCL || v.TAT != uint64(start+2_000_000_000) {
		t.Fatalf("Get = %+v %v", v, ok)
	}
	if got := e.PTTL(nil, []byte("user123")); got != 2000 {
		t.Errorf("PTTL = %d, want 2000", got)
	}
	if got := e.PTTL(nil, []byte("missing")); got != -2 {
		t.Errorf("PTTL(missing) = %d, want -2", got)
	}
}

// TestExpiredKeyInvisible: a key is gone the millisecond after its expiry,
// swept or not, and the sweep then removes it.
func TestExpiredKeyInvisible(t *testing.T) {
	e, c := newTestEngine(t)
	key := []byte("k")
	e.Throttle(nil, key, quota, 1) // PTTL 2000
	c.Advance(2000 * time.Millisecond)
	if _, ok := e.Get(nil, key); !ok {
		t.Fatal("gone while PTTL is 0; Redis keeps it for that millisecond")
	}
	c.Advance(time.Millisecond)
	if _, ok := e.Get(nil, []byte("k")); ok {
		t.Fatal("expired key still visible")
	}
	if n := e.Len(nil); n != 0 {
		t.Errorf("Len = %d, want 0", n)
	}
	// A second key expires without being read: the sweep removes it.
	e.Throttle(nil, []byte("k2"), quota, 1)
	c.Advance(3 * time.Second)
	if n := e.Sweep(); n != 1 {
		t.Errorf("Sweep removed %d, want 1", n)
	}
	if got := e.ExpiredKeys(); got != 2 { // one found on access, one swept
		t.Errorf("ExpiredKeys = %d, want 2", got)
	}
}

// TestSweepRefilesExtendedKeys: a key whose life was extended after it was
// filed is refiled by the sweep, not removed.
func TestSweepRefilesExtendedKeys(t *testing.T) {
	e, c := newTestEngine(t)
	key := []byte("k")
	e.Throttle(nil, key, quota, 1) // expires in 2s
	c.Advance(1500 * time.Millisecond)
	e.Throttle(nil, key, quota, 1) // now expires 2.5s from here
	c.Advance(1000 * time.Millisecond)
	if n := e.Sweep(); n != 0 {
		t.Fatalf("Sweep removed %d live keys", n)
	}
	if _, ok := e.Get(nil, key); !ok {
		t.Fatal("live key lost")
	}
	c.Advance(2 * time.Second)
	if n := e.Sweep(); n != 1 {
		t.Fatalf("Sweep removed %d, want 1", n)
	}
}

// TestExpiryMovesEarlier: a negative quantity moves the TAT back; the index
// must follow so the key still expires on time.
func TestExpiryMovesEarlier(t *testing.T) {
	e, c := newTestEngine(t)
	key := []byte("k")
	e.Throttle(nil, key, quota, 3) // TAT +6s
	if _, err := e.Throttle(nil, key, quota, -2); err != nil {
		t.Fatal(err) // TAT +2s
	}
	if got := e.PTTL(nil, key); got != 2000 {
		t.Fatalf("PTTL = %d, want 2000", got)
	}
	c.Advance(2001 * time.Millisecond)
	if n := e.Sweep(); n != 1 {
		t.Errorf("Sweep removed %d, want 1", n)
	}
}

// TestErrorWritesNothing: an error leaves no key behind (redis-cell writes
// the value and leaves it without expiry).
func TestErrorWritesNothing(t *testing.T) {
	e, _ := newTestEngine(t)
	if _, err := e.Throttle(nil, []byte("q"), quota, -1); err != ErrExpire {
		t.Fatalf("err = %v, want ErrExpire", err)
	}
	if _, err := e.Throttle(nil, []byte("z"), GCRAQuota{15, 0, 60}, 1); err != ErrZeroRate {
		t.Fatalf("err = %v, want ErrZeroRate", err)
	}
	if n := e.Len(nil); n != 0 {
		t.Errorf("Len = %d after errors, want 0", n)
	}
}

func TestDeleteFlushScan(t *testing.T) {
	e, _ := newTestEngine(t)
	for i := 0; i < 100; i++ {
		e.Throttle(nil, []byte(fmt.Sprint("key", i)), quota, 1)
	}
	if !e.Delete(nil, []byte("key7")) || e.Delete(nil, []byte("key7")) {
		t.Error("Delete should report true then false")
	}
	seen := map[string]int{}
	cursor, calls := uint64(0), 0
	for {
		cursor = e.Scan(nil, cursor, 5, func(k string, f Family) { seen[k]++ })
		calls++
		if cursor == 0 {
			break
		}
	}
	if len(seen) != 99 {
		t.Errorf("Scan saw %d keys, want 99", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("Scan saw %s %d times", k, n)
		}
	}
	if calls < 2 {
		t.Errorf("Scan finished in %d calls; COUNT 5 should take several", calls)
	}
	if n := e.Flush(nil); n != 99 {
		t.Errorf("Flush = %d, want 99", n)
	}
	if n := e.Len(nil); n != 0 {
		t.Errorf("Len after Flush = %d", n)
	}
}

// TestTxnAtomic: a transaction's shards are held until End; another client's
// call on the same key waits for it.
func TestTxnAtomic(t *testing.T) {
	e, _ := newTestEngine(t)
	key := []byte("shared")
	tx := e.Begin([][]byte{key, []byte("other")}, false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Throttle(nil, key, quota, 1)
	}()
	r1, _ := e.Throttle(tx, key, quota, 1)
	r2, _ := e.Throttle(tx, key, quota, 1)
	tx.End()
	<-done
	if r1.Remaining != 15 || r2.Remaining != 14 {
		t.Errorf("inside the transaction: remaining %d then %d, want 15 then 14", r1.Remaining, r2.Remaining)
	}
	r3, _ := e.Throttle(nil, key, quota, 0)
	if r3.Remaining != 13 {
		t.Errorf("after: remaining %d, want 13", r3.Remaining)
	}
}

func TestTxnUndeclaredKeyPanics(t *testing.T) {
	e, _ := newTestEngine(t)
	var a, b []byte
	for i := 0; ; i++ { // find two keys in different shards
		a, b = []byte("a"), []byte(fmt.Sprint("b", i))
		if e.shardIndex(a) != e.shardIndex(b) {
			break
		}
	}
	tx := e.Begin([][]byte{a}, false)
	defer tx.End()
	defer func() {
		if recover() == nil {
			t.Error("no panic for a key outside the transaction")
		}
	}()
	e.Throttle(tx, b, quota, 1)
}

// TestConcurrentThrottle: many goroutines on few keys never admit more than
// the burst allows (run with -race).
func TestConcurrentThrottle(t *testing.T) {
	e, _ := newTestEngine(t)
	q := GCRAQuota{MaxBurst: 99, Count: 1, Period: 3600}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := map[string]int{}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				k := fmt.Sprint("k", i%4)
				r, err := e.Throttle(nil, []byte(k), q, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if !r.Limited {
					mu.Lock()
					admitted[k]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for k, n := range admitted {
		if n != 100 {
			t.Errorf("%s admitted %d, want exactly 100 (the burst) on a frozen clock", k, n)
		}
	}
}

func TestBackgroundSweepStops(t *testing.T) {
	e := New(Options{SweepInterval: time.Millisecond})
	e.Throttle(nil, []byte("k"), quota, 1)
	e.Close()
	// Close waits for the sweep: its goroutine has ended when Close returns.
	select {
	case <-e.done:
	default:
		t.Fatal("Close returned before the background sweep ended")
	}
	e.Close() // idempotent
}

// TestThrottleExistingKeyAllocs proves the hot path allocates nothing.
func TestThrottleExistingKeyAllocs(t *testing.T) {
	e, _ := newTestEngine(t)
	key := []byte("user123")
	e.Throttle(nil, key, quota, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		e.Throttle(nil, key, quota, 0)
	})
	if allocs != 0 {
		t.Errorf("Throttle on an existing key: %v allocs, want 0", allocs)
	}
}

func BenchmarkThrottleExistingKey(b *testing.B) {
	e := New(Options{SweepInterval: -1})
	defer e.Close()
	key := []byte("user123")
	q := GCRAQuota{MaxBurst: 1 << 30, Count: 1000, Period: 1} // never limits within a run
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.Throttle(nil, key, q, 1)
	}
}

func BenchmarkThrottleParallel(b *testing.B) {
	e := New(Options{SweepInterval: -1})
	defer e.Close()
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("user:", i))
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			e.Throttle(nil, keys[i&1023], quota, 1)
			i++
		}
	})
}
