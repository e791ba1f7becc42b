// Package server serves the Redis protocol over TCP or TLS: it accepts
// connections (refusing them past MaxClients, and remote ones in protected
// mode), parses requests in place under Redis's protocol limits (tighter
// ones for a client that has yet to authenticate), closes idle clients,
// runs every command through a Handler with its panics recovered, writes
// replies in RESP2 or RESP3, flushed once per batch of pipelined requests,
// and shuts down gracefully. It knows nothing about rate limits.
package server
