package persist

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// doneCounter answers CL.THROTTLE decisions by counting them down, with no
// allocation of its own.
type doneCounter struct{ wg sync.WaitGroup }

func (d *doneCounter) Done(engine.Result, error) { d.wg.Done() }

// TestSharedDecisionAllocations: a decision in shared mode costs no
// allocation of its own once ops have been released for reuse (the op,
// its key's bytes); what is left is its round trip's, which the round's
// decisions share, and on a store with SET IFEQ go-redis's string of the
// SET's reply. The store is a real server, whose allocations are not this
// process's.
func TestSharedDecisionAllocations(t *testing.T) {
	for _, store := range sharedStores() {
		t.Run(store.name, func(t *testing.T) { testDecisionAllocations(t, store) })
	}
}

func testDecisionAllocations(t *testing.T, store sharedStore) {
	srv := store.start(t)
	s := NewShared(srv.Client(t), SharedOptions{
		Local:   engine.New(engine.Options{SweepInterval: -1}),
		Timeout: 10 * time.Second,
		Prefix:  "alloc:",
	})
	startShared(t, s)
	const n = 512
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%d", i)
	}
	// Never refused: every decision writes its key.
	q := engine.GCRAQuota{MaxBurst: 1 << 30, Count: 1, Period: 1}
	done := &doneCounter{}
	run := func() {
		done.wg.Add(n)
		for _, k := range keys {
			s.Throttle(k, q, 1, false, done)
		}
		done.wg.Wait()
	}
	run() // the keys exist, and the value cache holds them
	run()
	perDecision := testing.AllocsPerRun(20, run) / n
	// Under -race, sync.Pool drops a quarter of the ops released, and each
	// one dropped costs an op and its key's bytes again: about 0.5 a
	// decision, where a key made per decision would cost more than 1.
	limit := 0.25
	if raceEnabled {
		limit = 0.75
	}
	if store.ifeq {
		// go-redis makes a string of each SET's reply ("OK"): one
		// allocation a decision sent as SET IFEQ.
		limit++
	}
	t.Logf("%.3f allocations per decision", perDecision)
	if perDecision > limit {
		t.Errorf("%.3f allocations per decision, want at most %.2f (the rounds' own, shared)", perDecision, limit)
	}
}
