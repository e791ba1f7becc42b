package server

import (
	"bytes"

	"github.com/cellserver/cellserver/commands"
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

// limits are the bounds a request reader enforces.
type limits struct {
	maxBulk      int64 // longest argument ("$N")
	maxInline    int   // longest inline request without its newline
	maxHeader    int   // longest "*N" or "$N" line without its CR
	maxMultibulk int64 // most arguments ("*N")
}

// parseStatus is what parse found at the start of the unparsed bytes.
type parseStatus uint8

const (
	needMore   parseStatus = iota // no complete request yet
	gotRequest                    // a request, in the args parse returned
	violation                     // a protocol error, in the message parse returned
)

// span is where one argument lies, as offsets from its request's start.
type span struct{ start, end int }

// parse parses the request at the start of the unparsed bytes, skipping
// the requests Redis ignores ("*0", "*-1", empty inline lines). On
// gotRequest, args points into the reader's buffer (or, for an inline
// request, into its scratch space) and is valid until the next call to
// parse or fill. On violation, msg is Redis's wording after "Protocol
// error: ", and the reader is not to be used again. unauth applies the
// limits for a client that has yet to authenticate.
//
// A request that arrives in pieces is not scanned again from its start on
// every call: the arguments and the header line found so far are kept, so
// reading a request costs time linear in its length however it is split.
func (rd *requestReader) parse(unauth bool) (args [][]byte, st parseStatus, msg string) {
	for {
		b := rd.buf[rd.r:rd.w]
		if len(b) == 0 {
			return nil, needMore, ""
		}
		if !rd.inMulti {
			if b[0] != '*' {
				args, st, msg = rd.parseInline(b)
				if st == gotRequest && len(args) == 0 {
					continue // an empty line: Redis ignores it
				}
				return args, st, msg
			}
			cr, st, msg := rd.line(b, 0, msgTooBigMultibulk)
			if st != gotRequest {
				return nil, st, msg
			}
			n, ok := commands.ParseInt(b[1:cr]) // Redis reads lengths with string2ll too
			switch {
			case !ok || n > rd.lim.maxMultibulk:
				return nil, violation, msgInvalidMultibulk
			case unauth && n > unauthMaxMultibulk:
				return nil, violation, msgUnauthMultibulk
			case n <= 0:
				rd.r += cr + 2 // Redis ignores the request
				continue
			}
			rd.inMulti, rd.argsLeft, rd.pos, rd.bulk = true, n, cr+2, -1
			rd.spans = rd.spans[:0]
		}
		return rd.parseMultibulk(b, unauth)
	}
}

// parseMultibulk goes on with the multibulk request at the start of b,
// whose count line has been read.
func (rd *requestReader) parseMultibulk(b []byte, unauth bool) ([][]byte, parseStatus, string) {
	for rd.argsLeft > 0 {
		if rd.bulk < 0 { // the "$N" line
			if rd.pos >= len(b) {
				return nil, needMore, ""
			}
			cr, st, msg := rd.line(b, rd.pos, msgTooBigBulk)
			if st != gotRequest {
				return nil, st, msg
			}
			if b[rd.pos] != '$' {
				return nil, violation, expectedDollar(b[rd.pos])
			}
			n, ok := commands.ParseInt(b[rd.pos+1 : cr])
			switch {
			case !ok || n < 0 || n > rd.lim.maxBulk:
				return nil, violation, msgInvalidBulk
			case unauth && n > unauthMaxBulk:
				return nil, violation, msgUnauthBulk
			}
			rd.bulk, rd.pos = n, cr+2
		}
		// Redis skips the two bytes after an argument unchecked.
		if int64(len(b)-rd.pos) < rd.bulk+2 {
			return nil, needMore, ""
		}
		end := rd.pos + int(rd.bulk)
		rd.spans = append(rd.spans, span{rd.pos, end})
		rd.pos, rd.bulk = end+2, -1
		rd.argsLeft--
	}
	args := rd.args[:0]
	for _, s := range rd.spans {
		args = append(args, b[s.start:s.end:s.end]) // appending cannot reach the next argument
	}
	rd.args = args
	rd.r += rd.pos
	rd.inMulti = false
	return args, gotRequest, ""
}

// line finds the CR ending the header line that starts at b[start]. It
// reports needMore until the byte after the CR has arrived too, as Redis
// waits for it, and a violation (tooBig) once the line is longer than a
// header may be, with or without its CR. The search goes on where the last
// call left it.
func (rd *requestReader) line(b []byte, start int, tooBig string) (cr int, st parseStatus, msg string) {
	from := max(rd.scan, start)
	i := bytes.IndexByte(b[from:], '\r')
	if i < 0 {
		if len(b)-start > rd.lim.maxHeader {
			return 0, violation, tooBig
		}
		rd.scan = len(b)
		return 0, needMore, ""
	}
	cr = from + i
	switch {
	case cr-start > rd.lim.maxHeader:
		return 0, violation, tooBig
	case cr+1 >= len(b):
		rd.scan = cr
		return 0, needMore, ""
	}
	rd.scan = 0
	return cr, gotRequest, ""
}

// parseInline reads the inline request at the start of b: a line of text
// up to LF, split into arguments as Redis splits it. An empty line gives
// no arguments.
func (rd *requestReader) parseInline(b []byte) ([][]byte, parseStatus, string) {
	lf := rd.inlineEnd(b)
	if lf < 0 {
		if len(b) > rd.lim.maxInline {
			return nil, violation, msgTooBigInline
		}
		return nil, needMore, ""
	}
	if lf > rd.lim.maxInline {
		return nil, violation, msgTooBigInline
	}
	line := b[:lf]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	var ok bool
	rd.words, rd.ends, ok = splitInline(line, rd.words[:0], rd.ends[:0])
	if !ok {
		return nil, violation, msgUnbalancedQuotes
	}
	rd.r += lf + 1
	args, start := rd.args[:0], 0
	for _, end := range rd.ends {
		args = append(args, rd.words[start:end:end])
		start = end
	}
	rd.args = args
	return args, gotRequest, ""
}

// inlineEnd returns where the LF that ends the inline line at the start
// of b is, or -1 while there is none. A NUL byte before the LF hides it
// for good, as it stops the strchr with which Redis looks for it: the line
// never ends, and what comes after it waits unparsed until it is too big.
// The search goes on where the last call left it: past the bytes searched,
// or at the NUL.
func (rd *requestReader) inlineEnd(b []byte) int {
	from := rd.scan
	if from < len(b) && b[from] == 0 {
		return -1 // the NUL the last call stopped at
	}
	end := len(b)
	lf := bytes.IndexByte(b[from:], '\n')
	if lf >= 0 {
		end = from + lf
	}
	if nul := bytes.IndexByte(b[from:end], 0); nul >= 0 {
		rd.scan = from + nul
		return -1
	}
	if lf < 0 {
		rd.scan = len(b)
		return -1
	}
	rd.scan = 0
	return end
}

// expectedDollar words Redis's error for an argument not starting with '$'.
func expectedDollar(got byte) string {
	return msgExpectedDollar + string([]byte{got}) + "'"
}
