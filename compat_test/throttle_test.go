package compat_test

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Error texts of redis-cell 0.5, byte for byte.
const (
	cellUsage    = "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
	cellParseInt = "Cell error: Store error: Couldn't parse as integer: "
	cellZeroRate = "Cell error: Store error: Zero rates are not supported"
	cellExpire   = "Cell error: Store error: Error while setting key expire"
)

// throttleStep is one CL.THROTTLE call (the arguments after the name) and
// its reply: five integers, or an error text.
type throttleStep struct {
	args []string
	want []int64
	err  string
}

func allowed(limit, remaining, reset int64) []int64 { return []int64{0, limit, remaining, -1, reset} }

// TestThrottleReplies replays the rows of redis-cell-replies.md through
// go-redis (RESP3 after HELLO 3) and compares every value exactly. Each row
// uses its own keys on one server.
func TestThrottleReplies(t *testing.T) {
	t.Parallel()
	rows := []struct {
		row   string
		steps []throttleStep
		// absent lists keys the row must not leave behind.
		absent []string
	}{
		{row: "1 and 1b", steps: []throttleStep{
			{args: []string{"user123", "15", "30", "60"}, want: allowed(16, 15, 2)},
			{args: []string{"user123", "15", "30", "60"}, want: allowed(16, 14, 4)},
		}},
		{row: "3 usage", steps: []throttleStep{
			{args: []string{}, err: cellUsage},
			{args: []string{"k3"}, err: cellUsage},
			{args: []string{"k3", "15"}, err: cellUsage},
			{args: []string{"k3", "15", "30"}, err: cellUsage},
			{args: []string{"k3", "15", "30", "60", "1", "extra"}, err: cellUsage},
			{args: []string{"k3", "15", "30", "60", "1", "extra", "more"}, err: cellUsage},
			{args: []string{"k3", "abc", "30", "60", "1", "extra"}, err: cellUsage}, // arity before parsing
		}, absent: []string{"k3"}},
		{row: "4 non-integer", steps: []throttleStep{
			{args: []string{"k4", "abc", "30", "60"}, err: cellParseInt + "abc"},
			{args: []string{"k4", "15", "abc", "60"}, err: cellParseInt + "abc"},
			{args: []string{"k4", "15", "30", "abc"}, err: cellParseInt + "abc"},
			{args: []string{"k4", "15", "30", "60", "abc"}, err: cellParseInt + "abc"},
			{args: []string{"k4", "x1", "x2", "x3", "x4"}, err: cellParseInt + "x1"},
			{args: []string{"k4", "15", "x2", "x3", "x4"}, err: cellParseInt + "x2"},
			{args: []string{"k4", "15", "30", "x3", "x4"}, err: cellParseInt + "x3"},
		}, absent: []string{"k4"}},
		{row: "4b integer syntax", steps: []throttleStep{
			{args: []string{"k4b", "1.5", "30", "60"}, err: cellParseInt + "1.5"},
			{args: []string{"k4b", "15", "30", "60.0"}, err: cellParseInt + "60.0"},
			{args: []string{"k4b", "", "30", "60"}, err: cellParseInt},
			{args: []string{"k4b", " 15", "30", "60"}, err: cellParseInt + " 15"},
			{args: []string{"k4b", "15 ", "30", "60"}, err: cellParseInt + "15 "},
			{args: []string{"k4b", "0x10", "30", "60"}, err: cellParseInt + "0x10"},
			{args: []string{"k4b", "1e3", "30", "60"}, err: cellParseInt + "1e3"},
			{args: []string{"k4b", "-", "30", "60"}, err: cellParseInt + "-"},
			{args: []string{"k4b", "+", "30", "60"}, err: cellParseInt + "+"},
			{args: []string{"k4b", "9223372036854775808", "30", "60"}, err: cellParseInt + "9223372036854775808"}, // 4d
		}, absent: []string{"k4b"}},
		{row: "4c sign and leading zero", steps: []throttleStep{
			{args: []string{"k4c+", "+15", "30", "60"}, want: allowed(16, 15, 2)},
			{args: []string{"k4c0", "015", "30", "60"}, want: allowed(16, 15, 2)},
			{args: []string{"k4c-0", "-0", "30", "60"}, want: allowed(1, 0, 2)},
		}},
		{row: "5 negative max_burst", steps: []throttleStep{
			{args: []string{"nb1", "-1", "30", "60"}, want: []int64{1, 0, 0, -1, 0}},
			{args: []string{"nb1", "-1", "30", "60"}, want: []int64{1, 0, 0, -1, 0}},
		}, absent: []string{"nb1"}},
		{row: "5b more negative max_burst", steps: []throttleStep{
			{args: []string{"nb2", "-2", "30", "60"}, want: []int64{1, -1, 0, -1, 0}},
			{args: []string{"nb100", "-100", "30", "60"}, want: []int64{1, -99, 0, -1, 0}},
		}, absent: []string{"nb2", "nb100"}},
		{row: "6 count 0", steps: []throttleStep{
			{args: []string{"c0", "15", "0", "60"}, err: cellZeroRate},
		}, absent: []string{"c0"}},
		{row: "7 period 0", steps: []throttleStep{
			{args: []string{"p0", "15", "30", "0"}, err: cellZeroRate},
		}, absent: []string{"p0"}},
		{row: "7b negative count or period", steps: []throttleStep{
			{args: []string{"nc", "15", "-30", "60"}, want: []int64{1, 16, 0, -1, 0}},
			{args: []string{"np", "15", "30", "-60"}, want: []int64{1, 16, 0, -1, 0}},
		}, absent: []string{"nc", "np"}},
		{row: "7c max_burst 0", steps: []throttleStep{
			{args: []string{"b0", "0", "30", "60"}, want: allowed(1, 0, 2)},
			{args: []string{"b0", "0", "30", "60"}, want: []int64{1, 1, 0, 2, 2}},
		}},
		{row: "8b quantity 0 peeks", steps: []throttleStep{
			{args: []string{"q0", "15", "30", "60"}, want: allowed(16, 15, 2)},
			{args: []string{"q0", "15", "30", "60", "0"}, want: allowed(16, 15, 2)},
			{args: []string{"q0", "15", "30", "60", "0"}, want: allowed(16, 15, 2)},
		}},
		{row: "9 quantity burst+1", steps: []throttleStep{
			{args: []string{"q16", "15", "30", "60", "16"}, want: allowed(16, 0, 32)},
			{args: []string{"q16", "15", "30", "60", "1"}, want: []int64{1, 16, 0, 2, 32}},
		}},
		{row: "9b quantity above burst+1", steps: []throttleStep{
			{args: []string{"q17", "15", "30", "60", "17"}, want: []int64{1, 16, 16, -1, 0}},
			{args: []string{"q100", "15", "30", "60", "100"}, want: []int64{1, 16, 16, -1, 0}},
		}, absent: []string{"q17", "q100"}},
		{row: "10 negative quantity on a fresh key", steps: []throttleStep{
			{args: []string{"qneg", "15", "30", "60", "-1"}, err: cellExpire},
			{args: []string{"qneg", "15", "30", "60", "-1"}, err: cellExpire},
		}},
		// Not a row of the reference: read off redis-cell's store.rs, which
		// writes the new TAT before it fails to set the expiry. The TAT is
		// then in the past, so the key limits nothing: the next call is
		// answered as on a fresh key.
		{row: "10c negative quantity moving an existing TAT into the past", steps: []throttleStep{
			{args: []string{"qneg2", "15", "30", "60"}, want: allowed(16, 15, 2)},
			{args: []string{"qneg2", "15", "30", "60", "-2"}, err: cellExpire},
			{args: []string{"qneg2", "15", "30", "60"}, want: allowed(16, 15, 2)},
		}},
		{row: "13b binary key", steps: []throttleStep{
			{args: []string{"a\x00b c", "15", "30", "60"}, want: allowed(16, 15, 2)},
		}},
		{row: "14 max_burst max int64", steps: []throttleStep{
			{args: []string{"k14", "9223372036854775807", "30", "60"}, want: []int64{1, -9223372036854775808, 0, -1, 0}},
		}, absent: []string{"k14"}},
		{row: "14b max_burst max int64 - 1", steps: []throttleStep{
			{args: []string{"k14b", "9223372036854775806", "30", "60"}, want: []int64{1, 9223372036854775807, 0, -1, 0}},
		}, absent: []string{"k14b"}},
		{row: "14c count max int64", steps: []throttleStep{
			{args: []string{"k14c", "15", "9223372036854775807", "60"}, err: cellZeroRate},
		}, absent: []string{"k14c"}},
		{row: "14d period max int64", steps: []throttleStep{
			{args: []string{"k14d", "15", "30", "9223372036854775807"}, want: []int64{1, 16, 0, -1, 0}},
		}, absent: []string{"k14d"}},
		{row: "14e quantity max int64", steps: []throttleStep{
			{args: []string{"k14e", "15", "30", "60", "9223372036854775807"}, err: cellExpire},
		}},
		{row: "14f quantity min int64", steps: []throttleStep{
			{args: []string{"k14f", "15", "30", "60", "-9223372036854775808"}, want: allowed(16, 16, 0)},
		}},
		{row: "14j huge quantity", steps: []throttleStep{
			{args: []string{"k14j", "15", "30", "60", "1000000000"}, want: []int64{1, 16, 16, -1, 0}},
			{args: []string{"k14j", "15", "30", "60", "1000000000000"}, want: []int64{1, 16, 16, -1, 0}},
		}, absent: []string{"k14j"}},
	}

	s := startServer(t)
	rdb := s.goRedis(t)
	ctx := context.Background()
	for _, tt := range rows {
		t.Run(tt.row, func(t *testing.T) {
			errorf := t.Errorf
			for i, st := range tt.steps {
				got, err := throttle(ctx, rdb, st.args...)
				if st.err != "" {
					if err == nil || err.Error() != st.err {
						errorf("step %d CL.THROTTLE %q: got %v, %v; want error %q", i+1, st.args, got, err, st.err)
					}
					continue
				}
				if err != nil || !slices.Equal(got, st.want) {
					errorf("step %d CL.THROTTLE %q: got %v, %v; want %v", i+1, st.args, got, err, st.want)
				}
			}
			for _, k := range tt.absent {
				if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
					errorf("EXISTS %q = %d, %v; the row must not create the key", k, n, err)
				}
			}
		})
	}

	// Where redis-cell leaves a key without an expiry (rows 10 and 14e),
	// cellserver answers the same but never keeps a key forever.
	for _, k := range []string{"qneg", "k14e"} {
		if ms, err := rdb.PTTL(ctx, k).Result(); err != nil || ms == -1 {
			t.Errorf("PTTL %s = %v, %v: a key without expiry", k, ms, err)
		}
	}
}

// doer is what go-redis clients, pipelines and transactions share.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// throttle calls CL.THROTTLE key ... and returns its five integers.
func throttle(ctx context.Context, rdb doer, args ...string) ([]int64, error) {
	all := make([]any, 0, len(args)+1)
	all = append(all, "CL.THROTTLE")
	for _, a := range args {
		all = append(all, a)
	}
	return rdb.Do(ctx, all...).Int64Slice()
}
