package commands

// Host is what commands need to know about the server that runs them: its
// connections and counters. The server implements it.
type Host interface {
	// Clients returns a snapshot of the connected clients' state.
	Clients() []ClientInfo
	// Stats returns the server's connection counters.
	Stats() HostStats
}

// ClientInfo is a copy of one client's state, safe to read on any goroutine.
type ClientInfo struct {
	Client
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
