package commands

import "time"

// Host is what commands need to know about the server that runs them: its
// connections and counters. The server implements it.
type Host interface {
	// Clients returns a snapshot of the connected clients' state.
	Clients() []ClientInfo
	// Stats returns the server's connection counters.
	Stats() HostStats
}

// ClientInfo is a copy of one client's state, the fields CLIENT LIST and
// INFO show; it holds values only, so it is safe to read on any goroutine.
type ClientInfo struct {
	ID              int64
	Addr, LocalAddr string
	Name            string
	LibName, LibVer string
	User            string // "default" unless authenticated as another user
	Proto           int
	LastCommand     string // "" before the first command
	Created         time.Time
	LastActive      time.Time
	InMulti         bool // queueing commands after MULTI
	Authenticated   bool
	Monitor         bool // in MONITOR mode: the server sends it lines unasked
}

// HostStats are the server counters that INFO reports.
type HostStats struct {
	ConnectedClients    int64
	TotalConnections    int64
	RejectedConnections int64
	TCPPort             int
}

// Setting is one configuration parameter that CONFIG GET reports.
type Setting struct {
	Name, Value string
}
