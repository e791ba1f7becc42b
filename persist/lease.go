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

// Lease detects a second write-behind cellserver on one store and prefix:
// write-behind keeps each instance's state in its memory, so two of them
// would overwrite each other's keys and each enforce its own limit. It
// never stops the instance; it logs, once per contention, that shared mode
// is the way to run several. Close stops its goroutine and frees the key.
type Lease struct {
	client redis.UniversalClient
	key    string
	id     string
	log    *slog.Logger
	every  time.Duration

	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu     sync.Mutex // guards holder
	holder string     // who held the lease at the last look; id when this instance
}

// StartLease takes the lease under prefix, or warns that another instance
// holds it, and keeps looking every few seconds until Close.
func StartLease(client redis.UniversalClient, prefix string, log *slog.Logger) *Lease {
	l := &Lease{
		client: client, key: prefix + LeaseKey, id: randomID(), log: log,
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
// when another instance's holds it (once until that changes).
func (l *Lease) check() {
	ctx, cancel := context.WithTimeout(context.Background(), l.every)
	defer cancel()
	holder := l.id
	if ok, err := l.client.SetNX(ctx, l.key, l.id, leaseTTL).Result(); err != nil {
		return // the store is down: the writer reports that
	} else if !ok {
		n, err := renewLease.Run(ctx, l.client, []string{l.key}, l.id, leaseTTL.Milliseconds()).Int()
		if err != nil {
			return
		}
		if n == 0 {
			if holder, err = l.client.Get(ctx, l.key).Result(); err != nil {
				return
			}
		}
	}
	l.mu.Lock()
	was := l.holder
	l.holder = holder
	l.mu.Unlock()
	if holder != l.id && holder != was {
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

// Contested reports whether another instance held the lease at the last
// look.
func (l *Lease) Contested() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder != "" && l.holder != l.id
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
