package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
	"github.com/redis/go-redis/v9"
)

// The passwords of the tests; no log, reply or error may show them.
const (
	defaultPass = "default-secret-1"
	alicePass   = "alice-secret-2"
)

var testSecrets = []string{defaultPass, alicePass}

// loadTestUsers returns the default user with defaultPass and alice with
// alicePass.
func loadTestUsers(t *testing.T) *commands.Users {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte("user alice on >"+alicePass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users, err := commands.LoadUsers(path, defaultPass)
	if err != nil {
		t.Fatal(err)
	}
	return users
}

// startCommands serves the real command set, configured by opts (Engine
// filled in), with cfg on ln (127.0.0.1:0 when nil). The server's and the
// commands' logs go to the harness's sink at every level.
func startCommands(t *testing.T, ln net.Listener, cfg Config, opts commands.Options) *harness {
	t.Helper()
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	eng := engine.New(engine.Options{})
	t.Cleanup(eng.Close)
	sink := newLogSink()
	opts.Engine = eng
	opts.Logger = slog.New(sink)
	cmds := commands.New(opts)
	cfg.Handler = cmds
	cfg.Logger = opts.Logger
	h := startOn(t, ln, cfg, func(s *Server) { cmds.SetHost(s) })
	h.logs = sink
	return h
}

// goRedis returns a go-redis client of h; tlsCfg may be nil.
func (h *harness) goRedis(user, pass string, tlsCfg *tls.Config) *redis.Client {
	h.t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr: h.addr, Username: user, Password: pass, TLSConfig: tlsCfg,
		MaxRetries: -1, DialTimeout: testTimeout, ReadTimeout: testTimeout, WriteTimeout: testTimeout,
	})
	h.t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestAuthOverTCP(t *testing.T) {
	const (
		noAuth    = "-NOAUTH Authentication required.\r\n"
		wrongPass = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	)
	cases := []struct {
		name       string
		in, want   string
		closedHere bool
	}{
		{name: "missing", in: "PING\r\n" + cmd("CL.THROTTLE", "k", "1", "1", "1"), want: noAuth + noAuth},
		{name: "right", in: cmd("AUTH", defaultPass) + "PING\r\n", want: "+OK\r\n+PONG\r\n"},
		{name: "wrong", in: cmd("AUTH", alicePass) + "PING\r\n", want: wrongPass + noAuth},
		{name: "per user", in: cmd("AUTH", "alice", defaultPass) + cmd("AUTH", "alice", alicePass) + "PING\r\n",
			want: wrongPass + "+OK\r\n+PONG\r\n"},
		{name: "reset", in: cmd("AUTH", "alice", alicePass) + "RESET\r\nPING\r\n", want: "+OK\r\n+RESET\r\n" + noAuth},
		{name: "quit", in: "QUIT\r\nPING\r\n", want: "+OK\r\n", closedHere: true},
		// Redis's limits on a client that has not authenticated.
		{name: "unauthenticated multibulk", in: "PING\r\n*11\r\n", closedHere: true,
			want: noAuth + protoErr("unauthenticated multibulk length")},
		{name: "unauthenticated bulk", in: "*2\r\n$4\r\nECHO\r\n$16385\r\n", closedHere: true,
			want: protoErr("unauthenticated bulk length")},
		{name: "largest unauthenticated request", in: cmd("ECHO", "1", "2", "3", "4", "5", "6", "7", "8", strings.Repeat("x", 16384)),
			want: "-ERR wrong number of arguments for 'echo' command\r\n"},
		// An AUTH in the same packet takes effect before the next request
		// is framed, as in Redis.
		{name: "pipelined auth lifts the limits", in: cmd("AUTH", defaultPass) + cmd("ECHO", strings.Repeat("y", 20000)) +
			cmd("DEL", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"),
			want: "+OK\r\n$20000\r\n" + strings.Repeat("y", 20000) + "\r\n:0\r\n"},
	}
	h := startCommands(t, nil, Config{}, commands.Options{Users: loadTestUsers(t)})
	for _, tt := range cases {
		for _, bytewise := range []bool{false, true} {
			name := tt.name
			if bytewise {
				name += "/bytewise"
			}
			t.Run(name, func(t *testing.T) {
				c := h.dial()
				c.t = t
				if bytewise {
					c.sendBytewise(tt.in)
				} else {
					c.send(tt.in)
				}
				c.expect(tt.want)
				if tt.closedHere {
					c.expectClosed()
				}
			})
		}
	}
	// RESET brings the limits back. (Requests that arrived with the RESET
	// were framed while the client was still authenticated.)
	c := h.dial()
	c.send(cmd("AUTH", defaultPass) + "RESET\r\n")
	c.expect("+OK\r\n+RESET\r\n")
	c.send("*11\r\n")
	c.expect(protoErr("unauthenticated multibulk length"))
	c.expectClosed()

	other := h.dial() // nobody else noticed
	other.send(cmd("AUTH", defaultPass) + "PING\r\n")
	other.expect("+OK\r\n+PONG\r\n")
}

func TestNoUnauthenticatedLimitsWithoutPassword(t *testing.T) {
	h := startCommands(t, nil, Config{}, commands.Options{})
	c := h.dial()
	c.send(cmd("DEL", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11") + cmd("ECHO", strings.Repeat("z", 20000)))
	c.expect(":0\r\n$20000\r\n" + strings.Repeat("z", 20000) + "\r\n")
}

func TestAuthWithGoRedis(t *testing.T) {
	ctx := context.Background()
	h := startCommands(t, nil, Config{}, commands.Options{Users: loadTestUsers(t)})

	// go-redis authenticates with HELLO 3 AUTH.
	for _, who := range []struct{ user, pass string }{{"", defaultPass}, {"default", defaultPass}, {"alice", alicePass}} {
		rdb := h.goRedis(who.user, who.pass, nil)
		got, err := rdb.Do(ctx, "CL.THROTTLE", "k-"+who.user, "15", "30", "60").Int64Slice()
		if err != nil || len(got) != 5 || got[1] != 16 {
			t.Errorf("%q: CL.THROTTLE = %v, %v", who.user, got, err)
		}
	}
	for _, who := range []struct{ user, pass, want string }{
		{"alice", defaultPass, "WRONGPASS invalid username-password pair or user is disabled."},
		{"", "", "NOAUTH Authentication required."},
	} {
		err := h.goRedis(who.user, who.pass, nil).Ping(ctx).Err()
		if err == nil || err.Error() != who.want {
			t.Errorf("%q/%q: PING error %v, want %q", who.user, who.pass, err, who.want)
		}
	}
}

// TestNoSecretInLogs runs every way of authenticating, right and wrong,
// with the logs at Debug, and looks for the passwords in them and in what
// the server shows.
func TestNoSecretInLogs(t *testing.T) {
	ctx := context.Background()
	users := loadTestUsers(t)
	h := startCommands(t, nil, Config{}, commands.Options{Users: users,
		Settings: []commands.Setting{{Name: "requirepass", Value: defaultPass}}})
	c := h.dial()
	c.send(cmd("AUTH", alicePass) + cmd("AUTH", "alice", defaultPass) + cmd("HELLO", "2", "AUTH", "alice", defaultPass) +
		cmd("AUTH", "alice", alicePass) + cmd("HELLO", "2", "AUTH", "default", defaultPass) + "QUIT\r\n")
	c.drain()
	rdb := h.goRedis("alice", alicePass, nil)
	var shown strings.Builder
	for _, args := range [][]any{{"CONFIG", "GET", "*"}, {"INFO", "everything"}, {"CLIENT", "LIST"}} {
		v, err := rdb.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		shown.WriteString(toString(v) + "\n")
	}
	if !strings.Contains(shown.String(), "user=alice") || !strings.Contains(shown.String(), "requirepass") {
		t.Errorf("CONFIG GET, INFO and CLIENT LIST show %q", shown.String())
	}
	rdb.Close()
	h.logs.wait(t, "server: connection closed")
	for _, s := range testSecrets {
		if strings.Contains(h.logs.String(), s) {
			t.Errorf("the logs show a password:\n%s", h.logs)
		}
		if strings.Contains(shown.String(), s) {
			t.Errorf("the server shows a password:\n%s", shown.String())
		}
	}
}

// toString flattens a go-redis reply.
func toString(v any) string {
	switch v := v.(type) {
	case []any:
		var parts []string
		for _, e := range v {
			parts = append(parts, toString(e))
		}
		return strings.Join(parts, " ")
	case map[any]any:
		var parts []string
		for k, e := range v {
			parts = append(parts, toString(k)+"="+toString(e))
		}
		return strings.Join(parts, " ")
	}
	return fmt.Sprint(v)
}
