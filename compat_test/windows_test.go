package compat_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// window runs one rate-limit command through go-redis and returns its five
// integers.
func window(ctx context.Context, rdb doer, args ...any) ([]int64, error) {
	return rdb.Do(ctx, args...).Int64Slice()
}

// TestWindowCommandsGoRedis drives SW.THROTTLE, SWC.THROTTLE, FW.THROTTLE
// and THROTTLE.ALL over the network with go-redis, in RESP3 and RESP2, on
// the real clock: SW's times are exact, FW's and SWC's depend on where the
// clock is in their epoch-aligned window, so they are checked as bounds.
func TestWindowCommandsGoRedis(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rdb := srv.goRedis(t, func(o *redis.Options) { o.Protocol = proto })
			ctx := context.Background()
			k := func(name string) string { return fmt.Sprintf("%s:%d", name, proto) }
			check := func(got []int64, err error, want ...int64) {
				t.Helper()
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("got %v, %v; want %v", got, err, want)
				}
			}

			got, err := window(ctx, rdb, "SW.THROTTLE", k("sw"), 2, "10s")
			check(got, err, 0, 2, 1, -1, 10)
			got, err = window(ctx, rdb, "SW.THROTTLE", k("sw"), 2, "10s", 1, "MS")
			check(got, err, 0, 2, 0, -1, 10000)
			got, err = window(ctx, rdb, "SW.THROTTLE", k("sw"), 2, "10s")
			if err != nil || len(got) != 5 || got[0] != 1 || got[2] != 0 || got[3] < 9 || got[3] > 10 {
				t.Errorf("SW limited: %v, %v", got, err)
			}
			got, err = window(ctx, rdb, "SW.THROTTLE", k("peek"), 2, "10s", 0)
			check(got, err, 0, 2, 2, -1, 0)

			got, err = window(ctx, rdb, "FW.THROTTLE", k("fw"), 1, "1h")
			if err != nil || len(got) != 5 || got[0] != 0 || got[2] != 0 || got[4] < 1 || got[4] > 3600 {
				t.Errorf("FW: %v, %v", got, err)
			}
			got, err = window(ctx, rdb, "FW.THROTTLE", k("fw"), 1, "1h", 1, "MS")
			if err != nil || len(got) != 5 || got[0] != 1 || got[3] != got[4] || got[3] < 1 || got[3] > 3_600_000 {
				t.Errorf("FW limited: %v, %v", got, err)
			}
			got, err = window(ctx, rdb, "SWC.THROTTLE", k("swc"), 5, "1m", 2)
			if err != nil || len(got) != 5 || got[0] != 0 || got[2] != 3 || got[4] <= 60 || got[4] > 120 {
				t.Errorf("SWC: %v, %v", got, err)
			}

			// Errors name the problem; a key of another family is WRONGTYPE.
			for _, c := range []struct {
				args []any
				want string
			}{
				{[]any{"SW.THROTTLE", k("e"), 0, 10}, "ERR limit must be an integer from 1 to 4294967295"},
				{[]any{"FW.THROTTLE", k("e"), 1, "1w"}, "ERR window must be a positive whole number of seconds or a duration such as 250ms, 10s, 5m, 1h or 1d, up to 100 years"},
				{[]any{"SWC.THROTTLE", k("e"), 1, 10, -1}, "ERR quantity must be a non-negative integer"},
				{[]any{"SW.THROTTLE", k("e"), 1, 10, 1, "SECONDS"}, "ERR unknown option 'SECONDS'; the only option is MS"},
				{[]any{"SWC.THROTTLE", k("sw"), 1, 10}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
				{[]any{"CL.THROTTLE", k("fw"), 15, 30, 60}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
				{[]any{"THROTTLE.ALL", "SW", k("e"), 1, 10, "CL", k("e2"), 1, 0, 60}, "ERR rule 2 (CL): zero rates are not supported: count and period must not be 0"},
				{[]any{"THROTTLE.ALL", "SW", k("e"), 1, 10, "FW", k("e"), 1, 60}, "ERR rules 1 and 2 name the same key; each rule needs a key of its own"},
				{[]any{"THROTTLE.ALL", "SW", k("e"), 1, 10, "FW", k("e2"), 1}, "ERR rule 2 is incomplete: FW takes key limit window"},
			} {
				if err := rdb.Do(ctx, c.args...).Err(); err == nil || err.Error() != c.want {
					t.Errorf("%v: %v, want %q", c.args, err, c.want)
				}
			}
			if n, err := rdb.Exists(ctx, k("e"), k("e2"), k("peek")).Result(); err != nil || n != 0 {
				t.Errorf("EXISTS after errors and a peek: %d, %v", n, err)
			}
			for key, want := range map[string]string{k("sw"): "sw", k("fw"): "fw", k("swc"): "swc"} {
				if typ, err := rdb.Type(ctx, key).Result(); err != nil || typ != want {
					t.Errorf("TYPE %s = %q, %v; want %q", key, typ, err, want)
				}
			}
			keys, _, err := rdb.ScanType(ctx, 0, k("*"), 1000, "swc").Result()
			if err != nil || !slices.Equal(keys, []string{k("swc")}) {
				t.Errorf("SCAN TYPE swc = %v, %v", keys, err)
			}
			if ms, err := rdb.PTTL(ctx, k("sw")).Result(); err != nil || ms <= 9*time.Second || ms > 10*time.Second {
				t.Errorf("PTTL of the SW key = %v, %v", ms, err)
			}

			// THROTTLE.ALL: all or nothing.
			all := []any{"THROTTLE.ALL", "SW", k("a1"), 1, "10s", "FW", k("a2"), 5, "1h", "CL", k("a3"), 15, 30, 60}
			got, err = window(ctx, rdb, all...)
			if err != nil || len(got) != 5 || got[0] != 0 || got[1] != 1 || got[2] != 0 || got[3] != -1 || got[4] < 10 {
				t.Errorf("THROTTLE.ALL: %v, %v", got, err)
			}
			got, err = window(ctx, rdb, append(all, "MS")...)
			if err != nil || len(got) != 5 || got[0] != 1 || got[3] < 9000 || got[3] > 10000 {
				t.Errorf("THROTTLE.ALL limited: %v, %v", got, err)
			}
			if got, err := throttle(ctx, rdb, k("a3"), "15", "30", "60", "0"); err != nil || !slices.Equal(got, allowed(16, 15, 2)) {
				t.Errorf("CL peek after THROTTLE.ALL: %v, %v; want one request recorded", got, err)
			}
			if got, err := window(ctx, rdb, "FW.THROTTLE", k("a2"), 5, "1h", 0); err != nil || got[2] != 4 {
				t.Errorf("FW peek after THROTTLE.ALL: %v, %v; want one request recorded", got, err)
			}
		})
	}
}

// TestWindowCommandsTransaction: THROTTLE.ALL inside MULTI/EXEC (its keys
// found by its key-extraction function), and in a pipeline.
func TestWindowCommandsTransaction(t *testing.T) {
	t.Parallel()
	rdb := startServer(t).goRedis(t)
	ctx := context.Background()
	var cmds []*redis.Cmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		cmds = append(cmds,
			p.Do(ctx, "THROTTLE.ALL", "SW", "tx:a", 2, 10, "SWC", "tx:b", 2, 10, "QUANTITY", 2),
			p.Do(ctx, "SW.THROTTLE", "tx:a", 2, 10, 0),
			p.Do(ctx, "THROTTLE.ALL", "SW", "tx:a", 2, 10, "FW", "tx:c", 2, 10))
		return nil
	})
	if err != nil {
		t.Fatalf("EXEC: %v", err)
	}
	for i, want := range [][]int64{{0, 2, 0, -1, 0}, {0, 2, 0, -1, 10}, {1, 2, 0, 10, 0}} {
		got, err := cmds[i].Int64Slice()
		// SWC's and FW's reset depends on the clock: compare the rest.
		if err != nil || len(got) != 5 || !slices.Equal(got[:4], want[:4]) {
			t.Errorf("command %d in EXEC: %v, %v; want %v", i+1, got, err, want)
		}
	}
	if n, err := rdb.Exists(ctx, "tx:c").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS tx:c = %d, %v; a limited THROTTLE.ALL must not create it", n, err)
	}
	info, err := rdb.Command(ctx).Result()
	if err != nil {
		t.Fatalf("COMMAND: %v", err)
	}
	if ta := info["throttle.all"]; ta == nil || ta.Arity != -5 || ta.FirstKeyPos != 0 || !slices.Contains(ta.Flags, "movablekeys") {
		t.Errorf("COMMAND's throttle.all = %+v", ta)
	}
	if sw := info["sw.throttle"]; sw == nil || sw.Arity != -4 || sw.FirstKeyPos != 1 || sw.LastKeyPos != 1 {
		t.Errorf("COMMAND's sw.throttle = %+v", sw)
	}
	keys, err := rdb.CommandGetKeys(ctx, "THROTTLE.ALL", "SW", "x", 1, 10, "CL", "y", 1, 1, 1).Result()
	if err != nil || !slices.Equal(keys, []string{"x", "y"}) {
		t.Errorf("COMMAND GETKEYS THROTTLE.ALL = %v, %v", keys, err)
	}
}

// admission is when a client saw one admitted call: the server admitted it
// at some instant between sent and received.
type admission struct{ sent, received time.Time }

// TestThrottleAllConcurrent: 50 connections hammer one THROTTLE.ALL over a
// per-second sliding log and a per-minute fixed window on shared keys. The
// per-minute limit is low enough to bind before the hammering ends, so each
// rule rejects requests the other would admit. No rule may ever record more
// than its limit, and no rule may record a request another rejected.
func TestThrottleAllConcurrent(t *testing.T) {
	t.Parallel()
	const (
		clients  = 50
		perSec   = 10
		perMin   = 15
		duration = 2500 * time.Millisecond
	)
	srv := startServer(t)
	ctx := context.Background()
	// The fixed window is aligned to the minute: start where the whole run
	// fits in one.
	if untilNext := time.Minute - time.Duration(time.Now().UnixNano()%int64(time.Minute)); untilNext < duration+2*time.Second {
		time.Sleep(untilNext)
	}
	rule := []any{"THROTTLE.ALL", "SW", "k:sec", perSec, "1s", "FW", "k:min", perMin, "1m"}

	conns := make([]*redis.Client, clients+1)
	for i := range conns {
		conns[i] = srv.goRedis(t, func(o *redis.Options) { o.PoolSize = 1 })
		if err := conns[i].Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(duration)
	admitted := make([][]admission, clients)
	calls := make([]int, clients)
	errs := make(chan error, clients+1)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				sent := time.Now()
				got, err := window(ctx, conns[i], rule...)
				received := time.Now()
				if err != nil || len(got) != 5 {
					errs <- fmt.Errorf("client %d: %v, %v", i, got, err)
					return
				}
				calls[i]++
				if got[0] == 0 {
					admitted[i] = append(admitted[i], admission{sent, received})
				}
			}
		}()
	}
	// The server's own view while the clients hammer: a peek (quantity 0)
	// is refused only when a rule holds more than its limit.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			for _, peek := range [][]any{
				{"SW.THROTTLE", "k:sec", perSec, "1s", 0}, {"FW.THROTTLE", "k:min", perMin, "1m", 0},
			} {
				if got, err := window(ctx, conns[clients], peek...); err != nil || got[0] != 0 {
					errs <- fmt.Errorf("%v while hammering: %v, %v; the rule holds more than its limit", peek, got, err)
					return
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	wg.Wait()
	peekSent := time.Now()
	secPeek, errSec := window(ctx, conns[0], "SW.THROTTLE", "k:sec", perSec, "1s", 0)
	minPeek, errMin := window(ctx, conns[0], "FW.THROTTLE", "k:min", perMin, "1m", 0)
	peekReceived := time.Now()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if errSec != nil || errMin != nil {
		t.Fatalf("peeks after: %v, %v", errSec, errMin)
	}

	var all []admission
	total := 0
	for i := range clients {
		all = append(all, admitted[i]...)
		total += calls[i]
	}
	t.Logf("%d calls from %d connections in %v, %d admitted", total, clients, duration, len(all))

	// Per minute: everything fell in one window, the limit binds, and the
	// window recorded exactly the admitted calls, none that SW rejected.
	if len(all) != perMin {
		t.Errorf("admitted %d calls, want the per-minute limit, %d", len(all), perMin)
	}
	if recorded := perMin - minPeek[2]; recorded != int64(len(all)) {
		t.Errorf("FW k:min recorded %d, %d calls were admitted", recorded, len(all))
	}

	// Per second: no 1s window of server time holds more than perSec
	// admissions. Each admission happened between its sent and received
	// times, so perSec+1 admissions all sent at or after s and all received
	// before s+1s would break the limit.
	sort.Slice(all, func(i, j int) bool { return all[i].sent.Before(all[j].sent) })
	for i, first := range all {
		var ends []time.Time
		for _, a := range all[i:] {
			ends = append(ends, a.received)
		}
		if len(ends) <= perSec {
			break
		}
		slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
		if span := ends[perSec].Sub(first.sent); span < time.Second {
			t.Errorf("%d admissions within %v, from %v on: the per-second limit is %d", perSec+1, span, first.sent, perSec)
		}
	}

	// SW k:sec holds exactly the admissions of the last second: once the
	// per-minute window was full, SW must have recorded none of the calls it
	// would have admitted but FW rejected.
	surely, maybe := int64(0), int64(0)
	for _, a := range all {
		if a.sent.After(peekReceived.Add(-time.Second)) {
			surely++
		}
		if a.received.After(peekSent.Add(-time.Second)) {
			maybe++
		}
	}
	if recorded := perSec - secPeek[2]; recorded < surely || recorded > maybe {
		t.Errorf("SW k:sec holds %d requests; between %d and %d admitted calls can be in its window", recorded, surely, maybe)
	}
}
