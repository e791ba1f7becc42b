// Package persist keeps a copy of cellserver's keyspace in a backing Redis:
// Redis implements engine.Backing over go-redis, and Writer writes the
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
// The other limit families, once they exist, will be stored under the same
// key name in a compact format of their own, documented here when the
// family is added; a loader meeting a value it cannot read skips the key and
// counts it.
//
// # Loading
//
// Load walks the keys under the prefix with SCAN (on every master of a
// cluster) and reads each batch with one pipeline of GET and PTTL. A key
// whose value is not a decimal TAT, or that holds another Redis type, is
// skipped and counted. A key without an expiry (redis-cell leaves one on
// some errors) expires at its TAT: a TAT in the past limits nothing.
package persist
