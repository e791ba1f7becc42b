package server

import (
	"cmp"
	"net"
	"slices"

	"github.com/cellserver/cellserver/commands"
)

var _ commands.Host = (*Server)(nil)

// Clients returns a copy of every connected client's state, ordered by id.
// Each copy is the state as of the end of the client's last batch of
// commands (one read's worth), with LastActive up to publishEvery stale; a
// handler calling Clients sees its own connection as it was before the
// current batch (its live state is its own session's).
// Clients may be called from any goroutine, handlers included.
func (s *Server) Clients() []commands.ClientInfo {
	conns := s.connList()
	infos := make([]commands.ClientInfo, 0, len(conns))
	for _, c := range conns {
		infos = append(infos, c.info())
	}
	slices.SortFunc(infos, func(a, b commands.ClientInfo) int { return cmp.Compare(a.ID, b.ID) })
	return infos
}

// Stats returns the server's connection counters.
func (s *Server) Stats() commands.HostStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := commands.HostStats{
		ConnectedClients:    int64(len(s.conns)),
		TotalConnections:    s.total,
		RejectedConnections: s.rejected,
	}
	if s.ln != nil {
		if a, ok := s.ln.Addr().(*net.TCPAddr); ok {
			st.TCPPort = a.Port
		}
	}
	return st
}
