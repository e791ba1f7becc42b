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
			got := settings(cfg, tt.listen, 10000)
			want := []commands.Setting{
				{Name: "bind", Value: tt.bind},
				{Name: "port", Value: tt.port},
				{Name: "proto-max-bulk-len", Value: "536870912"},
				{Name: "timeout", Value: "0"},
				{Name: "maxclients", Value: "10000"},
				{Name: "protected-mode", Value: "no"},
				{Name: "tls-port", Value: "0"},
				{Name: "tls-cert-file", Value: ""},
				{Name: "tls-key-file", Value: ""},
				{Name: "tls-ca-cert-file", Value: ""},
			}
			if !slices.Equal(got, want) {
				t.Errorf("settings(%q, %v)\n got  %v\n want %v", tt.addr, tt.listen, got, want)
			}
		})
	}
}

// TestSettingsSecurity: the security settings CONFIG GET reports, and no
// password among them.
func TestSettingsSecurity(t *testing.T) {
	cfg := config{addr: "0.0.0.0:6379", protectedMode: true, timeout: 30, requirepass: "s3cret",
		tlsCertFile: "/etc/c.pem", tlsKeyFile: "/etc/k.pem"}
	got := settings(cfg, &net.TCPAddr{IP: net.IPv4zero, Port: 6379}, 77)
	values := map[string]string{}
	for _, s := range got {
		values[s.Name] = s.Value
		if s.Value == "s3cret" {
			t.Errorf("%s reveals the password", s.Name)
		}
	}
	for name, want := range map[string]string{"protected-mode": "yes", "timeout": "30", "maxclients": "77", "tls-port": "6379", "tls-cert-file": "/etc/c.pem"} {
		if values[name] != want {
			t.Errorf("%s = %q, want %q", name, values[name], want)
		}
	}
}
