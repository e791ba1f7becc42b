package commands

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// topEntry encodes one of THROTTLE.TOP's entries.
func topEntry(key, family string, refusals, firstMs, lastMs, over int64) string {
	return fmt.Sprintf("*6\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n:%d\r\n:%d\r\n:%d\r\n:%d\r\n",
		len(key), key, len(family), family, refusals, firstMs, lastMs, over)
}

// TestThrottleTop: refusals of every deciding command are counted under
// their key and family, most refused first; allowed requests are not; the
// minute's window forgets them before the hour's.
func TestThrottleTop(t *testing.T) {
	h := alignedHarness(t)
	t0 := h.clock.Now().UnixMilli()
	h.do("SW.THROTTLE", "hot", "1", "1h") // admitted: not counted
	for range 3 {
		h.do("SW.THROTTLE", "hot", "1", "1h")
	}
	h.clock.Advance(time.Second)
	h.do("SW.THROTTLE", "hot", "1", "1h")
	h.do("FW.THROTTLE", "warm", "1", "1h")
	h.do("FW.THROTTLE", "warm", "1", "1h")
	h.do("FW.THROTTLE", "warm", "1", "1h")
	h.do("CL.THROTTLE", "cl", "0", "1", "3600")
	h.do("CL.THROTTLE", "cl", "0", "1", "3600")
	// THROTTLE.ALL counts a refusal under each of its rules' keys.
	h.do("THROTTLE.ALL", "SW", "hot", "1", "1h", "SWC", "other", "5", "1h")
	t1 := t0 + 1000

	want := "*4\r\n" + topEntry("hot", "sw", 5, t0, t1, 0) + topEntry("warm", "fw", 2, t1, t1, 0) +
		topEntry("cl", "cl", 1, t1, t1, 0) + topEntry("other", "swc", 1, t1, t1, 0) // ties: by key
	for _, cmd := range []string{"THROTTLE.TOP", "THROTTLE.TOP WINDOW 1m", "throttle.top window 1H count 10"} {
		if got := h.do(strings.Fields(cmd)...); got != want {
			t.Errorf("%s:\n got %q\nwant %q", cmd, got, want)
		}
	}
	if got, want := h.do("THROTTLE.TOP", "COUNT", "1"), "*1\r\n"+topEntry("hot", "sw", 5, t0, t1, 0); got != want {
		t.Errorf("COUNT 1:\n got %q\nwant %q", got, want)
	}
	info := h.do("INFO", "stats")
	if !strings.Contains(info, "throttle_refused_keys_1m:4\r\n") || !strings.Contains(info, "throttle_refused_keys_1h:4\r\n") {
		t.Errorf("INFO stats:\n%s", info)
	}

	// Two minutes on, the minute's window holds none of them; the hour's,
	// which started at the aligned clock, still holds all.
	h.clock.Advance(2 * time.Minute)
	if got := h.do("THROTTLE.TOP", "WINDOW", "1m"); got != "*0\r\n" {
		t.Errorf("1m after 2 minutes: %q", got)
	}
	if got := h.do("THROTTLE.TOP", "WINDOW", "1h", "COUNT", "2"); got != "*2\r\n"+topEntry("hot", "sw", 5, t0, t1, 0)+topEntry("warm", "fw", 2, t1, t1, 0) {
		t.Errorf("1h after 2 minutes: %q", got)
	}
	if info := h.do("INFO", "stats"); !strings.Contains(info, "throttle_refused_keys_1m:0\r\n") {
		t.Errorf("INFO stats after 2 minutes:\n%s", info)
	}
}

func TestThrottleTopArgs(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ cmd, want string }{
		{"THROTTLE.TOP COUNT 0", "-" + msgPositive + "\r\n"},
		{"THROTTLE.TOP COUNT -3", "-" + msgPositive + "\r\n"},
		{"THROTTLE.TOP COUNT x", "-" + msgNotInteger + "\r\n"},
		{"THROTTLE.TOP COUNT", "-" + msgSyntax + "\r\n"},
		{"THROTTLE.TOP WINDOW 5m", "-" + msgTopUsage + "\r\n"},
		{"THROTTLE.TOP LIMIT 3", "-" + msgTopUsage + "\r\n"},
		{"THROTTLE.TOP COUNT 3 WINDOW 1h", "*0\r\n"},
	} {
		if got := h.do(strings.Fields(c.cmd)...); got != c.want {
			t.Errorf("%s: got %q, want %q", c.cmd, got, c.want)
		}
	}
}

// TestThrottleTopHeavyHitters: 100,000 keys refused once each and 10 keys
// refused 90,000 times each, interleaved: the 10 come first, each within
// the error it states, which is at most refusals/1024.
func TestThrottleTopHeavyHitters(t *testing.T) {
	if testing.Short() {
		t.Skip("a million refusals")
	}
	h := newHarness(t)
	w := discardWriter{}
	limit, window := []byte("1"), []byte("1h")
	refuse := func(key []byte) {
		h.cmds.Dispatch(w, h.client, [][]byte{[]byte("FW.THROTTLE"), key, limit, window})
	}
	heavy := make([][]byte, 10)
	for i := range heavy {
		heavy[i] = []byte("heavy:" + strconv.Itoa(i))
		refuse(heavy[i]) // admitted
	}
	const light, perHeavy = 100_000, 90_000
	total := 0
	for i := range light {
		key := []byte("user:" + strconv.Itoa(i))
		refuse(key) // admitted
		refuse(key) // refused
		total++
		for j := range 9 { // 9 heavy refusals per light one: 90%
			refuse(heavy[(i*9+j)%10])
			total++
		}
	}
	top := h.cmds.TopRefused(10, false)
	bound := uint64(total / topCounters)
	for i, k := range top {
		if !strings.HasPrefix(k.Key, "heavy:") || k.Family.Name() != "fw" {
			t.Fatalf("rank %d: %+v", i+1, k)
		}
		if k.Refusals < perHeavy || k.Refusals-perHeavy > k.MaxOver || k.MaxOver > bound {
			t.Errorf("%s: %d refusals, true %d, max overcount %d, bound %d", k.Key, k.Refusals, perHeavy, k.MaxOver, bound)
		}
	}
	t.Logf("%d refusals over %d keys: top 10 are the heavy keys; refusals/k = %d", total, light+10, bound)
}

// TestRefusalAllocs: a refused SW.THROTTLE, recorded for THROTTLE.TOP,
// allocates nothing, with keys entering and leaving the sketch.
func TestRefusalAllocs(t *testing.T) {
	h := newHarness(t)
	w := discardWriter{}
	keys := make([][][]byte, 4096)
	for i := range keys {
		keys[i] = [][]byte{[]byte("SW.THROTTLE"), []byte("key:" + strconv.Itoa(i)), []byte("1"), []byte("1h")}
		h.cmds.Dispatch(w, h.client, keys[i]) // admitted; refused from now on
	}
	i := 0
	allocs := testing.AllocsPerRun(10_000, func() {
		h.cmds.Dispatch(w, h.client, keys[i%len(keys)])
		i++
	})
	if allocs != 0 {
		t.Errorf("a refusal allocates %v", allocs)
	}
	if got := h.cmds.TopRefused(1, false); len(got) != 1 {
		t.Errorf("nothing recorded: %+v", got)
	}
}

// BenchmarkRefusal dispatches refused SW.THROTTLEs over 100,000 keys, each
// recorded in THROTTLE.TOP's sketches.
func BenchmarkRefusal(b *testing.B) {
	h := newHarness(&testing.T{})
	w := discardWriter{}
	keys := make([][][]byte, 100_000)
	for i := range keys {
		keys[i] = [][]byte{[]byte("SW.THROTTLE"), []byte("key:" + strconv.Itoa(i)), []byte("1"), []byte("1h")}
		h.cmds.Dispatch(w, h.client, keys[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		h.cmds.Dispatch(w, h.client, keys[i%len(keys)])
	}
}
