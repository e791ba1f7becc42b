package main

import (
	"net"
	"strconv"

	"github.com/cellserver/cellserver/commands"
)

// settings are the configuration parameters CONFIG GET reports, in Redis's
// names and formats. listen is the address actually bound, so that port 0
// reports the port the kernel chose, and maxClients the limit in force,
// perhaps lowered from cfg's to fit the open-file limit.
func settings(cfg config, listen net.Addr, maxClients int) []commands.Setting {
	host, port, err := net.SplitHostPort(listen.String())
	if err != nil {
		host, port, _ = net.SplitHostPort(cfg.addr)
	}
	if h, _, err := net.SplitHostPort(cfg.addr); err == nil && h == "" {
		host = "*" // every interface, as Redis writes it
	}
	return []commands.Setting{
		{Name: "bind", Value: host},
		{Name: "port", Value: port},
		{Name: "proto-max-bulk-len", Value: strconv.FormatInt(cfg.protoMaxBulkLen, 10)},
		{Name: "timeout", Value: strconv.Itoa(cfg.timeout)},
		{Name: "maxclients", Value: strconv.Itoa(maxClients)},
		{Name: "protected-mode", Value: (*yesNoValue)(&cfg.protectedMode).String()},
		{Name: "tls-port", Value: tlsPort(cfg, port)},
		{Name: "tls-cert-file", Value: cfg.tlsCertFile},
		{Name: "tls-key-file", Value: cfg.tlsKeyFile},
		{Name: "tls-ca-cert-file", Value: cfg.tlsCAFile},
	}
}

// tlsPort is the port that speaks TLS, as Redis reports it: the listening
// port when TLS is on (cellserver's one port speaks either), else 0.
func tlsPort(cfg config, port string) string {
	if cfg.tlsCertFile == "" {
		return "0"
	}
	return port
}
