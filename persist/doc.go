// Package persist keeps cellserver's state in a backing Redis: Redis
// implements Backing over go-redis, and Writer writes the engine's changed
// keys behind, off the request path, and loads them back at start; Shared
// decides against a store that many cellserver instances share.
//
// # Format
//
// A key keeps its name in the backing Redis, after an optional prefix
// (empty by default, so that redis-cell's keys are found where redis-cell
// left them).
//
// A CL key (engine.FamilyCL, written by CL.THROTTLE) is stored exactly as
// redis-cell stores it: a plain string holding the theoretical arrival time
// (TAT) as a decimal unsigned integer of nanoseconds since the Unix epoch,
// with the key's expiry as an absolute time:
//
//	SET <prefix><key> <tat> PXAT <expire-at-ms>
//
// so one Redis can serve redis-cell and cellserver in turn. A deleted key is
// DEL <prefix><key>. PXAT needs Redis 6.2 or later.
//
// The other families (SW, SWC, FW and LB) are stored under the same key name,
// with the key's expiry, as a string in cellserver's own binary format:
//
//	SET <prefix><key> <value> PXAT <expire-at-ms>
//
// The value is a version byte, 0x01 (never an ASCII digit, so no value of
// one format reads as the other), a family tag ending in ':', and a payload
// of varints as encoding/binary writes them: uvarint for unsigned numbers,
// varint (zigzag) for signed ones. Times are nanoseconds since the Unix
// epoch.
//
//	FW:  0x01 "fw:"  varint(start) uvarint(count)
//	SWC: 0x01 "swc:" varint(start) uvarint(count) uvarint(previous count)
//	SW:  0x01 "sw:"  uvarint(n) n × ( varint(time − previous time) uvarint(quantity) )
//	LB:  0x01 "lb:"  varint(tail)
//
// start is the current bucket's start (a multiple of the key's window),
// count the requests counted in it, previous count those of the bucket
// before it. An SW key's n requests (n ≥ 1) are listed oldest first, each
// time as the difference from the one before it (the first from 0, so its
// own time), with its quantity (≥ 1); a request costs about 5 bytes
// (e.g. 4 for a gap of 10 ms, 1 for a quantity below 128). Counts and
// quantities fit 32 bits. An LB key's tail is its queue's next free
// departure (the key expires in the millisecond the queue empties). The
// window (an LB key's period and MAXWAIT) is not stored: each command
// names it, as with redis-cell's period. For example, as redis-cli shows
// them, an SWC key in the bucket that starts at 1,795,336,190 s with 7
// requests in it and 12 in the one before (16 bytes), and an SW key holding
// a request at 1,795,336,190 s, one 10 ms later and one of quantity 5
// 250 ms after that (26 bytes):
//
//	"\x01swc:\x80\xb0\xd3\x95\x96\xb0\xa8\xea1\a\x0c"
//	"\x01sw:\x03\x80\xb0\xd3\x95\x96\xb0\xa8\xea1\x01\x80\xda\xc4\t\x01\x80\xca\xb5\xee\x01\x05"
//
// A value that starts with 0x01 but does not decode exactly (another
// version, an unknown tag, a truncated or overlong payload, a count above
// 32 bits, a quantity of 0, an SW count larger than the value could hold)
// is skipped and counted, as is such a value without an expiry.
//
// # Loading
//
// Load walks the keys under the prefix with SCAN (on every master of a
// cluster) and reads each batch with one pipeline of GET and PTTL. A key
// whose value is neither a decimal TAT nor a state in the format above, or
// that holds another Redis type, is skipped and counted. A CL key without
// an expiry (redis-cell leaves one on some errors) expires at its TAT: a
// TAT in the past limits nothing.
//
// # Shared mode
//
// In shared mode (Shared) the store holds the only authoritative state and
// many cellserver instances enforce one limit on it; no interleaving of
// them admits more than the limit. Keys are in the format above, so
// redis-cell, write-behind and shared mode read each other's keys.
//
// Decisions are made in Go, by engine.Decide, the keyspace's own
// algorithms run on a state decoded from the store: there is one
// implementation of each algorithm, proved equal to the keyspace by the
// engine's model test, and none in Lua to keep equal to it. The store only
// checks and writes, with one script (EVALSHA, or EVAL after NOSCRIPT: a
// flushed script cache, a failover): it reads every key of the call with
// one MGET and, for each group of keys, compares every key's value with the
// one the decision was made on (absent counts as a value, and so does a key
// of another type) and, only if all match, writes the new values (SET key
// value PXAT ms, or DEL, or nothing for a key left as it was; a new key
// alone in its group is confirmed absent by its SET's NX, another key
// expected absent by EXISTS); otherwise it writes nothing of that group and
// returns its keys' current values and PTTLs. The script also returns the
// store's TIME. It has no arithmetic, so it cannot disagree with the
// engine.
//
// The expected values come from a value cache of the values last seen
// (SharedOptions.CacheKeys keys, evicted arbitrarily, found by a 64-bit
// hash of the key: two keys whose hashes collided would only conflict): a
// key not in it is expected absent: a new key costs one round trip, a key another instance
// wrote since costs one more (the conflict). A conflict replaces the cached
// value by the store's and decides the group's operations again in the
// next round trip, at once; Stats counts conflicts. An operation is
// answered only once the compare-and-set that verified its decision
// succeeded: a refusal too, so a refusal is never made on a stale state.
//
// Every operation in flight in an instance shares round trips: one
// goroutine sends a batch when none is on the wire (no timer) and the next
// batch gathers meanwhile. A batch's operations on one key are applied in
// arrival order, each deciding on the state the one before left; the key's
// compare-and-set carries the first expected value and the last new one.
// Keys linked by operations (a THROTTLE.ALL links its keys) form a group,
// checked and written all or nothing; groups succeed or fail on their own.
// A THROTTLE.ALL refused by one rule writes no key. On a single Redis a
// batch is one EVALSHA per about 1,000 keys (so that none holds the store
// long); on a Redis Cluster it is one EVALSHA per hash slot, split alike,
// all in one pipeline (go-redis follows MOVED and ASK and runs the nodes in
// parallel). A THROTTLE.ALL whose keys are in different slots is refused
// with ErrCrossSlot (CROSSSLOT): keys that share a hash tag ({user42}:a,
// {user42}:b) are decided atomically.
//
// One clock: each reply carries the store's TIME, and decisions are made
// at the local monotonic clock plus the offset of the sample with the
// smallest round trip among the last 16, within an error bound of half
// that round trip (Stats shows both; with several cluster nodes, their
// clocks' own differences add to it). A key's time never goes back: a
// decision on it is made no earlier than the newest time its state holds
// (an SW log's newest request, an SWC or FW bucket's start), so two
// instances whose estimates differ by the bound never record an SW
// request out of order nor roll a bucket back.
//
// No operation waits longer than SharedOptions.Timeout for the store. When a
// round trip fails or an operation waits that long, the store is marked down (logged
// when it starts and when it ends) and, under FallbackLocal, operations
// are decided by the local engine, at once while it stays down; a prober
// tries the store every 100ms, and when it answers the value cache and the
// local engine are emptied: the store's state wins, local decisions are
// not merged into it. A round trip that timed out may still be carried out
// by the store later; its compare-and-sets then record requests that were
// also answered locally, which only makes the store stricter. Under
// FallbackError operations get ErrStoreUnavailable instead.
//
// The deny cache (on unless SharedOptions.NoDenyCache): when a single-key
// operation was refused by a decision that a compare-and-set verified, the
// same rule on that key with a quantity at least as large is refused from
// the remembered state, without a round trip, until the refusal's
// retry_after has passed (or, when the request can never be admitted, the
// key's reset). Admitted requests only make a key stricter, so such a
// refusal is one the store would give; a reset or a refund (a negative
// CL quantity) makes it laxer. A DEL or UNLINK through any cellserver calls
// Invalidate, and a refund decided here invalidates its key too: the keys
// are published on <prefix>cellserver:invalidate, and every instance drops
// them.
// A reset made in the store by something else (a DEL from redis-cli,
// another application) is not seen until the remembered time passes: a
// request may be refused until then that the store would admit.
package persist
