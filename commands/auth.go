package commands

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Users is the user database: which users may authenticate, and with which
// passwords. It is read-only once loaded and safe for concurrent use. Only
// the SHA-256 of each password is kept.
//
// The default user is the one a connection starts as. Without a password it
// is "nopass": every connection is authenticated from the start and AUTH
// <password> is refused as Redis refuses it. With one (LoadUsers's
// requirepass, or a "user default" line in the users file), every command
// but AUTH, HELLO, QUIT and RESET answers NOAUTH until the client
// authenticates. A nil *Users is a database with only a nopass default user.
type Users struct {
	path   string
	byName map[string]*user
	def    *user // byName[defaultUser], which LoadUsers always adds
}

// user is one user's entry.
type user struct {
	on     bool                // off users never authenticate
	nopass bool                // any password authenticates
	hashes [][sha256.Size]byte // the SHA-256 of every accepted password
}

// Rules of a users file line that grant everything, as cellserver has no
// per-command or per-key permissions: they are accepted so that a line
// written by Redis's ACL SAVE for a user with full access loads as it is.
var grantAllRules = []string{
	"~*", "%RW~*", "allkeys", "&*", "allchannels", "+@all", "allcommands",
	"sanitize-payload", "skip-sanitize-payload",
}

// LoadUsers builds the user database from the users file at path (none if
// path is "") and requirepass, the default user's password ("" for none).
//
// The file has one user per line, in a subset of Redis's ACL file syntax:
//
//	# a comment; blank lines are skipped
//	user <name> <rule> ...
//
// with these rules, applied from left to right, as in Redis:
//
//	on, off       the user may (on) or may not (off) authenticate; a user
//	              is off unless a rule says on, as in Redis
//	><password>   adds a password (no spaces)
//	#<sha256>     adds a password given as the 64 hex digits of its SHA-256
//	              (echo -n "$password" | sha256sum), so the file need not
//	              hold it in clear
//	nopass        the user authenticates with any password
//	resetpass     forgets the passwords and nopass given so far
//	~* %RW~* allkeys &* allchannels +@all allcommands sanitize-payload
//	skip-sanitize-payload
//	              accepted and ignored: every user may run every command
//
// Any other rule is an error, so that a permission cellserver does not
// enforce is never silently dropped. A user named twice is an error, and so
// is a "user default" line together with requirepass. Errors name the file
// and line but never quote a rule, which may hold a password.
func LoadUsers(path, requirepass string) (*Users, error) {
	u := &Users{path: path, byName: make(map[string]*user)}
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("users file: %w", err)
		}
		defer f.Close()
		if err := u.parse(f, path); err != nil {
			return nil, err
		}
	}
	_, fileDefault := u.byName[defaultUser]
	switch {
	case requirepass != "" && fileDefault:
		return nil, fmt.Errorf("%s: both requirepass and a %q line set the default user's password; use one", path, "user default")
	case requirepass != "":
		u.byName[defaultUser] = &user{on: true, hashes: [][sha256.Size]byte{sha256.Sum256([]byte(requirepass))}}
	case !fileDefault:
		u.byName[defaultUser] = &user{on: true, nopass: true}
	}
	u.def = u.byName[defaultUser]
	return u, nil
}

// parse reads users file lines from r; name is the file's name for errors.
func (u *Users) parse(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] != "user" || len(fields) < 2 {
			return fmt.Errorf("%s:%d: want %q", name, line, "user <name> <rule> ...")
		}
		userName := fields[1]
		if _, dup := u.byName[userName]; dup {
			return fmt.Errorf("%s:%d: user %q given twice", name, line, userName)
		}
		usr := &user{}
		for i, rule := range fields[2:] {
			if err := usr.apply(rule); err != nil {
				return fmt.Errorf("%s:%d: rule %d of user %q: %w", name, line, i+1, userName, err)
			}
		}
		u.byName[userName] = usr
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// apply applies one rule of a users file line. Its errors never quote the
// rule.
func (usr *user) apply(rule string) error {
	switch {
	case strings.EqualFold(rule, "on"):
		usr.on = true
	case strings.EqualFold(rule, "off"):
		usr.on = false
	case strings.EqualFold(rule, "nopass"):
		usr.nopass, usr.hashes = true, nil
	case strings.EqualFold(rule, "resetpass"):
		usr.nopass, usr.hashes = false, nil
	case strings.HasPrefix(rule, ">"):
		usr.addHash(sha256.Sum256([]byte(rule[1:])))
	case strings.HasPrefix(rule, "#"):
		var h [sha256.Size]byte
		if n, err := hex.Decode(h[:], []byte(rule[1:])); err != nil || n != len(h) || len(rule) != 1+2*len(h) {
			return errors.New("a #<sha256> rule needs the 64 hex digits of the password's SHA-256")
		}
		usr.addHash(h)
	default:
		for _, g := range grantAllRules {
			if strings.EqualFold(rule, g) {
				return nil
			}
		}
		return errors.New("not a rule cellserver supports (on, off, >password, #sha256, nopass, resetpass, " +
			"and the grant-everything rules ~* &* +@all allkeys allchannels allcommands)")
	}
	return nil
}

// addHash adds a password's hash, as a ">" or "#" rule does: it also ends
// nopass.
func (usr *user) addHash(h [sha256.Size]byte) {
	usr.nopass = false
	for _, have := range usr.hashes {
		if have == h {
			return
		}
	}
	usr.hashes = append(usr.hashes, h)
}

// Path returns the users file the database was loaded from, or "".
func (u *Users) Path() string {
	if u == nil {
		return ""
	}
	return u.path
}

// PasswordSet reports whether the default user needs a password, which is
// what Redis's protected mode asks: without one, protected mode refuses
// clients that are not on the loopback interface.
func (u *Users) PasswordSet() bool {
	return u != nil && !u.def.nopass
}

// authRequired reports whether a connection that has not authenticated must
// do so before running commands: when the default user needs a password or
// is off.
func (u *Users) authRequired() bool {
	return u != nil && (!u.def.nopass || !u.def.on)
}

// authenticate reports whether password is one of user name's, and the user
// is on. The password's hash is compared in constant time with every hash
// the user has; the hash is computed even for an unknown user.
func (u *Users) authenticate(name, password []byte) bool {
	sum := sha256.Sum256(password)
	if u == nil { // only a nopass default user
		return string(name) == defaultUser
	}
	usr := u.byName[string(name)]
	if usr == nil || !usr.on {
		return false
	}
	if usr.nopass {
		return true
	}
	match := 0
	for i := range usr.hashes {
		match |= subtle.ConstantTimeCompare(sum[:], usr.hashes[i][:])
	}
	return match == 1
}

// AuthRequired reports whether client cl must authenticate before it may
// run commands other than AUTH, HELLO, QUIT and RESET. The server asks it to
// frame an unauthenticated client's requests under Redis's tighter limits.
// It is called by the connection's driver (its own goroutine or its event
// loop), like Dispatch.
func (c *Commands) AuthRequired(cl *Client) bool {
	return !cl.Authenticated && c.opts.Users.authRequired()
}

// authorize returns the error text for a command the client may not run
// yet, or "" when it may run it. Like Redis, it lets a command with the
// wrong number of arguments through: Redis checks the arity before
// authentication, so the dispatcher's arity error comes first.
func (c *Commands) authorize(cl *Client, cmd *Command, args [][]byte) string {
	if cmd.Flags&FlagNoAuth != 0 || !c.AuthRequired(cl) || !arityOK(cmd.Arity, len(args)) {
		return ""
	}
	return msgNoAuth
}

// login authenticates cl as user name if password is right, and reports
// whether it is. A failed attempt leaves cl as it was, as in Redis.
func (c *Commands) login(cl *Client, name, password []byte) bool {
	if !c.opts.Users.authenticate(name, password) {
		return false
	}
	cl.User, cl.Authenticated = string(name), true
	cl.changed(EffectAuth | EffectInfo)
	return true
}

// withAuthSettings returns params, the CONFIG GET parameters, with
// requirepass always empty: the password never leaves the server, where
// Redis shows it. When a user database is configured, requirepass and
// aclfile (the users file's path, never its contents) are added if params
// lack them.
func (c *Commands) withAuthSettings(params []Setting) []Setting {
	hasPass, hasFile := false, false
	for i := range params {
		switch {
		case strings.EqualFold(params[i].Name, "requirepass"):
			params[i].Value, hasPass = "", true
		case strings.EqualFold(params[i].Name, "aclfile"):
			hasFile = true
		}
	}
	if c.opts.Users == nil {
		return params
	}
	if !hasPass {
		params = append(params, Setting{Name: "requirepass", Value: ""})
	}
	if !hasFile {
		params = append(params, Setting{Name: "aclfile", Value: c.opts.Users.Path()})
	}
	return params
}

// redacted stands for a secret argument wherever a command is shown
// (SLOWLOG, logs), as in Redis.
const redacted = "(redacted)"

// redactSecrets returns args with the secrets Redis redacts replaced by
// "(redacted)": every argument of AUTH, and the two arguments (user name
// and password) after each AUTH option of HELLO. It returns args itself
// when there is nothing to hide, and never changes it. Whatever shows or
// logs a command's arguments (SLOWLOG, MONITOR, logs) passes them through
// it first.
func redactSecrets(args [][]byte) [][]byte {
	var out [][]byte
	hide := func(i int) {
		if out == nil {
			out = append([][]byte(nil), args...)
		}
		out[i] = []byte(redacted)
	}
	switch {
	case len(args) < 2:
	case equalFold(args[0], "auth"):
		for i := 1; i < len(args); i++ {
			hide(i)
		}
	case equalFold(args[0], "hello"):
		// Walk the options as HELLO reads them, so that SETNAME's value
		// is never taken for an AUTH option ("SETNAME auth AUTH u p").
		for i := 1; i < len(args); i++ {
			switch {
			case equalFold(args[i], "auth") && i+2 < len(args):
				hide(i + 1)
				hide(i + 2)
				i += 2
			case equalFold(args[i], "setname") && i+1 < len(args):
				i++
			}
		}
	}
	if out == nil {
		return args
	}
	return out
}
