package persist

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// LeaseKey is the key, under the prefix, that a write-behind cellserver
// holds while it writes to a store: a second one starting on the same store
// and prefix finds it taken and warns. Load passes over it.
const LeaseKey = "cellserver:write-behind-lease"

// leaseTTL is how long a lease lives unless renewed; it is renewed every
// third of that, so an instance that stops without a word frees it soon.
const leaseTTL = 15 * time.Second

// renewLease extends the lease only if this instance still holds it.
var renewLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// releaseLease deletes the lease only if this instance holds it.
var releaseLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`)

// leaseSlack is how much longer than its age allows another instance's
// lease must have left to live for Lease to count it renewed: more than
// the store's and this clock's rounding, far less than a renewal adds.
const leaseSlack = leaseTTL / 10

// Lease detects a second write-behind cellserver on one store and prefix:
// write-behind keeps each instance's state in its memory, so two of them
// would overwrite each other's keys and each enforce its own limit. It
// never stops the instance; it logs, once per contention, that shared mode
// is the way to run several. Another instance's lease counts once it is
// seen renewed, so that the lease an instance left when it crashed, which
// runs out unrenewed, does not make it warn about itself when it restarts.
// Close stops its goroutine and frees the key.
type Lease struct {
	client redis.UniversalClient
	key    string
	id     string
	log    *slog.Logger
	every  time.Duration
	now    func() time.Time

	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu     sync.Mutex // guards what follows
	holder string     // who held the lease at the last look; id when this instance
	// ttl and seen: another holder's lease's time to live (ms) at the
	// last look, and when that was.
	ttl  int64
	seen time.Time
	// live: another holder's lease was seen renewed.
	live bool
}

// StartLease takes the lease under prefix, or warns that another instance
// holds it, and keeps looking every few seconds until Close.
func StartLease(client redis.UniversalClient, prefix string, log *slog.Logger) *Lease {
	return startLease(client, prefix, log, time.Now)
}

// startLease is StartLease at the clock now.
func startLease(client redis.UniversalClient, prefix string, log *slog.Logger, now func() time.Time) *Lease {
	l := &Lease{
		client: client, key: prefix + LeaseKey, id: randomID(), log: log, now: now,
		every: leaseTTL / 3, stop: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l
}

// run takes or renews the lease until Close.
func (l *Lease) run() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		l.check()
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
	}
}

// check takes the lease if it is free, renews it if it is ours, and warns
// when another instance's holds it and is renewed (once until that
// changes).
func (l *Lease) check() {
	ctx, cancel := context.WithTimeout(context.Background(), l.every)
	defer cancel()
	holder, ttl := l.id, int64(0)
	if ok, err := l.client.SetNX(ctx, l.key, l.id, leaseTTL).Result(); err != nil {
		return // the store is down: the writer reports that
	} else if !ok {
		n, err := renewLease.Run(ctx, l.client, []string{l.key}, l.id, leaseTTL.Milliseconds()).Int()
		if err != nil {
			return
		}
		if n == 0 {
			pipe := l.client.Pipeline()
			get, pttl := pipe.Get(ctx, l.key), pipe.Do(ctx, "pttl", l.key)
			if _, err := pipe.Exec(ctx); err != nil {
				return // gone meanwhile (the next look takes it), or the store failed
			}
			holder = get.Val()
			if ttl, err = pttl.Int64(); err != nil {
				return
			}
			if ttl == -2 {
				return // expired between the two: the next look takes it
			}
		}
	}
	now := l.now()
	l.mu.Lock()
	warn := false
	switch {
	case holder == l.id:
		l.live = false
	case holder != l.holder:
		l.ttl, l.seen, l.live = ttl, now, false
	default:
		// The same other holder as at the last look: renewed if it has
		// more left than its age allows (or never expires).
		renewed := ttl < 0 || ttl > l.ttl-now.Sub(l.seen).Milliseconds()+leaseSlack.Milliseconds()
		l.ttl, l.seen = ttl, now
		warn = renewed && !l.live
		l.live = l.live || renewed
	}
	l.holder = holder
	l.mu.Unlock()
	if warn {
		l.log.Warn("another write-behind cellserver writes to this backing store and prefix: each keeps its own state, so the two overwrite each other's keys and each enforces its own limit; to run several cellservers on one store, use --backing-mode shared",
			"lease_key", l.key, "holder", holder, "self", l.id)
	}
}

// randomID is 16 random hex digits: an instance's name in the store.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Contested reports whether another instance holds the lease, and was
// seen renewing it.
func (l *Lease) Contested() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live
}

// Close stops looking and frees the lease if this instance holds it.
func (l *Lease) Close() {
	l.once.Do(func() { close(l.stop) })
	<-l.done
	// Briefly: a store that is down must not hold up a shutdown, and the
	// lease frees itself within leaseTTL anyway.
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	_ = releaseLease.Run(ctx, l.client, []string{l.key}, l.id).Err()
}
