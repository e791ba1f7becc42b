package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The passwords of the test users. Every test that shows server state
// checks that none of them appears.
const (
	defaultPass = "default-secret-1"
	alicePass   = "alice-secret-2"
	bobPass     = "bob-secret-3"
	carolPass   = "carol-secret-4"
	carolPass2  = "carol-secret-5"
)

var testSecrets = []string{defaultPass, alicePass, bobPass, carolPass, carolPass2}

const (
	msgWrongPassText   = "WRONGPASS invalid username-password pair or user is disabled."
	msgNoAuthText      = "NOAUTH Authentication required."
	msgHelloNoAuthText = "NOAUTH HELLO must be called with the client already authenticated, otherwise the " +
		"HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol " +
		"version at the same time"
)

// sha256Hex is the #<sha256> form of a password.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// writeFile writes a users file in a temporary directory.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testUsersFile holds alice (a password), bob (off), carol (two passwords,
// one given as a hash) and dave (nopass).
func testUsersFile() string {
	return "# the users of the tests\n" +
		"\n" +
		"user alice on >" + alicePass + " ~* &* +@all\n" +
		"   user bob off >" + bobPass + "\n" +
		"user carol on #" + sha256Hex(carolPass) + " >" + carolPass2 + " allkeys allcommands\n" +
		"user dave on nopass\n"
}

// loadUsers loads users from text and requirepass, failing the test on an
// error.
func loadUsers(t *testing.T, text, requirepass string) *Users {
	t.Helper()
	path := ""
	if text != "" {
		path = writeFile(t, text)
	}
	u, err := LoadUsers(path, requirepass)
	if err != nil {
		t.Fatalf("LoadUsers: %v", err)
	}
	return u
}

// authHarness is a harness whose default user needs defaultPass, with the
// users of testUsersFile.
func authHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t).withOpts(Options{Users: loadUsers(t, testUsersFile(), defaultPass)})
}

func TestAuthCommands(t *testing.T) {
	hello2 := func(id int64) string { return strings.Replace(helloReply(2), wantInt(1), wantInt(id), 1) }
	cases := []struct {
		name  string
		steps []replyStep
		user  string // Client.User after the steps
	}{
		{"missing", []replyStep{
			{[]string{"PING"}, wantErr(msgNoAuthText)},
			{[]string{"CL.THROTTLE", "k", "1", "1", "1"}, wantErr(msgNoAuthText)},
			{[]string{"HELLO"}, wantErr(msgHelloNoAuthText)},
			{[]string{"HELLO", "3"}, wantErr(msgHelloNoAuthText)},
		}, "default"},
		{"checks before NOAUTH, as Redis", []replyStep{
			{[]string{"GET"}, wantErr("ERR wrong number of arguments for 'get' command")},
			{[]string{"CLIENT"}, wantErr("ERR wrong number of arguments for 'client' command")},
			{[]string{"NOSUCH", "a"}, wantErr("ERR unknown command 'NOSUCH', with args beginning with: 'a' ")},
			{[]string{"CLIENT", "NOSUCH"}, wantErr("ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.")},
			{[]string{"HELLO", "4"}, wantErr("NOPROTO unsupported protocol version")},
			{[]string{"HELLO", "3", "FOO"}, wantErr("ERR Syntax error in HELLO option 'FOO'")},
			{[]string{"AUTH", "a", "b", "c"}, wantErr("ERR syntax error")},
			{[]string{"AUTH"}, wantErr("ERR wrong number of arguments for 'auth' command")},
		}, "default"},
		{"right password", []replyStep{
			{[]string{"AUTH", defaultPass}, wantStatus("OK")},
			{[]string{"PING"}, wantStatus("PONG")},
		}, "default"},
		{"default by name", []replyStep{
			{[]string{"AUTH", "default", defaultPass}, wantStatus("OK")},
			{[]string{"PING"}, wantStatus("PONG")},
		}, "default"},
		{"wrong password", []replyStep{
			{[]string{"AUTH", alicePass}, wantErr(msgWrongPassText)},
			{[]string{"AUTH", "default", ""}, wantErr(msgWrongPassText)},
			{[]string{"PING"}, wantErr(msgNoAuthText)},
		}, "default"},
		{"per user", []replyStep{
			{[]string{"AUTH", "alice", defaultPass}, wantErr(msgWrongPassText)},
			{[]string{"AUTH", "Alice", alicePass}, wantErr(msgWrongPassText)},
			{[]string{"AUTH", "bob", bobPass}, wantErr(msgWrongPassText)}, // off
			{[]string{"AUTH", "nobody", "x"}, wantErr(msgWrongPassText)},
			{[]string{"AUTH", "alice", alicePass}, wantStatus("OK")},
			{[]string{"PING"}, wantStatus("PONG")},
			{[]string{"AUTH", "carol", carolPass}, wantStatus("OK")},
			{[]string{"AUTH", "carol", carolPass2}, wantStatus("OK")},
		}, "carol"},
		{"a failed AUTH keeps the user", []replyStep{
			{[]string{"AUTH", "alice", alicePass}, wantStatus("OK")},
			{[]string{"AUTH", "alice", "wrong"}, wantErr(msgWrongPassText)},
			{[]string{"HELLO", "3", "AUTH", "bob", bobPass}, wantErr(msgWrongPassText)},
			{[]string{"PING"}, wantStatus("PONG")},
		}, "alice"},
		{"hello auth", []replyStep{
			{[]string{"HELLO", "2", "AUTH", "alice", "wrong"}, wantErr(msgWrongPassText)},
			{[]string{"HELLO", "2", "AUTH", "dave", "anything"}, hello2(1)},
			{[]string{"PING"}, wantStatus("PONG")},
		}, "dave"},
		{"hello auth first needs a version", []replyStep{
			{[]string{"HELLO", "AUTH", "alice", alicePass}, wantErr("ERR Protocol version is not an integer or out of range")},
			{[]string{"PING"}, wantErr(msgNoAuthText)},
		}, "default"},
		{"hello options take effect in order", []replyStep{
			// As in Redis 7.0: AUTH before a bad option stays done.
			{[]string{"HELLO", "3", "AUTH", "alice", alicePass, "FOO"}, wantErr("ERR Syntax error in HELLO option 'FOO'")},
			{[]string{"PING"}, wantStatus("PONG")},
		}, "alice"},
		{"hello bad name before auth", []replyStep{
			{[]string{"HELLO", "3", "SETNAME", "a b", "AUTH", "alice", alicePass},
				wantErr("ERR Client names cannot contain spaces, newlines or special characters.")},
			{[]string{"PING"}, wantErr(msgNoAuthText)},
		}, "default"},
		{"quit and reset need no auth", []replyStep{
			{[]string{"RESET"}, wantStatus("RESET")},
			{[]string{"QUIT"}, wantStatus("OK")},
		}, "default"},
		{"reset de-authenticates", []replyStep{
			{[]string{"AUTH", "alice", alicePass}, wantStatus("OK")},
			{[]string{"PING"}, wantStatus("PONG")},
			{[]string{"RESET"}, wantStatus("RESET")},
			{[]string{"PING"}, wantErr(msgNoAuthText)},
			{[]string{"AUTH", defaultPass}, wantStatus("OK")},
			{[]string{"PING"}, wantStatus("PONG")},
		}, "default"},
		{"auth inside multi is queued", []replyStep{
			{[]string{"AUTH", "alice", alicePass}, wantStatus("OK")},
			{[]string{"MULTI"}, wantStatus("OK")},
			{[]string{"AUTH", "wrong"}, wantStatus("QUEUED")},
			{[]string{"AUTH", "carol", carolPass}, wantStatus("QUEUED")},
			{[]string{"EXEC"}, wantArray(2) + wantErr(msgWrongPassText) + wantStatus("OK")},
		}, "carol"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := authHarness(t)
			h.runSteps(c.steps)
			if h.client.User != c.user {
				t.Errorf("Client.User = %q, want %q", h.client.User, c.user)
			}
		})
	}
}

func TestHelloAuthSwitchesProtocol(t *testing.T) {
	h := authHarness(t)
	if got := h.doLive("HELLO", "3", "SETNAME", "app"); got != wantErr(msgHelloNoAuthText) {
		t.Fatalf("HELLO 3 unauthenticated = %q", got)
	}
	// As in Redis 7.0, the name is set although HELLO then answers NOAUTH;
	// the protocol is not switched.
	if h.client.Proto != 2 || h.client.Name != "app" {
		t.Fatalf("after NOAUTH: proto %d name %q, want 2 %q", h.client.Proto, h.client.Name, "app")
	}
	if got := h.doLive("HELLO", "3", "AUTH", "alice", alicePass, "SETNAME", "worker"); got != helloReply(3) {
		t.Fatalf("HELLO 3 AUTH = %q", got)
	}
	if h.client.Proto != 3 || h.client.Name != "worker" || h.client.User != "alice" || !h.client.Authenticated {
		t.Fatalf("after HELLO 3 AUTH: %+v", h.client)
	}
}

// TestNoAuthForEveryCommand runs every command and subcommand of the table
// unauthenticated, with as many arguments as its arity asks: all but AUTH,
// HELLO, QUIT and RESET answer NOAUTH, and none of them touches the
// keyspace.
func TestNoAuthForEveryCommand(t *testing.T) {
	h := authHarness(t)
	noAuth := map[string]bool{"auth": true, "hello": true, "quit": true, "reset": true}
	var rows []*Command
	for _, cmd := range h.cmds.table.sorted {
		if len(cmd.Sub) == 0 {
			rows = append(rows, cmd)
		}
		rows = append(rows, cmd.Sub...)
	}
	checked := 0
	for _, cmd := range rows {
		name := strings.Split(cmd.Name, "|")
		if got := cmd.Flags&FlagNoAuth != 0; got != noAuth[name[0]] {
			t.Errorf("%s: no_auth flag %v, want %v", cmd.Name, got, noAuth[name[0]])
		}
		if noAuth[name[0]] {
			continue
		}
		args := append([]string(nil), name...)
		n := max(cmd.Arity, -cmd.Arity)
		for len(args) < n {
			args = append(args, "1")
		}
		want := wantErr(msgNoAuthText)
		if cmd.Name == "exec" { // Redis answers any rejected EXEC so, in MULTI or not
			want = wantErr("EXECABORT Transaction discarded because of: " + msgNoAuthText)
		}
		if got := h.do(args...); got != want {
			t.Errorf("%q unauthenticated = %q, want NOAUTH", args, got)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d commands checked", checked)
	}
	if n := h.eng.Len(nil); n != 0 {
		t.Errorf("%d keys after only NOAUTH replies", n)
	}
	if h.client.LastCommand != "" {
		t.Errorf("LastCommand = %q after only rejected commands", h.client.LastCommand)
	}
}

func TestNoAuthInsideMulti(t *testing.T) {
	h := authHarness(t)
	h.runSteps([]replyStep{
		{[]string{"AUTH", defaultPass}, wantStatus("OK")},
		{[]string{"MULTI"}, wantStatus("OK")},
		{[]string{"CL.THROTTLE", "k", "1", "1", "1"}, wantStatus("QUEUED")},
	})
	// Nothing a client sends de-authenticates it inside MULTI (RESET
	// leaves MULTI first), so the state is set as a revoked user would
	// leave it: the rejection flags the transaction like any other.
	h.client.Authenticated = false
	h.runSteps([]replyStep{
		{[]string{"PING"}, wantErr(msgNoAuthText)},
		{[]string{"EXEC"}, wantErr("EXECABORT Transaction discarded because of: " + msgNoAuthText)},
		{[]string{"AUTH", defaultPass}, wantStatus("OK")},
		{[]string{"EXEC"}, wantErr("ERR EXEC without MULTI")},
		{[]string{"MULTI"}, wantStatus("OK")},
		{[]string{"PING"}, wantStatus("QUEUED")},
	})
	h.client.Authenticated = false
	h.runSteps([]replyStep{
		{[]string{"PING"}, wantErr(msgNoAuthText)},
		{[]string{"AUTH", defaultPass}, wantStatus("QUEUED")},
		{[]string{"DISCARD"}, wantErr(msgNoAuthText)},
	})
	if !h.client.InMulti() {
		t.Fatal("a NOAUTH DISCARD left MULTI")
	}
	h.client.Authenticated = true
	h.runSteps([]replyStep{
		{[]string{"EXEC"}, wantErr("EXECABORT Transaction discarded because of previous errors.")},
	})
	if n := h.eng.Len(nil); n != 0 {
		t.Errorf("%d keys after aborted transactions", n)
	}
}

func TestNoPasswordNeedsNoAuth(t *testing.T) {
	for _, users := range []*Users{nil, loadUsers(t, "", ""), loadUsers(t, testUsersFile(), "")} {
		h := newHarness(t).withOpts(Options{Users: users})
		h.runSteps([]replyStep{
			{[]string{"PING"}, wantStatus("PONG")},
			{[]string{"AUTH", "x"}, wantErr("ERR AUTH <password> called without any password configured for the " +
				"default user. Are you sure your configuration is correct?")},
			{[]string{"AUTH", "default", "anything"}, wantStatus("OK")},
			{[]string{"RESET"}, wantStatus("RESET")},
			{[]string{"PING"}, wantStatus("PONG")},
		})
	}
	h := newHarness(t).withOpts(Options{Users: loadUsers(t, testUsersFile(), "")})
	h.runSteps([]replyStep{
		{[]string{"AUTH", "alice", alicePass}, wantStatus("OK")},
		{[]string{"AUTH", "alice", "wrong"}, wantErr(msgWrongPassText)},
		{[]string{"PING"}, wantStatus("PONG")},
	})
}

func TestDefaultUserOff(t *testing.T) {
	h := newHarness(t).withOpts(Options{Users: loadUsers(t, "user default off nopass\nuser alice on >"+alicePass+"\n", "")})
	h.runSteps([]replyStep{
		{[]string{"PING"}, wantErr(msgNoAuthText)},
		{[]string{"AUTH", "x"}, wantErr("ERR AUTH <password> called without any password configured for the " +
			"default user. Are you sure your configuration is correct?")},
		{[]string{"AUTH", "default", "x"}, wantErr(msgWrongPassText)},
		{[]string{"AUTH", "alice", alicePass}, wantStatus("OK")},
		{[]string{"PING"}, wantStatus("PONG")},
	})
}

func TestClientListShowsUser(t *testing.T) {
	h := authHarness(t)
	h.do("AUTH", "alice", alicePass)
	line := clientLine("1", "127.0.0.1:50000", "", 0, 0, "N", "-1", "client|info", 2)
	line = strings.Replace(line, " user=default ", " user=alice ", 1)
	if got := h.do("CLIENT", "INFO"); got != wantBulk(line) {
		t.Fatalf("CLIENT INFO\n got %q\nwant %q", got, wantBulk(line))
	}
	h.do("RESET")
	h.do("AUTH", defaultPass)
	if got := h.do("CLIENT", "LIST"); !strings.Contains(got, " user=default ") {
		t.Fatalf("CLIENT LIST after RESET = %q", got)
	}
}

// TestNoSecretShown looks for the passwords in everything the server shows
// about itself and its clients.
func TestNoSecretShown(t *testing.T) {
	users := loadUsers(t, testUsersFile(), defaultPass)
	h := newHarness(t).withOpts(Options{Users: users, Settings: []Setting{
		{Name: "port", Value: "6379"},
		{Name: "requirepass", Value: defaultPass}, // a careless caller: CONFIG GET still hides it
	}})
	h.do("HELLO", "3", "AUTH", "alice", alicePass, "SETNAME", "app")
	h.do("AUTH", "carol", carolPass)
	h.client.Proto = 2
	pair := func(name, value string) string { return wantBulks(name, value) }
	h.runSteps([]replyStep{
		{[]string{"CONFIG", "GET", "requirepass"}, wantArray(2) + pair("requirepass", "")},
		{[]string{"CONFIG", "GET", "aclfile"}, wantArray(2) + pair("aclfile", users.Path())},
	})
	shown := h.do("CONFIG", "GET", "*") + h.do("INFO", "everything") + h.do("CLIENT", "LIST") +
		h.do("CLIENT", "INFO") + h.do("INFO", "commandstats")
	for _, s := range append(testSecrets, sha256Hex(carolPass)) {
		if strings.Contains(shown, s) {
			t.Errorf("a secret (%q) is shown in:\n%s", s, shown)
		}
	}
	if !strings.Contains(shown, "cmdstat_auth:calls=1") {
		t.Errorf("INFO commandstats lacks AUTH:\n%s", shown)
	}
}

func TestConfigGetRequirepassWithoutUsers(t *testing.T) {
	h := newHarness(t).withOpts(Options{Settings: []Setting{{Name: "requirepass", Value: defaultPass}}})
	h.runSteps([]replyStep{
		{[]string{"CONFIG", "GET", "requirepass"}, wantArray(2) + wantBulks("requirepass", "")},
		{[]string{"CONFIG", "GET", "aclfile"}, wantArray(0)},
	})
}
