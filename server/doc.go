// Package server serves the Redis protocol over TCP or TLS: it accepts
// connections (refusing them past MaxClients, and remote ones in protected
// mode), parses requests in place under Redis's protocol limits (tighter
// ones for a client that has yet to authenticate), closes idle clients,
// runs every command through the Handler's per-connection commands.Session
// with its panics recovered, writes replies in RESP2 or RESP3, sent once
// per batch of pipelined requests, lets a command pause and finish later
// with its reply still in order, and shuts down gracefully. It knows
// nothing about rate limits.
//
// Each connection is a session (session.go): a state machine with no
// system calls that takes bytes in, runs requests and gives bytes out. A
// driver moves its bytes and keeps its time: an epoll event loop on Linux
// (evloop_linux.go, loopconn_linux.go) or a goroutine per connection
// (godriver.go) for TLS, other systems, and Config.EventLoops 0, with a
// second one that writes what the socket had no room for. Both read on
// while a client's replies wait for its socket. A loop
// runs one command at a time for all its connections, so a slow command
// holds every client of that loop; a command that waits on a store pauses
// instead, and its reply goes out in order when it completes. In a process
// that runs no other server (Config.LoopsHoldP), a loop waits for its
// sockets keeping its P when the process has one to spare
// (epoll_raw_linux.go).
package server
