package engine

import (
	"fmt"
	"slices"
	"sort"
)

// Txn holds a set of shards locked so that several commands run as one
// atomic step (EXEC, multi-key checks). Shards are locked in ascending
// order, so two transactions never deadlock. A Txn is used by one goroutine.
type Txn struct {
	e    *Engine
	held []int // shard indexes, ascending
	all  bool
}

// Begin locks the shards of keys, or every shard when all is set, and
// returns the transaction; End unlocks them.
func (e *Engine) Begin(keys [][]byte, all bool) *Txn {
	tx := &Txn{e: e, all: all}
	if all {
		for _, s := range e.shards {
			s.mu.Lock()
		}
		return tx
	}
	tx.held = make([]int, 0, len(keys))
	for _, k := range keys {
		tx.held = append(tx.held, e.shardIndex(k))
	}
	sort.Ints(tx.held)
	tx.held = slices.Compact(tx.held)
	for _, i := range tx.held {
		e.shards[i].mu.Lock()
	}
	return tx
}

// End unlocks the transaction's shards. The Txn must not be used after.
func (tx *Txn) End() {
	if tx.all {
		for i := len(tx.e.shards) - 1; i >= 0; i-- {
			tx.e.shards[i].mu.Unlock()
		}
		return
	}
	for j := len(tx.held) - 1; j >= 0; j-- {
		tx.e.shards[tx.held[j]].mu.Unlock()
	}
}

// mustHold panics if the transaction did not lock shard i: a command touched
// a key it did not declare, which is a bug in the command table.
func (tx *Txn) mustHold(i int) {
	if tx.all {
		return
	}
	j := sort.SearchInts(tx.held, i)
	if j == len(tx.held) || tx.held[j] != i {
		panic(fmt.Sprintf("engine: shard %d used but not locked by the transaction", i))
	}
}
