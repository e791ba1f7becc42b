package main

import (
	"context"
	"fmt"
	"strconv"
)

// The --backing-prefix of the shared-mode cellservers, the current one and
// the baseline, so that each one's keys in the Redis they share with the
// scripts are its own.
const (
	sharedPrefix     = "bench:shared:"
	sharedBasePrefix = "bench:shared-base:"
)

// sharedArgs are the arguments that make a cellserver decide in the Redis at
// redisAddr (shared mode), as many instances would share it, its keys under
// prefix.
func sharedArgs(redisAddr, prefix string) []string {
	return []string{"--backing-mode", "shared", "--backing-redis", "redis://" + redisAddr, "--backing-prefix", prefix}
}

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
