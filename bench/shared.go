package main

import (
	"context"
	"fmt"
	"strconv"
)

// sharedArgs are the arguments that make a cellserver decide in the Redis at
// redisAddr (shared mode), as many instances would share it, with the
// default --backing-prefix (none): its keys in the store are named as the
// client names them, as long as the scripts' keys. The shared-mode
// baseline's tests use keys of their own (baseKey).
func sharedArgs(redisAddr string) []string {
	return []string{"--backing-mode", "shared", "--backing-redis", "redis://" + redisAddr}
}

// baseKey is the key a shared-mode test's run on the baseline uses instead
// of key: as long, and not one the current cellserver's tests use in the
// Redis they share (theirs start with "sh").
func baseKey(key string) string { return "b" + key[1:] }

// sharedCounters are the counters of a shared-mode cellserver's INFO
// persistence that a run's figures are taken from.
type sharedCounters struct {
	roundTrips int64 // shared_round_trips
	decisions  int64 // shared_decisions
	local      int64 // shared_local_decisions: made without the store
}

// readSharedCounters reads them from the cellserver at addr.
func readSharedCounters(ctx context.Context, addr string) (sharedCounters, error) {
	rdb := newClient(addr, 1)
	defer rdb.Close()
	info, err := readInfo(ctx, rdb, "persistence")
	if err != nil {
		return sharedCounters{}, err
	}
	var c sharedCounters
	for _, f := range []struct {
		name string
		v    *int64
	}{{"shared_round_trips", &c.roundTrips}, {"shared_decisions", &c.decisions}, {"shared_local_decisions", &c.local}} {
		if *f.v, err = strconv.ParseInt(info[f.name], 10, 64); err != nil {
			return c, fmt.Errorf("INFO persistence's %s is %q: is the server in shared mode?", f.name, info[f.name])
		}
	}
	return c, nil
}

// perRoundTrip is the decisions per round trip between c and later, 0 when
// no round trip was made.
func (c sharedCounters) perRoundTrip(later sharedCounters) float64 {
	trips := later.roundTrips - c.roundTrips
	if trips <= 0 {
		return 0
	}
	return float64(later.decisions-c.decisions) / float64(trips)
}
