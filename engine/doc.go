// Package engine holds cellserver's keyspace and its rate-limit algorithms:
// sharded maps with B-tree expiry indexes, and each algorithm as a pure
// function of (now, state, parameters, quantity). It knows nothing of RESP,
// sockets or logging.
package engine
