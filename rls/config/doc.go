// Package config loads rate limit configurations in envoyproxy/ratelimit's
// YAML format and matches RLS v3 descriptors against them.
//
// A file envoyproxy/ratelimit accepts is accepted here and decides the same
// way: the same known keys (an unknown key is an error), the same checks in
// the same order with the same words, the same matching (per level: the
// entry's "key_value" exactly, then the level's wildcards, values ending in
// '*', in file order, then the key alone), the same metric keys (FullKey,
// with detailed_metric, value_to_metric and share_threshold), and the same
// replaces. A rejected file's error (*Error) names the file, the line where
// there is one, and the problem.
//
// cellserver adds three keys, valid only inside a rate_limit block:
//
//	rate_limit:
//	  unit: minute
//	  requests_per_unit: 10
//	  unit_multiplier: 5       # the window is 5 minutes; default 1
//	  algorithm: gcra          # fixed_window (default), sliding_window, sliding_counter, gcra
//	  burst: 3                 # gcra only: redis-cell's max_burst; default 0
//
// # State keys
//
// Match returns, with a limit, the key under which the engine keeps its
// state:
//
//	rls:<family>:{<domain>}|<key>=<value>|<key>=<value>...
//
// <family> is the engine family of the limit's algorithm (fw, sw, swc or
// cl), so that a reload that changes a limit's algorithm starts it afresh
// rather than meeting a key of another type. Every entry of the descriptor
// is in the key, with the request's value, as envoyproxy/ratelimit's cache
// keys have them: a key-only rule counts each value apart. An entry that
// matched a share_threshold wildcard has the wildcard's value instead
// ("files/*"), so every value it matches shares one count. In the domain,
// keys and values '%', '|', '=', '*', '{' and '}' are escaped as %25, %7C,
// %3D, %2A, %7B and %7D; only a shared pattern's final '*' is left bare.
// A value longer than LongValue bytes (a long path or header) is "%H" and
// its SHA-256 in hex instead, which no escaped value can be, so that keys
// (and metric labels) stay bounded while such values are counted too.
// So different (family, domain, entries, values) never give one key (but
// for two long values of one digest), and a
// key reads back with the Redis-protocol commands (FW.THROTTLE, TTL, TYPE),
// while the "rls:" prefix keeps the keys apart from those the commands
// write.
//
// The braced domain is the key's Redis Cluster hash tag: every key of one
// domain is in one hash slot, so a request's keys (one domain) can be
// decided together in a cluster, at the cost of one domain's keys all
// living on one node.
//
// A Config is immutable; Watch loads a new one when the files change.
package config
