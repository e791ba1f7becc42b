package server

import (
	"bytes"
	"math"
)

// Redis's fixed protocol limits.
const (
	// maxHeaderLen is the longest "*N" or "$N" line without its CR
	// (Redis's PROTO_INLINE_MAX_SIZE).
	maxHeaderLen = 64 << 10
	// maxMultibulkLen is the most arguments one request may have.
	maxMultibulkLen = 1024 * 1024
)

// Protocol errors, worded as Redis words them after "Protocol error: ".
const (
	msgInvalidMultibulk = "invalid multibulk length"
	msgInvalidBulk      = "invalid bulk length"
	msgTooBigMultibulk  = "too big mbulk count string"
	msgTooBigBulk       = "too big bulk count string"
	msgTooBigInline     = "too big inline request"
	msgUnbalancedQuotes = "unbalanced quotes in request"
	msgExpectedDollar   = "expected '$', got '" // then the byte and "'"
	msgUnauthMultibulk  = "unauthenticated multibulk length"
	msgUnauthBulk       = "unauthenticated bulk length"
)

// Redis's limits for a client that must authenticate and has not: a bigger
// request is a protocol error, so that no one can make the server hold
// large requests without knowing the password.
const (
	unauthMaxMultibulk = 10
	unauthMaxBulk      = 16 << 10
)

// limits are the bounds a framer enforces.
type limits struct {
	maxBulk      int64 // longest argument ("$N")
	maxInline    int   // longest inline request without its newline
	maxHeader    int   // longest "*N" or "$N" line without its CR
	maxMultibulk int64 // most arguments ("*N")
}

// frameState is where a framer is in the request stream.
type frameState uint8

const (
	stFrameStart frameState = iota // the next byte starts a request
	stCountLine                    // after '*': the argument count, up to CR
	stCountEnd                     // the byte after the count's CR ends the line
	stLenLine                      // an argument's "$N" line, up to CR
	stLenEnd                       // the byte after the length's CR ends the line
	stArgData                      // the argument's bytes
	stArgEnd1                      // the first of the two bytes after an argument
	stArgEnd2                      // the second of them
	stInline                       // an inline request, up to LF
)

// framer checks a stream of client bytes against Redis's request grammar and
// limits, a byte at a time, keeping its state across reads. It passes valid
// multibulk requests on in canonical form (CR LF where Redis skips two bytes
// unchecked), drops the requests Redis ignores ("*0", "*-1"), turns inline
// requests into multibulk ones, and stops at the first violation. What it
// passes on is exactly what redcon parses without a protocol error of its
// own, and no header longer than a legal one is ever passed on, so redcon
// never sees a length it would overflow on. It allocates nothing per byte;
// only inline requests use buffers, bounded by maxInline.
//
// A framer is not safe for concurrent use.
type framer struct {
	lim   limits
	state frameState

	num      number // the number on the current count or length line
	lineLen  int    // bytes of the current count or length line so far, CR excluded
	first    byte   // the first byte of the current length line ('$' when valid)
	emit     bool   // the current line is valid so far and is being passed on
	starHeld bool   // the '*' waits until the first digit shows the count is positive
	argsLeft int64  // arguments still to come in the current request
	dataLeft int64  // bytes of the current argument still to come

	inline  []byte // the inline request collected so far
	words   []byte // the arguments of an inline request, back to back
	ends    []int  // where each argument in words ends
	pendBuf []byte // backs pend
	pend    []byte // a converted inline request not yet passed on

	frameStart int    // where the current request's output starts in the caller's buffer
	completed  int    // requests passed on whole, pend's included once delivered
	violation  string // the protocol error found; "" while the stream is valid

	// unauth is set while the client must authenticate and has not: the
	// unauthenticated limits apply, and transduce stops after each whole
	// request, so that the next is framed only once this one (perhaps an
	// AUTH) has run, as Redis parses a request only after running the one
	// before it.
	unauth bool
}

// transduce reads src and writes what may be passed on to dst from dst[w]
// on, stopping when src is used up, dst is full, a converted inline request
// is waiting in f.pend, or a violation is found. It returns where its output
// ends in dst and how many bytes of src it read. On a violation it takes
// back what dst holds of the offending request, so the requests before it
// still run and nothing of it is passed on after them.
func (f *framer) transduce(dst []byte, w int, src []byte) (_, r int) {
	for r < len(src) && w < len(dst) {
		switch f.state {
		case stFrameStart:
			f.frameStart = w
			if src[r] != '*' {
				f.state = stInline
				f.inline = f.inline[:0]
				continue
			}
			r++
			f.startLine()
			f.state, f.starHeld = stCountLine, true

		case stInline:
			line, found := src[r:], false
			if i := bytes.IndexByte(line, '\n'); i >= 0 {
				line, found = line[:i], true
			}
			if len(f.inline)+len(line) > f.lim.maxInline {
				return f.fail(msgTooBigInline, r)
			}
			f.inline = append(f.inline, line...)
			r += len(line)
			if !found {
				continue
			}
			r++ // the LF
			f.state = stFrameStart
			if !f.convertInline() {
				return f.fail(msgUnbalancedQuotes, r)
			}
			if len(f.pend) > 0 {
				return w, r
			}

		case stCountLine:
			c := src[r]
			if f.starHeld {
				// Only a count starting with 1-9 can be positive; "*0" and
				// "*-N" are dropped or invalid, so their '*' never goes out.
				f.starHeld = false
				if '1' <= c && c <= '9' {
					f.emit = true
					dst[w] = '*'
					w++
					continue // c itself goes out on the next turn
				}
			}
			r++
			if c == '\r' {
				f.state = stCountEnd
				w = f.put(dst, w, c)
				continue
			}
			if f.lineLen++; f.lineLen+1 > f.lim.maxHeader { // +1 for the '*'
				return f.fail(msgTooBigMultibulk, r)
			}
			f.num.add(c)
			f.emit = f.emit && f.num.within(f.lim.maxMultibulk)
			w = f.put(dst, w, c)

		case stCountEnd:
			r++ // Redis does not look at the byte after CR
			n, ok := f.num.value()
			if !ok || n > f.lim.maxMultibulk {
				return f.fail(msgInvalidMultibulk, r)
			}
			if f.unauth && n > unauthMaxMultibulk {
				return f.fail(msgUnauthMultibulk, r)
			}
			if n <= 0 {
				f.state = stFrameStart // Redis ignores the request
				continue
			}
			dst[w] = '\n'
			w++
			f.argsLeft = n
			f.startLine()
			f.state = stLenLine

		case stLenLine:
			c := src[r]
			r++
			if f.lineLen == 0 { // the line's first byte: CR ends the line, others count
				f.first = c
				f.emit = c == '$'
			}
			if c == '\r' {
				f.state = stLenEnd
				w = f.put(dst, w, c)
				continue
			}
			if f.lineLen++; f.lineLen > f.lim.maxHeader {
				return f.fail(msgTooBigBulk, r)
			}
			if f.lineLen > 1 {
				f.num.add(c)
				f.emit = f.emit && f.num.within(f.lim.maxBulk)
			}
			w = f.put(dst, w, c)

		case stLenEnd:
			r++ // Redis does not look at the byte after CR
			if f.first != '$' {
				return f.fail(expectedDollar(f.first), r)
			}
			n, ok := f.num.value()
			if !ok || n < 0 || n > f.lim.maxBulk {
				return f.fail(msgInvalidBulk, r)
			}
			if f.unauth && n > unauthMaxBulk {
				return f.fail(msgUnauthBulk, r)
			}
			dst[w] = '\n'
			w++
			f.dataLeft = n
			f.state = stArgData
			if n == 0 {
				f.state = stArgEnd1
			}

		case stArgData:
			n := min(len(src)-r, len(dst)-w)
			if int64(n) > f.dataLeft {
				n = int(f.dataLeft)
			}
			copy(dst[w:w+n], src[r:r+n])
			w += n
			r += n
			f.passed(n)

		case stArgEnd1:
			// Redis skips the two bytes after an argument unchecked; redcon
			// wants CR LF there, so they go out as CR LF.
			r++
			dst[w] = '\r'
			w++
			f.state = stArgEnd2

		case stArgEnd2:
			r++
			dst[w] = '\n'
			w++
			f.argsLeft--
			f.state = stFrameStart
			if f.argsLeft == 0 {
				f.completed++
				if f.unauth {
					return w, r
				}
			} else {
				f.startLine()
				f.state = stLenLine
			}
		}
	}
	return w, r
}

// put writes c to dst[w] if the current line is being passed on.
func (f *framer) put(dst []byte, w int, c byte) int {
	if !f.emit {
		return w
	}
	dst[w] = c
	return w + 1
}

// startLine resets the per-line state for a new count or length line.
func (f *framer) startLine() {
	f.num = number{}
	f.lineLen, f.first, f.emit, f.starHeld = 0, 0, false, false
}

// passed records that n bytes of the current argument went out.
func (f *framer) passed(n int) {
	f.dataLeft -= int64(n)
	if f.dataLeft == 0 {
		f.state = stArgEnd1
	}
}

// fail records a violation; the output of the offending request, from
// f.frameStart on, is taken back.
func (f *framer) fail(msg string, r int) (int, int) {
	f.violation = msg
	return f.frameStart, r
}

// expectedDollar words Redis's error for an argument not starting with '$'.
func expectedDollar(got byte) string {
	return msgExpectedDollar + string([]byte{got}) + "'"
}

// convertInline splits the collected inline request into arguments and, if
// there are any, encodes them as a multibulk request in f.pend. It reports
// false on unbalanced quotes.
func (f *framer) convertInline() bool {
	line := f.inline
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	var ok bool
	f.words, f.ends, ok = splitInline(line, f.words[:0], f.ends[:0])
	if !ok {
		return false
	}
	if len(f.ends) == 0 {
		return true // an empty line: Redis ignores it
	}
	f.pendBuf = appendMultibulk(f.pendBuf[:0], f.words, f.ends)
	f.pend = f.pendBuf
	return true
}

// number parses a length a byte at a time exactly as Redis's string2ll
// does: an optional '-', then "0" alone or digits not starting with 0, at
// most 20 bytes, within int64.
type number struct {
	v    uint64 // magnitude so far
	n    int    // bytes seen
	neg  bool   // started with '-'
	zero bool   // the first digit was 0: nothing may follow
	bad  bool   // not a number, whatever follows
}

// add appends byte c to the number.
func (x *number) add(c byte) {
	i := x.n
	x.n++
	switch {
	case x.bad:
	case x.n > 20:
		x.bad = true
	case i == 0 && c == '-':
		x.neg = true
	case c < '0' || c > '9' || x.zero:
		x.bad = true
	case c == '0' && x.v == 0: // a leading zero
		x.zero = true
		x.bad = x.neg // "-0" is not a number
	default:
		d := uint64(c - '0')
		if x.v > (math.MaxUint64-d)/10 {
			x.bad = true
			return
		}
		x.v = x.v*10 + d
	}
}

// within reports whether the number may still turn out to be in 0..max.
func (x *number) within(max int64) bool {
	return !x.bad && !x.neg && x.v <= uint64(max)
}

// value returns the number, and false if the bytes are not one.
func (x *number) value() (int64, bool) {
	switch {
	case x.bad || x.n == 0 || (x.neg && x.n == 1):
		return 0, false
	case x.neg:
		if x.v > 1<<63 {
			return 0, false
		}
		return int64(-x.v), true // 1<<63 wraps to MinInt64, as it should
	case x.v > math.MaxInt64:
		return 0, false
	}
	return int64(x.v), true
}
