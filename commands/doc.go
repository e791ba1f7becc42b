// Package commands turns the argument bytes of a Redis command into a typed
// request, runs it against the engine and writes the reply. The command table
// is data; every error text a client can see is a constant here.
package commands
