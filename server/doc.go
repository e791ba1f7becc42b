// Package server serves the Redis protocol over TCP: it accepts connections,
// frames requests under Redis's protocol limits before redcon parses them,
// runs every command through a Handler with its panics recovered, writes
// replies in RESP2 or RESP3, and shuts down gracefully. It knows nothing
// about rate limits.
package server
