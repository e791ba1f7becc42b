package engine

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSWLogAfterApply: afterApply foretells the requests and the ring's
// length apply leaves, over logs that grow, re-encode, take the wide form
// and shrink, with peeks that only drop requests among the requests.
func TestSWLogAfterApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var grows, shrinks, rebases, wides int
	for run := range 120 {
		limit := []int64{3, 50, 1000, MaxWindowLimit}[run%4]
		q := WindowQuota{Limit: limit, Window: int64(1+rng.IntN(20)) * int64(time.Second)}
		ls, l := newSWLogs(nil, nil)
		now := epochDay
		for step := range 600 {
			gap := rng.Int64N(int64(50 * time.Millisecond))
			if rng.IntN(60) == 0 {
				gap = rng.Int64N(int64(30 * time.Second))
			}
			now += gap
			qty := int64(1)
			switch {
			case rng.IntN(8) == 0:
				qty = 0
			case limit == MaxWindowLimit && rng.IntN(4) == 0:
				qty = 1 + rng.Int64N(1<<31)
			case limit > 3:
				qty = 1 + rng.Int64N(3)
			}
			d, v := slidingLog(now, l, ls.ring(l), q, qty)
			if d.Limited {
				continue
			}
			size, words := l.afterApply(ls.ring(l), v, now, qty, limit)
			n, wide, base := l.n, l.wide, l.base
			ls.apply(l, v, now, qty, limit)
			if l.size != size || l.n != words {
				t.Fatalf("run %d step %d (limit %d, qty %d, drop %d): apply left %d requests in %d words, afterApply said %d in %d",
					run, step, limit, qty, v.drop, l.size, l.n, size, words)
			}
			switch {
			case l.n > n && n > 0:
				grows++
			case l.n < n:
				shrinks++
			}
			if l.wide != wide {
				wides++
			} else if !l.wide && l.n == n && l.base != base {
				rebases++
			}
		}
	}
	if grows == 0 || shrinks == 0 || rebases == 0 || wides == 0 {
		t.Errorf("%d growths, %d shrinks, %d rebases, %d changes of form: the run missed what it is for", grows, shrinks, rebases, wides)
	}
	t.Logf("%d growths, %d shrinks, %d rebases, %d changes of form", grows, shrinks, rebases, wides)
}
