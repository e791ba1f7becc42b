package server

// splitInline splits an inline request into arguments exactly as Redis's
// sdssplitargs does, appending their bytes to words and where each ends to
// ends. Arguments are separated by blanks; "double quotes" take the escapes
// \n \r \t \b \a \xHH and \<any>, 'single quotes' take \'; a closing quote
// must be followed by a blank or the end. A NUL byte ends the line, as it
// ends the C string Redis splits. ok is false on unbalanced quotes.
func splitInline(line, words []byte, ends []int) (_ []byte, _ []int, ok bool) {
	at := func(i int) byte { // the C string's byte i, 0 past its end
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	i := 0
	for {
		for at(i) != 0 && isSpace(at(i)) {
			i++
		}
		if at(i) == 0 {
			return words, ends, true
		}
		quote := byte(0) // the open quote, '"' or '\'', if any
		for done := false; !done; {
			c := at(i)
			switch {
			case quote == 0:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"', '\'':
					quote = c
				default:
					words = append(words, c)
				}
			case quote == '"' && c == '\\' && at(i+1) == 'x' && isHex(at(i+2)) && isHex(at(i+3)):
				words = append(words, unhex(at(i+2))<<4|unhex(at(i+3)))
				i += 3
			case quote == '"' && c == '\\' && at(i+1) != 0:
				i++
				words = append(words, unescape(at(i)))
			case quote == '\'' && c == '\\' && at(i+1) == '\'':
				i++
				words = append(words, '\'')
			case c == quote:
				if at(i+1) != 0 && !isSpace(at(i+1)) {
					return words, ends, false
				}
				done = true
			case c == 0:
				return words, ends, false
			default:
				words = append(words, c)
			}
			if at(i) != 0 {
				i++
			}
		}
		ends = append(ends, len(words))
	}
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || ('\t' <= c && c <= '\r')
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// unhex is the value of hexadecimal digit c.
func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// unescape is the byte that a backslash followed by c stands for in double
// quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
