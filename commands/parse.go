package commands

import (
	"bytes"
	"strings"
)

// parseCellInt parses an integer as redis-cell does (Rust's i64::from_str):
// an optional sign, then one or more ASCII digits, within int64.
func parseCellInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	switch b[0] {
	case '+':
		b = b[1:]
	case '-':
		neg = true
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	// Accumulate as a negative number so that MinInt64 parses.
	const min = -1 << 63
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n < (min+d)/10 {
			return 0, false
		}
		n = n*10 - d
	}
	if !neg {
		if n == min {
			return 0, false
		}
		n = -n
	}
	return n, true
}

// ParseInt parses an integer as Redis's string2ll does: an optional minus
// sign, digits without leading zeros (except "0"), at most 20 bytes, within
// int64. It is the one rule for Redis's integers: every command argument
// read as an integer goes through it, and so do the server's RESP "*N" and
// "$N" lengths. It allocates nothing.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (1<<64-1)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u < uint64(c-'0') {
			return 0, false
		}
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// equalFold reports whether b equals the lower-case ASCII word s in any case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// maxQuotedArg is the most bytes of an argument an error quotes, as Redis
// quotes a command's name ("%.128s") and arguments.
const maxQuotedArg = 128

// QuoteArg makes an argument safe to quote in an error: at most
// maxQuotedArg bytes, up to its first NUL byte, on one line. Every error
// that cuts what it quotes, as Redis cuts a command's or subcommand's name,
// cuts it here; the server quotes a panicking command's name with it too.
func QuoteArg(b []byte) string {
	b = cString(b)
	if len(b) > maxQuotedArg {
		b = b[:maxQuotedArg]
	}
	return oneLine(string(b))
}

// quoteC makes an argument safe to quote whole in an error, as Redis's
// "%s" quotes it: up to its first NUL byte, on one line.
func quoteC(b []byte) string { return oneLine(string(cString(b))) }

// cString returns b up to its first NUL byte: what C's "%s" prints of
// an argument, as Redis's error texts quote one.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// oneLine makes text safe inside an error reply, as Redis does: CR and LF
// become spaces.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}
