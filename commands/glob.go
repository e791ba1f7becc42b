package commands

// globMatch reports whether s matches the glob pattern as Redis's
// stringmatchlen does (case-sensitive): * and ? wildcards, [abc], [^abc] and
// [a-z] classes, and backslash escapes. Like Redis, an empty string matches
// no pattern; KEYS and SCAN treat a lone "*" as "everything" before asking.
func globMatch(pattern, s []byte) bool {
	skip := false
	return globMatchFrom(pattern, s, false, 0, &skip)
}

// globMatchFold is globMatch ignoring case as Redis's nocase matching does
// (CONFIG GET, COMMAND LIST's PATTERN): bytes compare through C's tolower,
// a class's range too, but only after its bounds were put in order as
// signed chars, and an escaped byte in a class still compares exactly.
func globMatchFold(pattern, s []byte) bool {
	skip := false
	return globMatchFrom(pattern, s, true, 0, &skip)
}

// cLower is C's tolower in the C locale of an int holding a char, signed
// as Redis's are: ASCII letters are lowered, and a byte from 0x80 (a
// negative char) becomes its unsigned value, as glibc's table maps it.
func cLower(c int) int {
	switch {
	case c < 0:
		return c + 256
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	}
	return c
}

// sameByte compares a pattern's byte with the string's, through cLower
// when nocase.
func sameByte(p, c byte, nocase bool) bool {
	if nocase {
		return cLower(int(int8(p))) == cLower(int(int8(c)))
	}
	return p == c
}

// maxGlobNesting bounds the * recursion as Redis does, so a hostile pattern
// cannot take exponential time.
const maxGlobNesting = 1000

func globMatchFrom(p, s []byte, nocase bool, nesting int, skipLonger *bool) bool {
	if nesting > maxGlobNesting {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if globMatchFrom(p[1:], s, nocase, nesting+1, skipLonger) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			var matched bool
			matched, p = globClass(p[1:], s[0], nocase)
			if !matched {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if !sameByte(p[0], s[0], nocase) {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// globClass matches c against the class that starts at p (just after '[' )
// and returns the pattern positioned on the class's last byte: the closing
// ']', or the final byte of an unterminated class, as Redis reads it.
func globClass(p []byte, c byte, nocase bool) (bool, []byte) {
	start := p
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	match := false
	for {
		switch {
		case len(p) >= 2 && p[0] == '\\':
			p = p[1:]
			if p[0] == c {
				match = true
			}
		case len(p) > 0 && p[0] == ']':
			return match != not, p
		case len(p) == 0:
			// Unterminated: stop on the last byte, so the caller's step
			// past it ends the pattern.
			if len(start) == 0 {
				return match != not, []byte{']'}
			}
			return match != not, start[len(start)-1:]
		case len(p) >= 3 && p[1] == '-':
			// Redis compares the bounds and the byte as C chars, which
			// are signed: bytes from 0x80 come before ASCII.
			lo, hi, sc := int(int8(p[0])), int(int8(p[2])), int(int8(c))
			if lo > hi {
				lo, hi = hi, lo
			}
			if nocase { // after the swap, as in Redis: [\xc3-z] holds nothing
				lo, hi, sc = cLower(lo), cLower(hi), cLower(sc)
			}
			p = p[2:]
			if lo <= sc && sc <= hi {
				match = true
			}
		default:
			if sameByte(p[0], c, nocase) {
				match = true
			}
		}
		p = p[1:]
	}
}
