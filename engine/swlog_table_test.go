package engine

import (
	"math/rand/v2"
	"testing"
)

// checkSWLogs checks the words' accounting: every word of every chunk is a
// live ring's, garbage, or past the last chunk's cut.
func checkSWLogs(t *testing.T, ls *swLogs) {
	t.Helper()
	live, chunks := 0, 0
	for i := range ls.table {
		live += ls.table[i].n
	}
	for _, c := range ls.chunks {
		chunks += len(c)
	}
	tail := 0
	if n := len(ls.chunks); n > 0 {
		tail = len(ls.chunks[n-1]) - ls.cut
	}
	if live != ls.live || chunks != ls.live+ls.garbage+tail {
		t.Fatalf("live %d (rings hold %d), garbage %d, %d words in chunks, %d uncut", ls.live, live, ls.garbage, chunks, tail)
	}
}

// TestSWLogsShareChunks: many logs growing, shrinking, and being removed
// and added in one table keep their requests exact through free rings
// taken again and compactions, and the words beyond the live rings stay
// within a quarter of them (and a chunk's minimum) while no log is removed.
func TestSWLogsShareChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ls := &swLogs{}
	type held struct {
		i    uint32
		want []swReq
	}
	var logs []held
	now := epochDay
	compactions, reused := 0, 0
	for step := range 20_000 {
		first, garbage, chunks := ls.firstWord(), ls.garbage, len(ls.chunks)
		now += int64(rng.IntN(1_000))
		switch k := rng.IntN(100); {
		case k < 3 || len(logs) == 0:
			logs = append(logs, held{i: ls.add()})
		case k < 5 && step < 10_000:
			j := rng.IntN(len(logs))
			ls.remove(logs[j].i)
			logs[j] = logs[len(logs)-1]
			logs = logs[:len(logs)-1]
			continue
		default:
			h := &logs[rng.IntN(len(logs))]
			l := &ls.table[h.i]
			drop := 0
			if rng.IntN(4) == 0 {
				drop = rng.IntN(len(h.want) + 1)
			}
			v := swView{drop: drop}
			for _, r := range h.want[:drop] {
				v.gone += int64(r.n)
			}
			n := uint32(1 + rng.IntN(3))
			ls.apply(l, v, now, int64(n), 1_000)
			h.want = append(h.want[drop:], swReq{now, n})
		}
		for _, h := range logs {
			checkSWLog(t, ls, &ls.table[h.i], h.want)
		}
		checkSWLogs(t, ls)
		switch {
		case first != nil && ls.firstWord() != first:
			compactions++
		case ls.garbage < garbage && len(ls.chunks) == chunks:
			reused++
		}
		if step >= 10_000 && ls.garbage+len(ls.chunks[len(ls.chunks)-1])-ls.cut > ls.live/4+minChunk {
			t.Fatalf("step %d: %d live words, %d garbage, %d uncut", step, ls.live, ls.garbage, len(ls.chunks[len(ls.chunks)-1])-ls.cut)
		}
	}
	if compactions < 10 || reused < 100 {
		t.Errorf("%d compactions, %d free rings taken again: the test missed them", compactions, reused)
	}
	t.Logf("%d compactions, %d free rings taken again", compactions, reused)
}

// firstWord is the first chunk's first word, which a compaction replaces.
func (ls *swLogs) firstWord() *uint64 {
	if len(ls.chunks) == 0 {
		return nil
	}
	return &ls.chunks[0][0]
}

// TestSWLogsHint: a log's hint names the word its next request is written
// to, and touch reads it; a log with no room says nothing.
func TestSWLogsHint(t *testing.T) {
	ls, l := newSWLogs(nil, nil)
	now := epochDay
	for i := range 20 {
		h := ls.hint(l)
		if l.size == l.capacity() || l.n == 0 {
			if h != 0 {
				t.Fatalf("request %d: a full ring hints %d", i, h)
			}
		} else if h == 0 {
			t.Fatalf("request %d: no hint with room in the ring", i)
		}
		now += 1_000
		ls.apply(l, swView{}, now, 1, 16)
		if h == 0 {
			continue
		}
		want := pack(now, 1, l.base, l.qbits)
		if got := ls.touch(h); got != want || want == 0 {
			t.Fatalf("request %d: the hinted word holds %#x, the request was written as %#x", i, got, want)
		}
	}
	if ls.touch(1<<32-1) != 0 || ls.touch(0) != 0 {
		t.Fatal("a hint out of range reads a word")
	}
}
