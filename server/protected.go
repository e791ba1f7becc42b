package server

import "net"

// msgDenied is Redis 7's protected-mode explanation, worded for
// cellserver's flags. It is the whole reply; the connection is then closed.
const msgDenied = "DENIED cellserver is running in protected mode because protected mode is enabled and no " +
	"password is set for the default user. In this mode connections are only accepted from the loopback " +
	"interface. If you want to connect from external computers to cellserver you may adopt one of the " +
	"following solutions: 1) Set up an authentication password for the default user with the " +
	"'--requirepass' option, or a 'user default on >password' line in the '--users-file', and restart " +
	"the server. 2) If you started the server manually just for testing, restart it with the " +
	"'--protected-mode no' option, however MAKE SURE cellserver is not publicly accessible from internet " +
	"if you do so. NOTE: You only need to do one of the above things in order for the server to start " +
	"accepting connections from the outside. If only clients on this host need cellserver, make it listen " +
	"on the loopback interface only, for example with '--addr 127.0.0.1:6379'."

// protectedModeDenies reports whether protected mode, with no password set,
// refuses a client connecting from remote to a listener bound to listen:
// when the listener is not bound to a loopback address and the client is
// not on the loopback interface. An address that is not an IP address (a
// Unix socket) counts as local, as in Redis.
func protectedModeDenies(listen, remote net.Addr) bool {
	if ip := addrIP(listen); ip != nil && ip.IsLoopback() {
		return false
	}
	ip := addrIP(remote)
	return ip != nil && !ip.IsLoopback()
}

// addrIP returns the IP address of a TCP or UDP address, or nil.
func addrIP(a net.Addr) net.IP {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP
	case *net.UDPAddr:
		return a.IP
	case *net.IPAddr:
		return a.IP
	}
	return nil
}
