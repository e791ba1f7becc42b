package persist

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// FallbackMode is what shared mode does while the store does not answer.
type FallbackMode int

const (
	// FallbackLocal decides from the local engine while the store is down;
	// when it is back, the store's state wins and the local state is
	// dropped.
	FallbackLocal FallbackMode = iota
	// FallbackError answers ErrStoreUnavailable while the store is down.
	FallbackError
)

// Shared mode's errors.
var (
	// ErrCrossSlot is returned for a THROTTLE.ALL whose keys are in
	// different hash slots of a Redis Cluster.
	ErrCrossSlot error = replyError("CROSSSLOT Keys in request don't hash to the same slot")
	// ErrStoreUnavailable is returned under FallbackError when the store
	// did not answer within the timeout, and after Close.
	ErrStoreUnavailable error = replyError("ERR the shared store is unavailable (--shared-fallback error)")
)

// SharedOptions configures a Shared. Local is required; the other zero
// values work.
type SharedOptions struct {
	// Prefix is put before every key in the store, as --backing-prefix.
	Prefix string
	// Timeout bounds how long an operation waits for the store; 0 means
	// 250ms.
	Timeout time.Duration
	// Fallback says what happens when the store does not answer in time.
	Fallback FallbackMode
	// Local decides while the store is down, under FallbackLocal.
	Local *engine.Engine
	// NoDenyCache turns off the deny cache.
	NoDenyCache bool
	// ScriptOnly makes every compare-and-set go through the script, none
	// as the store's own SET NX or SET IFEQ.
	ScriptOnly bool
	// CacheKeys bounds the keys whose values are cached; 0 means 100,000.
	CacheKeys int
	// Logger gets the store going down and coming back (once each); nil
	// discards it.
	Logger *slog.Logger

	// now, when set, replaces the clock synchronised with the store's
	// (tests): nanoseconds since the epoch.
	now func() int64
	// answered, when set, runs once the store has answered a round and
	// before the batcher takes the answer (tests).
	answered func()
}

// Shared decides rate limits against a store shared by many cellserver
// instances (the package doc's "Shared mode"). It is safe for concurrent
// use; its methods answer through callbacks.
type Shared struct {
	// mode is the store's client and whether it is a Redis Cluster's,
	// replaced once at most, by ask, before the store first counts as up:
	// no round or publish has used it.
	mode    atomic.Pointer[storeMode]
	opts    SharedOptions
	log     *slog.Logger
	channel string // the invalidation channel
	// probeKey is the key the prober's writes name: the instance's own
	// (under the prefix, cellserver:probe: and a random id), so that they
	// never touch a key a client named.
	probeKey string

	mu        sync.Mutex // guards publishes, started, closed, pubsub and the replacement of mode
	publishes []string   // invalidation messages to publish
	started   bool       // Start has started the goroutines
	closed    bool

	// b decides the queued operations, a round trip at a time.
	b *batcher

	downCh chan struct{} // the store went down: probe it (capacity 1)
	pubCh  chan struct{} // invalidations to publish, or the store is back (capacity 1)
	stop   chan struct{}
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine Shared starts
	// published is closed when the publisher has returned, its last
	// invalidations sent.
	published chan struct{}
	pubsub    *redis.PubSub
	// isSubscribed: the invalidations' subscription has taken effect
	// (subscribed).
	isSubscribed atomic.Bool

	down atomic.Bool
	// ifeq: the store has a compare-and-set of its own (SET IFEQ), which
	// single-key groups expected to hold a value use instead of the script
	// (shared_native.go).
	ifeq  atomic.Bool
	clock *sharedClock
	deny  *denyCache
	stats sharedCounters

	// ops are operations answered and released, for reuse (newOp,
	// release): a decision then costs no allocation of its own.
	ops sync.Pool
}

// storeMode is the client Shared sends through and whether the store is a
// Redis Cluster, read together: the hash-slot rule, the rounds, the probes,
// the invalidations' publishes and subscription, and the keyspace commands
// (Keyspace) all see one.
type storeMode struct {
	client  redis.UniversalClient
	cluster bool
	// unasked, when not nil, is a single address's options whose server
	// has not said yet whether it is a Redis Cluster node (unaskedClient):
	// ask asks it at its first answer.
	unasked *redis.UniversalOptions
}

// sharedOp is one queued operation.
type sharedOp struct {
	op       engine.Op
	rules    []engine.Rule // keys copied from the caller's
	keys     []string      // the store's keys (prefixed)
	hash     uint64        // the value cache's hash of keys[0], for an op of one key
	quantity int64
	deadline time.Duration // on the clock's local(): monotonic, one read per op
	// behind: an earlier decision of the caller's connection on its key is
	// still to be answered, so that the deny cache may not answer this one.
	behind bool

	// rules' and keys' room for one rule, the common case, and keyBuf the
	// keys' bytes (op.keys are views of it), kept when the op is released:
	// a released op taken again decides without an allocation.
	rule1  [1]engine.Rule
	key1   [1]string
	keyBuf []byte

	onResult   engine.ThrottleDone          // Throttle
	onDecision func(engine.Decision, error) // ThrottleWindow, ThrottleAll
	// quantities, for ThrottleAllEach, are the rules' own (quantity is
	// then 0, unused), and each the rules' own decisions, which onEach
	// gets.
	quantities []int64
	each       []engine.Decision
	onEach     func(engine.Decision, []engine.Decision, error)

	// Set by the batcher for the round under way.
	d        engine.Decision
	err      error
	at       int64         // the time decided at
	state    engine.Record // the key's state after a single-key refusal
	answered bool
	// viaScript: the op's last compare-and-set was a native SET that
	// conflicted; its next goes through the script, which returns the
	// key's current state.
	viaScript bool
	// abandoned: the op's round ended without its reply, and the call
	// may still be being sent, reading the op's keys: they are not reused.
	abandoned bool
}

// setKeys makes the op's keys, the store's (prefixed), from its rules'
// keys, which alias the caller's request buffers: they are copied into
// keyBuf, which the op keeps while it is live, and each rule's key becomes
// a view of its store key's end. Nothing writes a key.
func (o *sharedOp) setKeys(prefix string) {
	if len(o.rules) == 1 {
		o.keys = o.key1[:]
	} else {
		o.keys = make([]string, len(o.rules))
	}
	n := 0
	for i := range o.rules {
		n += len(prefix) + len(o.rules[i].Key)
	}
	buf := o.keyBuf[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	for i := range o.rules {
		start := len(buf)
		buf = append(buf, prefix...)
		buf = append(buf, o.rules[i].Key...)
		k := buf[start:len(buf):len(buf)] // never grown: buf had room for all
		o.keys[i] = unsafe.String(unsafe.SliceData(k), len(k))
		o.rules[i].Key = k[len(prefix):]
	}
	o.keyBuf = buf
}

// finish answers the op.
func (o *sharedOp) finish(d engine.Decision, err error) {
	if o.answered {
		return
	}
	o.answered = true
	if o.onResult != nil {
		if err != nil {
			o.onResult.Done(engine.Result{}, err)
			return
		}
		o.onResult.Done(d.Seconds(), nil)
		return
	}
	if o.onEach != nil {
		o.onEach(d, o.each, err)
		return
	}
	o.onDecision(d, err)
}

// NewShared returns a Shared over client, which it closes at Close; Start
// starts it. A client from NewStoreClient whose server did not say whether
// it is a Redis Cluster node is asked at the store's first answer.
func NewShared(client redis.UniversalClient, opts SharedOptions) *Shared {
	if opts.Timeout <= 0 {
		opts.Timeout = 250 * time.Millisecond
	}
	if opts.CacheKeys <= 0 {
		opts.CacheKeys = 100_000
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mode := &storeMode{client: client}
	switch c := client.(type) {
	case *redis.ClusterClient:
		mode.cluster = true
	case *unaskedClient:
		mode.client, mode.unasked = c.Client, c.opts
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Shared{
		opts:      opts,
		log:       log,
		channel:   opts.Prefix + "cellserver:invalidate",
		probeKey:  opts.Prefix + "cellserver:probe:" + randomID(),
		downCh:    make(chan struct{}, 1),
		pubCh:     make(chan struct{}, 1),
		stop:      make(chan struct{}),
		ctx:       ctx,
		cancel:    cancel,
		published: make(chan struct{}),
		clock:     newSharedClock(),
		deny:      newDenyCache(opts.CacheKeys, denyBuckets),
	}
	s.mode.Store(mode)
	s.b = newBatcher(s, opts.CacheKeys)
	return s
}

// Client returns the store's client: a single Redis's until a store that
// did not answer at NewStoreClient has said it is a Redis Cluster node, its
// cluster client after.
func (s *Shared) Client() redis.UniversalClient { return s.mode.Load().client }

// Keyspace returns the keyspace commands on the store under the prefix, through
// the client Client returns at each call; a key they delete is invalidated.
func (s *Shared) Keyspace() *StoreKeys {
	return &StoreKeys{client: s.Client, prefix: s.opts.Prefix, deleted: func(keys []string) { s.Invalidate(keys...) },
		unsure: func() bool { return s.mode.Load().unasked != nil }}
}

// ask asks a store that did not answer at NewStoreClient, if not asked yet,
// whether it is a Redis Cluster node, and turns to a cluster client if it
// is. It runs before anything else Shared sends to the store, at Start and
// then on the prober's goroutine (one at a time), and reports whether the
// mode was decided now.
func (s *Shared) ask(ctx context.Context) (decided bool, err error) {
	m := s.mode.Load()
	if m.unasked == nil {
		return false, nil
	}
	cluster, err := isClusterNode(ctx, m.client)
	if err != nil {
		return false, err
	}
	next := &storeMode{client: m.client}
	if cluster {
		next = &storeMode{client: newStoreClusterClient(m.unasked), cluster: true}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if cluster {
			next.client.Close()
		}
		return false, ErrStoreUnavailable
	}
	s.mode.Store(next)
	s.mu.Unlock()
	if cluster {
		m.client.Close()
		s.log.Info("the shared store is a Redis Cluster")
	}
	return true, nil
}

// clockSamples is how many TIME samples Start takes before serving.
const clockSamples = 5

// Start loads the script, synchronises the clock with the store's,
// subscribes to invalidations and starts the goroutines. Under
// FallbackLocal a store that does not answer is not an error: Shared starts
// down and serves from the local engine until the store answers (and
// subscribes then, if it had to ask what the store is).
func (s *Shared) Start(ctx context.Context) error {
	if s.opts.Local == nil {
		return errors.New("persist: SharedOptions.Local is required")
	}
	err := s.connect(ctx)
	if err != nil {
		if s.opts.Fallback == FallbackError {
			return err
		}
		s.log.Warn("shared store unreachable at start: deciding locally until it answers", "err", err)
		s.markDown()
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrStoreUnavailable
	}
	s.started = true
	s.wg.Add(3)
	// Read before the prober runs, which subscribes if it asks.
	known := s.mode.Load().unasked == nil
	later := known && err != nil
	if later {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	go s.b.run()
	go s.probe()
	go s.publisher()
	switch {
	case later:
		// A store that takes connections but does not answer (stopped,
		// failing over) would hold the subscription's first connection
		// for the client's read timeout: it is made on a goroutine.
		go func() {
			defer s.wg.Done()
			s.subscribe()
		}()
	case known:
		s.subscribe()
	}
	return nil
}

// subscribe subscribes to the invalidations through the store's client and
// starts listen, unless Shared is closed. It runs once, when the store's
// mode is known: at Start (or on a goroutine after it), or when ask
// decides it.
//
// It waits (for the timeout, or a second) for the subscription to take
// effect, so that what is published from then on reaches this instance;
// if it has not, listen takes its confirmation when it comes.
func (s *Shared) subscribe() {
	ps := s.mode.Load().client.Subscribe(s.ctx, s.channel)
	wait := max(s.opts.Timeout, time.Second)
	ctx, cancel := context.WithTimeout(s.ctx, wait)
	msg, err := ps.ReceiveTimeout(ctx, wait)
	cancel()
	m, ok := msg.(*redis.Subscription)
	confirmed := err == nil && ok && m.Kind == "subscribe"
	if confirmed {
		s.subscribed()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		ps.Close()
		return
	}
	s.pubsub = ps
	s.wg.Add(1)
	go s.listen(ps.ChannelWithSubscriptions(), confirmed)
}

// connect asks the store whether it is a Redis Cluster node if that is not
// known, loads the script and samples the store's clock.
func (s *Shared) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(s.opts.Timeout, time.Second))
	defer cancel()
	if _, err := s.ask(ctx); err != nil {
		return err
	}
	client := s.mode.Load().client
	if err := casScript.Load(ctx, client).Err(); err != nil {
		return err
	}
	if !s.opts.ScriptOnly {
		s.ifeq.Store(s.probeNative(ctx))
	}
	for range clockSamples {
		sent := s.clock.local()
		t, err := client.Time(ctx).Result()
		if err != nil {
			return err
		}
		s.clock.sample(sent, s.clock.local(), t.UnixNano())
	}
	return nil
}

// Close stops every goroutine and waits for them, and closes the store's
// client. Queued operations are decided locally (FallbackLocal) or get
// ErrStoreUnavailable. The invalidations not published yet are, within the
// timeout; then the subscription and the client are closed before the
// goroutines are waited for: a call to a store that does not answer (a
// round abandoned, a probe) ends at once, not at its deadline.
func (s *Shared) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started, pubsub := s.started, s.pubsub
	s.mu.Unlock()
	s.b.close()
	close(s.stop)
	s.cancel()
	if started {
		<-s.published
	}
	var err error
	if pubsub != nil {
		err = pubsub.Close()
	}
	s.mode.Load().client.Close()
	s.wg.Wait()
	return err
}

// Throttle runs a CL.THROTTLE rule on key and calls done with redis-cell's
// reply. With behind, an earlier decision of the caller's connection on
// key is still to be answered: the deny cache does not answer this one (a
// refund or an admission under another window before it may make the key
// laxer).
func (s *Shared) Throttle(key []byte, q engine.GCRAQuota, quantity int64, behind bool, done engine.ThrottleDone) {
	op := s.newOp(engine.OpThrottle, quantity)
	op.onResult, op.behind = done, behind
	op.rule1[0] = engine.Rule{Key: key, Family: engine.FamilyCL, GCRA: q}
	op.rules = op.rule1[:]
	s.submit(op)
}

// ThrottleWindow runs one SW, SWC, FW or LB rule; behind as for Throttle.
func (s *Shared) ThrottleWindow(r engine.Rule, quantity int64, behind bool, done func(engine.Decision, error)) {
	op := s.newOp(engine.OpWindow, quantity)
	op.onDecision, op.behind = done, behind
	op.rule1[0] = r
	op.rules = op.rule1[:]
	s.submit(op)
}

// ThrottleAll runs every rule on one quantity, all or nothing, as
// engine.ThrottleAll does. In a Redis Cluster the keys must share a hash
// slot (ErrCrossSlot otherwise).
func (s *Shared) ThrottleAll(rules []engine.Rule, quantity int64, done func(engine.Decision, error)) {
	op := s.newOp(engine.OpAll, quantity)
	op.onDecision = done
	if len(rules) == 1 {
		op.rule1[0] = rules[0]
		op.rules = op.rule1[:]
	} else {
		op.rules = append([]engine.Rule(nil), rules...)
	}
	s.submit(op)
}

// ThrottleAllEach runs every rule, all or nothing, each with its own
// quantity (quantities[i] for rules[i]; 0 checks without recording, as
// RLS's hits_addend does), as engine.ThrottleAllEach does, in one atomic
// step in the store; done gets the combined decision and each rule's own,
// in a slice it may keep. A negative quantity, which takes nothing back
// here, is engine.ErrNegativeQuantity. In a Redis Cluster the keys must
// share a hash slot (ErrCrossSlot otherwise).
func (s *Shared) ThrottleAllEach(rules []engine.Rule, quantities []int64, done func(d engine.Decision, each []engine.Decision, err error)) {
	if len(quantities) != len(rules) {
		panic("persist: ThrottleAllEach needs a quantity per rule")
	}
	for _, q := range quantities {
		if q < 0 {
			done(engine.Decision{}, nil, engine.ErrNegativeQuantity)
			return
		}
	}
	op := s.newOp(engine.OpAll, 0)
	op.onEach = done
	op.rules = append([]engine.Rule(nil), rules...)
	op.quantities = append([]int64(nil), quantities...)
	op.each = make([]engine.Decision, len(rules))
	s.submit(op)
}

// denyable reports whether the deny cache answers ops like o: a command of
// one rule (CL.THROTTLE, a window's), not THROTTLE.ALL nor RLS's requests,
// whose refusals it neither remembers nor looks up.
func (o *sharedOp) denyable() bool { return o.op != engine.OpAll }

// decide is engine.Decide, or engine.DecideEach for a ThrottleAllEach, on
// states (one a rule) at at.
func (o *sharedOp) decide(at int64, states []engine.Record) (engine.Decision, error) {
	if o.quantities != nil {
		return engine.DecideEach(at, o.rules, states, o.quantities, o.each)
	}
	return engine.Decide(at, o.op, o.rules, states, o.quantity)
}

// newOp returns a zeroed operation, a released one if there is one.
func (s *Shared) newOp(kind engine.Op, quantity int64) *sharedOp {
	op, _ := s.ops.Get().(*sharedOp)
	if op == nil {
		op = new(sharedOp)
	}
	op.op, op.quantity = kind, quantity
	return op
}

// release gives back an answered operation that nothing refers to any
// more: not the queue, nor a round under way, nor a call that may still be
// being sent (its keys' bytes are reused). Whatever keeps one of its keys
// longer (the deny cache, the keys to drop) keeps a copy.
func (s *Shared) release(op *sharedOp) {
	buf, abandoned := op.keyBuf, op.abandoned
	*op = sharedOp{}
	if !abandoned && cap(buf) <= maxKeptKeyBuf {
		op.keyBuf = buf[:0]
	}
	s.ops.Put(op)
}

// maxKeptKeyBuf is the most key bytes a released op keeps for reuse.
const maxKeptKeyBuf = 1 << 10

// submit validates op, answers it from the deny cache if it can, and
// queues it for the batcher otherwise; an op answered here is released.
func (s *Shared) submit(op *sharedOp) {
	if !s.queued(op) {
		s.release(op)
	}
}

// queued is submit's work: it reports whether op was queued, or else
// answered.
func (s *Shared) queued(op *sharedOp) bool {
	local := s.clock.local()
	now := s.nowAt(local)
	// Validation that does not depend on any key's state, answered at once.
	if err := engine.Validate(op.op, op.rules); err != nil {
		op.finish(engine.Decision{}, err)
		return false
	}
	op.setKeys(s.opts.Prefix)
	if len(op.keys) > 1 && s.mode.Load().cluster {
		if crossSlot(op.keys) {
			op.finish(engine.Decision{}, ErrCrossSlot)
			return false
		}
	}
	if !s.opts.NoDenyCache && op.denyable() && !op.behind && !s.down.Load() {
		if d, ok := s.deny.lookup(op, now); ok {
			s.stats.denyHits.Add(1)
			op.finish(d, nil)
			return false
		}
	}
	if len(op.keys) == 1 {
		// Here, on the caller's goroutine, not in the batcher's round,
		// which the store waits for.
		op.hash = s.b.cache.hash(op.keys[0])
	}
	op.deadline = local + s.opts.Timeout
	if !s.b.enqueue(op) {
		op.finish(engine.Decision{}, ErrStoreUnavailable)
		return false
	}
	return true
}

// nowAt is now, the local clock being at local.
func (s *Shared) nowAt(local time.Duration) int64 {
	if s.opts.now != nil {
		return s.opts.now()
	}
	return s.clock.at(local)
}

// Now is the time this instance decides at in the store: the store's
// clock as it estimates it.
func (s *Shared) Now() time.Time { return time.Unix(0, s.now()) }

// now is the time decisions are made at: the store's clock as estimated
// locally, in nanoseconds since the epoch.
func (s *Shared) now() int64 {
	if s.opts.now != nil {
		return s.opts.now()
	}
	return s.clock.now()
}

// fallback answers op without the store: from the local engine under
// FallbackLocal, with ErrStoreUnavailable under FallbackError.
func (s *Shared) fallback(op *sharedOp) {
	if op.answered {
		return
	}
	if s.opts.Fallback == FallbackError {
		op.finish(engine.Decision{}, ErrStoreUnavailable)
		return
	}
	s.stats.localDecisions.Add(1)
	switch op.op {
	case engine.OpThrottle:
		r := op.rules[0]
		res, err := s.opts.Local.Throttle(nil, r.Key, r.GCRA, op.quantity)
		op.answered = true
		op.onResult.Done(res, err)
	case engine.OpWindow:
		d, err := s.opts.Local.ThrottleWindow(nil, op.rules[0], op.quantity)
		op.finish(d, err)
	default:
		if op.quantities != nil {
			d, err := s.opts.Local.ThrottleAllEach(nil, op.rules, op.quantities, op.each)
			op.finish(d, err)
			return
		}
		d, err := s.opts.Local.ThrottleAll(nil, op.rules, op.quantity)
		op.finish(d, err)
	}
}

// markDown notes that the store stopped answering, once, and wakes the
// prober.
func (s *Shared) markDown() {
	if s.down.Swap(true) {
		return
	}
	s.stats.downs.Add(1)
	if s.opts.Fallback == FallbackError {
		s.log.Warn("shared store down: answering errors until it is back")
	} else {
		s.log.Warn("shared store down: deciding locally until it is back")
	}
	select {
	case s.downCh <- struct{}{}:
	default:
	}
}

// probeInterval is the time between two PINGs to a store that is down.
const probeInterval = 100 * time.Millisecond

// probe PINGs the store while it is down and tells the batcher when it
// answers.
func (s *Shared) probe() {
	defer s.wg.Done()
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.downCh:
		case <-s.stop:
			return
		}
		for {
			select {
			case <-t.C:
			case <-s.stop:
				return
			}
			ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
			decided, err := s.ask(ctx)
			if decided {
				s.subscribe()
			}
			if err == nil {
				err = casScript.Load(ctx, s.Client()).Err() // a PING that also reloads the script
			}
			if err == nil {
				err = s.probeWrite(ctx)
			}
			if err == nil && !s.opts.ScriptOnly {
				s.ifeq.Store(s.probeNative(ctx))
			}
			cancel()
			if err == nil {
				select {
				case s.b.up <- struct{}{}:
				default:
				}
				break
			}
		}
	}
}

// probeWrite reports whether the store takes writes: a store that answers
// but refuses them (out of memory under noeviction, a read-only replica
// after a failover, a failed save under stop-writes-on-bgsave-error) fails
// every round, and counting it as back would empty the local engine again
// and again while nothing enforced the limits. The probe is a SET XX of a
// key that does not exist: a write the store refuses as it would any, which
// writes nothing. Its key is the instance's own (probeKey), so that no
// key a client named is ever written by it.
func (s *Shared) probeWrite(ctx context.Context) error {
	err := s.Client().Do(ctx, "set", s.probeKey, "x", "xx").Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// replyError is an error whose text is the reply a client gets, its first
// word the error code (commands.ReplyError).
type replyError string

func (e replyError) Error() string { return string(e) }

// Reply is the error's reply text.
func (e replyError) Reply() string { return string(e) }
