package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// LongValue is the longest request value a key or a metric label holds as
// it is: a longer one (a long path or header) is held as "%H" and its
// SHA-256 in hex, so that it is counted like any other while keys and
// labels stay bounded. An escaped value has no "%H" (escapes are "%" and
// two hex digits), so the two kinds never meet.
const LongValue = 256

// shortValue is v, or its digest when it is longer than LongValue.
func shortValue(v string) string {
	if len(v) <= LongValue {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "%H" + hex.EncodeToString(sum[:])
}

// stateKey is a limit's key in the engine (see the package doc):
// "rls:" family (the engine family's Name) ":{" domain "}", then "|" key "=" value for each entry,
// each part escaped; a share_threshold entry's value is its pattern, whose
// '*' alone is left unescaped. The domain is the key's Redis Cluster hash
// tag (its first '{' and the first '}' after it, braces in the domain being
// escaped), so that all of a request's keys, which share its domain, share
// a hash slot.
func stateKey(a Algorithm, domain string, entries []Entry, patterns []string) string {
	var b strings.Builder
	b.WriteString("rls:")
	b.WriteString(a.Family().Name())
	b.WriteString(":{")
	escape(&b, domain)
	b.WriteByte('}')
	for i, e := range entries {
		b.WriteByte('|')
		escape(&b, e.Key)
		b.WriteByte('=')
		if patterns != nil && patterns[i] != "" {
			escape(&b, strings.TrimSuffix(patterns[i], "*"))
			b.WriteByte('*')
		} else if len(e.Value) > LongValue {
			b.WriteString(shortValue(e.Value))
		} else {
			escape(&b, e.Value)
		}
	}
	return b.String()
}

// escape writes s with the key's separators, the hash tag's braces and
// '%' escaped as %XX, so that the parts of a key can be told apart and the
// hash tag is the whole domain.
func escape(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%', '|', '=', '*', '{', '}':
			b.WriteByte('%')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		default:
			b.WriteByte(c)
		}
	}
}
