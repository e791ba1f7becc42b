// Package persist keeps a copy of cellserver's keyspace in a backing Redis:
// Redis implements Backing over go-redis, and Writer writes the
// engine's changed keys behind, off the request path, and loads them back at
// start.
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
// The other families (SW, SWC and FW) are stored under the same key name,
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
//
// start is the current bucket's start (a multiple of the key's window),
// count the requests counted in it, previous count those of the bucket
// before it. An SW key's n requests (n ≥ 1) are listed oldest first, each
// time as the difference from the one before it (the first from 0, so its
// own time), with its quantity (≥ 1); a request costs about 5 bytes
// (e.g. 4 for a gap of 10 ms, 1 for a quantity below 128). Counts and
// quantities fit 32 bits. The window itself is not stored: each command
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
package persist
