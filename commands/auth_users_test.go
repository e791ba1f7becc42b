package commands

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadUsers(t *testing.T) {
	cases := []struct {
		name        string
		file        string
		requirepass string
		wantErr     string // a part of the error; "" for none
		passwordSet bool
		authReq     bool
	}{
		{name: "nothing", passwordSet: false, authReq: false},
		{name: "requirepass", requirepass: "pw", passwordSet: true, authReq: true},
		{name: "file without default", file: "user alice on >pw\n", passwordSet: false, authReq: false},
		{name: "file with default", file: "user default on >pw\n", passwordSet: true, authReq: true},
		{name: "default off", file: "user default off nopass\nuser alice on >pw\n", passwordSet: false, authReq: true},
		{name: "default written by ACL SAVE", file: "user default on nopass sanitize-payload ~* &* +@all\n"},
		{name: "comments and blank lines", file: "# x\n\n   # y\n\t\nuser a on >p\n"},
		{name: "rules in any case", file: "user a ON >p AllKeys +@ALL\n"},
		{name: "requirepass and default line", file: "user default on >a\n", requirepass: "b",
			wantErr: "both requirepass and a \"user default\" line"},
		{name: "unknown rule", file: "user a on >pw\nuser b on <" + bobPass + "\n",
			wantErr: ":2: rule 2 of user \"b\": not a rule cellserver supports"},
		{name: "restricting rule", file: "user a on >pw +get\n", wantErr: ":1: rule 3 of user \"a\""},
		{name: "short hash", file: "user a on #" + sha256Hex(alicePass)[:62] + "\n", wantErr: "64 hex digits"},
		{name: "hash not hex", file: "user a on #" + strings.Repeat("z", 64) + "\n", wantErr: "64 hex digits"},
		{name: "duplicate user", file: "user a on\nuser a off\n", wantErr: ":2: user \"a\" given twice"},
		{name: "not a user line", file: "requirepass " + alicePass + "\n", wantErr: ":1: want \"user <name> <rule> ...\""},
		{name: "user without name", file: "user\n", wantErr: ":1: want"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := ""
			if c.file != "" {
				path = writeFile(t, c.file)
			}
			u, err := LoadUsers(path, c.requirepass)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("LoadUsers error = %v, want one containing %q", err, c.wantErr)
				}
				for _, s := range testSecrets {
					if strings.Contains(err.Error(), s) {
						t.Errorf("error %q shows a password", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadUsers: %v", err)
			}
			if u.Path() != path {
				t.Errorf("Path() = %q, want %q", u.Path(), path)
			}
			if u.PasswordSet() != c.passwordSet || u.authRequired() != c.authReq {
				t.Errorf("PasswordSet %v authRequired %v, want %v %v", u.PasswordSet(), u.authRequired(), c.passwordSet, c.authReq)
			}
		})
	}
	if _, err := LoadUsers(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("LoadUsers of a missing file succeeded")
	}
}

func TestAuthenticate(t *testing.T) {
	u := loadUsers(t, testUsersFile()+"user erin on >x resetpass >"+bobPass+"\nuser frank on >x nopass\n", defaultPass)
	cases := []struct {
		user, pass string
		want       bool
	}{
		{"default", defaultPass, true},
		{"default", "", false},
		{"default", defaultPass + "x", false},
		{"Default", defaultPass, false}, // names are case-sensitive
		{"alice", alicePass, true},
		{"alice", defaultPass, false},
		{"bob", bobPass, false}, // off
		{"carol", carolPass, true},
		{"carol", carolPass2, true},
		{"carol", sha256Hex(carolPass), false}, // the hash is not the password
		{"dave", "anything", true},
		{"erin", bobPass, true},
		{"erin", "x", false}, // resetpass forgot it
		{"frank", "y", true}, // nopass after a password
		{"nobody", "", false},
	}
	for _, c := range cases {
		if got := u.authenticate([]byte(c.user), []byte(c.pass)); got != c.want {
			t.Errorf("authenticate(%q, %q) = %v, want %v", c.user, c.pass, got, c.want)
		}
	}
	var none *Users
	if !none.authenticate([]byte("default"), []byte("x")) || none.authenticate([]byte("alice"), []byte("x")) ||
		none.PasswordSet() || none.authRequired() || none.Path() != "" {
		t.Error("a nil *Users is not a database with only a nopass default user")
	}
}

func TestRedactSecrets(t *testing.T) {
	cases := []struct {
		args, want []string
	}{
		{[]string{"AUTH", "pw"}, []string{"AUTH", "(redacted)"}},
		{[]string{"auth", "alice", "pw"}, []string{"auth", "(redacted)", "(redacted)"}},
		{[]string{"AUTH"}, []string{"AUTH"}},
		{[]string{"HELLO", "3", "AUTH", "alice", "pw", "SETNAME", "app"},
			[]string{"HELLO", "3", "AUTH", "(redacted)", "(redacted)", "SETNAME", "app"}},
		{[]string{"HELLO", "3", "auth", "a", "p", "AUTH", "b", "q"},
			[]string{"HELLO", "3", "auth", "(redacted)", "(redacted)", "AUTH", "(redacted)", "(redacted)"}},
		{[]string{"HELLO", "3", "AUTH", "alice"}, []string{"HELLO", "3", "AUTH", "alice"}},
		{[]string{"HELLO", "3"}, []string{"HELLO", "3"}},
		{[]string{"ECHO", "pw"}, []string{"ECHO", "pw"}},
	}
	for _, c := range cases {
		args := make([][]byte, len(c.args))
		for i, a := range c.args {
			args[i] = []byte(a)
		}
		got := redactSecrets(args)
		var gotS []string
		for _, a := range got {
			gotS = append(gotS, string(a))
		}
		if strings.Join(gotS, " ") != strings.Join(c.want, " ") {
			t.Errorf("redactSecrets(%q) = %q, want %q", c.args, gotS, c.want)
		}
		for i, a := range args {
			if string(a) != c.args[i] {
				t.Errorf("redactSecrets changed its argument: %q", args)
			}
		}
	}
}
