package persist

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// A group of one key that is set goes as the store's own SET, in the
// round's pipeline beside the script's calls for the other groups and one
// TIME for the clock, where the store has the command it needs:
//
//	SET key new PXAT expiry NX              (the key is known absent: every store)
//	SET key new PXAT expiry IFEQ expected   (the key holds a string: a store
//	                                         with SET IFEQ, Valkey 8.1, Redis 8.4)
//
// OK is the group written; nil is a conflict, and the group's ops are
// decided again through the script, whose reply carries the key's current
// state. The store spends less CPU on such a key than the script does
// (README, Shared mode): about a sixth less for a new key on Redis 7.0,
// about half for a key that holds a value on Valkey 8.1.

// nativeCmd is one group's SET, kept from one round to the next with its
// commands, whose arguments point into the round's compare-and-sets.
type nativeCmd struct {
	g      *group
	cmd    *redis.StatusCmd // eq or nx, this round's
	eq, nx *redis.StatusCmd
	eqArgs [7]any
	nxArgs [6]any
}

// nativeEligible reports whether g's compare-and-set can be a SET: one
// key, set, known to be absent (its value expired, or the store or this
// instance said so), or expected to hold a string when the store has SET
// IFEQ (ifeq), and none of its ops sent back to the script by a conflict.
// A key the value cache does not hold goes through the script, whose
// conflict carries its state: sent as SET NX, it would cost a round trip
// more whenever it exists (after a restart, beyond the cache's bound, or
// made by another instance).
func nativeEligible(g *group, ifeq bool) bool {
	if len(g.cas) != 1 || g.cas[0].write != writeSet {
		return false
	}
	e := g.cas[0].expected
	knownAbsent := e.kind == kindAbsent && !e.unseen
	if !knownAbsent && (e.kind != kindValue || !ifeq) {
		return false
	}
	for _, op := range g.ops {
		if op.viaScript {
			return false
		}
	}
	return true
}

// nativeCmd returns the round's next SET, for g.
func (rb *roundBufs) nativeCmd(g *group) *nativeCmd {
	if rb.nnative == len(rb.natives) {
		rb.natives = append(rb.natives, &nativeCmd{})
	}
	n := rb.natives[rb.nnative]
	rb.nnative++
	n.g = g
	return n
}

// command fills in the SET's arguments and returns it, its reply and
// error cleared. In a cluster the key is a string, which go-redis reads
// to find its slot (and boxes with an allocation); elsewhere a pointer.
func (n *nativeCmd) command(ctx context.Context, cluster bool) *redis.StatusCmd {
	k := &n.g.cas[0]
	var key any = &k.key
	if cluster {
		key = k.key
	}
	if k.expected.kind == kindValue {
		n.eqArgs = [7]any{"set", key, k.newVal.arg(), "pxat", &k.newVal.expireAtMs, "ifeq", k.expected.arg()}
		if n.eq == nil {
			n.eq = redis.NewStatusCmd(ctx, n.eqArgs[:]...)
		}
		n.cmd = n.eq
	} else {
		n.nxArgs = [6]any{"set", key, k.newVal.arg(), "pxat", &k.newVal.expireAtMs, "nx"}
		if n.nx == nil {
			n.nx = redis.NewStatusCmd(ctx, n.nxArgs[:]...)
		}
		n.cmd = n.nx
	}
	n.cmd.SetVal("")
	n.cmd.SetErr(nil)
	return n.cmd
}

// tallyNative returns how many ops the round's SETs decide (those of the
// groups written).
func tallyNative(natives []*nativeCmd) int {
	n := 0
	for _, nc := range natives {
		if nc.cmd.Err() != nil {
			continue
		}
		for _, op := range nc.g.ops {
			if !op.answered {
				n++
			}
		}
	}
	return n
}

// probeNative reports whether the store has SET IFEQ: a SET IFEQ of a key
// that does not exist writes nothing and answers nil, where a store
// without it answers a syntax error. In a cluster the probe's key is one
// master's; a master without it answers the first SET IFEQ it is sent
// with the same error, and applyNative stops sending them.
func (s *Shared) probeNative(ctx context.Context) bool {
	cmd := redis.NewStatusCmd(ctx, "set", s.probeKey, "x", "ifeq", "y")
	_ = s.Client().Process(ctx, cmd)
	return errors.Is(cmd.Err(), redis.Nil)
}

// applyNative takes the replies of a round's SETs, after apply took the
// script's: a group written answers its ops; one that conflicted, or whose
// key holds another type, is decided again through the script; a store
// that turns out not to know SET IFEQ (a failover to an older server) is
// not sent it again until the prober finds it does (a syntax error, which
// SET NX never gets from a store of 6.2 or later, says so); any other
// error marks the store down and the group's ops fall back.
func (b *batcher) applyNative(natives []*nativeCmd, timeNs int64, timeErr error, sent, recv time.Duration, retry []*sharedOp) []*sharedOp {
	if len(natives) == 0 {
		return retry
	}
	s := b.s
	if timeErr == nil {
		s.clock.sample(sent, recv, timeNs)
	}
	s.stats.nativeSets.Add(int64(len(natives)))
	for _, nc := range natives {
		g, err := nc.g, nc.cmd.Err()
		switch {
		case err == nil:
			b.written(g)
			continue
		case errors.Is(err, redis.Nil):
			s.stats.conflicts.Add(1)
		case redis.HasErrorPrefix(err, "ERR syntax"):
			s.ifeq.Store(false)
		case redis.HasErrorPrefix(err, "WRONGTYPE"):
		default:
			s.log.Debug("shared store call failed", "err", err)
			s.markDown()
			b.publishLaxer(g) // the reply may be what was lost
			for _, op := range g.ops {
				s.fallback(op)
			}
			continue
		}
		for _, op := range g.ops {
			if !op.answered {
				op.viaScript = true
				retry = append(retry, op)
			}
		}
	}
	b.answerSettled()
	return retry
}
