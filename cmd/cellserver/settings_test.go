package main

import (
	"net"
	"slices"
	"testing"

	"github.com/cellserver/cellserver/commands"
)

func TestSettings(t *testing.T) {
	tests := []struct {
		name       string
		addr       string
		listen     net.Addr
		bind, port string
	}{
		{"loopback", "127.0.0.1:6379", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6379}, "127.0.0.1", "6379"},
		{"port 0 reports the bound port", "127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40123}, "127.0.0.1", "40123"},
		{"every interface", ":6380", &net.TCPAddr{IP: net.IPv6zero, Port: 6380}, "*", "6380"},
		{"ipv6", "[::1]:7000", &net.TCPAddr{IP: net.IPv6loopback, Port: 7000}, "::1", "7000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config{addr: tt.addr, protoMaxBulkLen: 512 << 20}
			got := settings(cfg, tt.listen)
			want := []commands.Setting{
				{Name: "bind", Value: tt.bind},
				{Name: "port", Value: tt.port},
				{Name: "proto-max-bulk-len", Value: "536870912"},
				{Name: "timeout", Value: "0"},
				{Name: "maxclients", Value: "10000"},
			}
			if !slices.Equal(got, want) {
				t.Errorf("settings(%q, %v)\n got  %v\n want %v", tt.addr, tt.listen, got, want)
			}
		})
	}
}
