// Package server serves the Redis protocol over TCP or TLS: it accepts
// connections (refusing them past MaxClients, and remote ones in protected
// mode), frames requests under Redis's protocol limits before redcon parses
// them (tighter ones for a client that has yet to authenticate), closes idle
// clients, runs every command through a Handler with its panics recovered,
// writes replies in RESP2 or RESP3, and shuts down gracefully. It knows
// nothing about rate limits.
package server
