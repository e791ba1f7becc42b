package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// parseResult is what a reader parsed from a stream.
type parseResult struct {
	cmds   [][][]byte
	errMsg string // the protocol error, "" if the stream just ended
}

// runParser feeds in to a request reader chunk bytes at a time, parsing
// every request as soon as it is complete, the way a connection does.
func runParser(in []byte, lim limits, chunk int, unauth bool) parseResult {
	return runParserSplit(in, lim, func(int) int { return chunk }, unauth)
}

// runParserSplit feeds in to a request reader in pieces whose sizes
// size(i) gives for the i-th piece.
func runParserSplit(in []byte, lim limits, size func(i int) int, unauth bool) parseResult {
	rd := newRequestReader(lim)
	var res parseResult
	for piece := 0; ; {
		args, st, msg := rd.parse(unauth)
		switch st {
		case gotRequest:
			cmd := make([][]byte, len(args))
			for i, a := range args {
				cmd[i] = bytes.Clone(a) // args point into the buffer
			}
			res.cmds = append(res.cmds, cmd)
			continue
		case violation:
			res.errMsg = msg
			return res
		}
		if len(in) == 0 {
			return res
		}
		rd.shrink()
		room := rd.room()
		n := copy(room[:min(len(room), max(size(piece), 1))], in)
		piece++
		in = in[n:]
		rd.filled(n)
	}
}

// testLimits are small, so that tests and the fuzzer reach every limit.
func testLimits() limits {
	return limits{maxBulk: 16, maxInline: 24, maxHeader: 12, maxMultibulk: 4}
}

func TestParseFraming(t *testing.T) {
	tests := []struct {
		name string
		in   string
		cmds [][]string // the commands parsed
		err  string
	}{
		{"multibulk", "*2\r\n$4\r\nECHO\r\n$3\r\na b\r\n", [][]string{{"ECHO", "a b"}}, ""},
		{"inline", "ECHO a  b\r\nPING\n", [][]string{{"ECHO", "a", "b"}, {"PING"}}, ""},
		{"ignored", "*0\r\n*-1\r\n*-1234567890\r\n*1\r\n$0\r\n\r\n", [][]string{{""}}, ""},
		{"incomplete at EOF", "*2\r\n$4\r\nECHO\r\n$3\r\na", nil, ""},
		{"limit values", "*4\r\n$16\r\n0123456789abcdef\r\n$0\r\n\r\n$1\r\nx\r\n$1\r\ny\r\n", [][]string{{"0123456789abcdef", "", "x", "y"}}, ""},
		{"count over limit", "PING\r\n*5\r\n", [][]string{{"PING"}}, msgInvalidMultibulk},
		{"count of -0", "*-0\r\n", nil, msgInvalidMultibulk},
		{"count empty", "*\r\n", nil, msgInvalidMultibulk},
		{"count line too long", "*123456789012", nil, msgTooBigMultibulk},
		{"count line at limit", "*12345678901\r\n", nil, msgInvalidMultibulk},
		{"bulk over limit", "*1\r\n$17\r\n", nil, msgInvalidBulk},
		{"bulk length empty", "*1\r\n$\r\n", nil, msgInvalidBulk},
		{"bulk length line too long", "*1\r\n$000000000000", nil, msgTooBigBulk},
		{"expected dollar", "PING\r\n*1\r\n:1\r\n", [][]string{{"PING"}}, "expected '$', got ':'"},
		{"expected dollar waits for the line", "*1\r\n:123456789012", nil, msgTooBigBulk},
		{"inline too long", "PING\r\n0123456789012345678901234", [][]string{{"PING"}}, msgTooBigInline},
		{"inline at limit", "01234567890123456789012\r\n", [][]string{{"01234567890123456789012"}}, ""},
		{"unbalanced double quote", "PING\r\nECHO \"a\n", [][]string{{"PING"}}, msgUnbalancedQuotes},
		{"closing quote then a letter", "ECHO 'a'b\n", nil, msgUnbalancedQuotes},
		{"NUL hides an inline line's end", "PING\nECHO a\x00b\nPING\n", [][]string{{"PING"}}, ""},
		{"NUL first", "\x00\r\nPING\n", nil, ""},
		{"NUL then too much", "PING\nECHO\x00\n0123456789012345678", [][]string{{"PING"}}, msgTooBigInline},
		{"NUL then at limit", "PING\nECHO\x00\n012345678901234567", [][]string{{"PING"}}, ""},
		{"NUL after the line", "PING\n\x00", [][]string{{"PING"}}, ""},
		{"NUL in a multibulk argument", "*1\r\n$4\r\nPI\x00G\r\n", [][]string{{"PI\x00G"}}, ""},
		{"violation in the second command of a read", "*1\r\n$4\r\nPING\r\n*1\r\n$99\r\n", [][]string{{"PING"}}, msgInvalidBulk},
		{"argument starting with CR", "*1\r\n\r\n", nil, "expected '$', got '\r'"},
	}
	for _, tt := range tests {
		check := func(t *testing.T, res parseResult) {
			t.Helper()
			if got := strCmds(res.cmds); !slices.EqualFunc(got, tt.cmds, slices.Equal) {
				t.Errorf("commands %q, want %q", got, tt.cmds)
			}
			if res.errMsg != tt.err {
				t.Errorf("error %q, want %q", res.errMsg, tt.err)
			}
		}
		for _, chunk := range []int{1, 2, 3, 7, 4096} {
			t.Run(fmt.Sprintf("%s/chunk=%d", tt.name, chunk), func(t *testing.T) {
				check(t, runParser([]byte(tt.in), testLimits(), chunk, false))
			})
		}
		t.Run(tt.name+"/every split", func(t *testing.T) {
			for at := 1; at < len(tt.in); at++ { // two pieces, cut at every byte boundary
				check(t, runParserSplit([]byte(tt.in), testLimits(), func(i int) int {
					if i == 0 {
						return at
					}
					return len(tt.in)
				}, false))
			}
		})
	}
}

func TestParseUnauthenticatedLimits(t *testing.T) {
	lim := limits{maxBulk: 1 << 20, maxInline: 1 << 10, maxHeader: 1 << 10, maxMultibulk: maxMultibulkLen}
	big := strings.Repeat("x", unauthMaxBulk)
	tests := []struct {
		name string
		in   string
		cmds [][]string
		err  string
	}{
		{"count over", "PING\r\n*11\r\n", [][]string{{"PING"}}, msgUnauthMultibulk},
		{"bulk over", "*2\r\n$4\r\nECHO\r\n$16385\r\n", nil, msgUnauthBulk},
		{"largest", cmd("1", "2", "3", "4", "5", "6", "7", "8", "9", big), [][]string{{"1", "2", "3", "4", "5", "6", "7", "8", "9", big}}, ""},
		{"inline has no limit", "a b c d e f g h i j k\n", [][]string{{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}}, ""},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 5, 4096} {
			res := runParser([]byte(tt.in), lim, chunk, true)
			if got := strCmds(res.cmds); !slices.EqualFunc(got, tt.cmds, slices.Equal) || res.errMsg != tt.err {
				t.Errorf("%s/chunk=%d: %d commands, error %q; want %d, %q", tt.name, chunk, len(got), res.errMsg, len(tt.cmds), tt.err)
			}
		}
	}
}

// strCmds turns commands' arguments into strings.
func strCmds(cmds [][][]byte) [][]string {
	out := make([][]string, len(cmds))
	for i, c := range cmds {
		out[i] = make([]string, len(c))
		for j, a := range c {
			out[i][j] = string(a)
		}
	}
	return out
}

func TestSplitInlineMatchesSdssplitargs(t *testing.T) {
	tests := []struct {
		line string
		want string // args joined by "|"
		ok   bool
	}{
		{"", "", true},
		{"  \t ", "", true},
		{"set a b", "set|a|b", true},
		{" set\ta\v b ", "set|a\v|b", true}, // \v is a blank only between tokens
		{`"a b" 'c d'`, "a b|c d", true},
		{`"\x41\x4a\x4Z"`, `AJx4Z`, true},
		{`"\n\r\t\b\a\q\\"`, "\n\r\t\b\a" + `q\`, true},
		{`'a\'b\n'`, `a'b\n`, true},
		{`a"b c"d`, "", false},
		{`a"b c" d`, "ab c|d", true},
		{`""`, "", true},
		{`"" ''`, "|", true},
		{`"abc`, "", false},
		{`'abc`, "", false},
		{`"a"b`, "", false},
		{`"a\"`, "", false},
		{"a\x00b c", "a", true},
		{"\"a\x00b\"", "", false},
	}
	for _, tt := range tests {
		words, ends, ok := splitInline([]byte(tt.line), nil, nil)
		var args []string
		start := 0
		for _, e := range ends {
			args = append(args, string(words[start:e]))
			start = e
		}
		got := strings.Join(args, "|")
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%q: got %q %v, want %q %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseAllocatesNothing(t *testing.T) {
	batch := []byte(cmd("CL.THROTTLE", "user123", "15", "30", "60"))
	var stream []byte
	for len(stream) < readBufSize {
		stream = append(stream, batch...)
	}
	rd := newRequestReader(limits{maxBulk: 1 << 20, maxInline: 1 << 10, maxHeader: 1 << 10, maxMultibulk: 1 << 10})
	in := stream
	parseChunk := func() {
		if len(in) == 0 {
			in = stream
		}
		n := copy(rd.room(), in)
		in = in[n:]
		rd.filled(n)
		for {
			if _, st, msg := rd.parse(false); st != gotRequest {
				if st == violation {
					t.Fatal(msg)
				}
				return
			}
		}
	}
	parseChunk() // allocates the buffer and the argument slice once
	allocs := testing.AllocsPerRun(100, parseChunk)
	if allocs != 0 {
		t.Errorf("%v allocations per read, want 0", allocs)
	}
}

func BenchmarkParse(b *testing.B) {
	batch := []byte(cmd("CL.THROTTLE", "user123", "15", "30", "60"))
	var stream []byte
	for len(stream) < 1<<20 {
		stream = append(stream, batch...)
	}
	b.SetBytes(int64(len(stream)))
	rd := newRequestReader(limits{maxBulk: 1 << 20, maxInline: 1 << 10, maxHeader: 1 << 10, maxMultibulk: 1 << 10})
	for b.Loop() {
		for in := stream; len(in) > 0; {
			n := copy(rd.room(), in)
			in = in[n:]
			rd.filled(n)
			for {
				if _, st, _ := rd.parse(false); st != gotRequest {
					break
				}
			}
		}
	}
}

// refParse is a plain reading of Redis's request rules over a whole input,
// for the fuzzer to hold the streaming framer against.
func refParse(in []byte, lim limits) (cmds [][][]byte, errMsg string) {
	pos := 0
	// line finds the CR that ends a header line at pos; done means the input
	// ends first.
	line := func(tooBig string) (cr int, done bool, msg string) {
		i := bytes.IndexByte(in[pos:], '\r')
		n := i
		if i < 0 {
			n = len(in) - pos
		}
		if n > lim.maxHeader {
			return 0, true, tooBig
		}
		if i < 0 || pos+i+1 >= len(in) { // Redis also waits for the byte after CR
			return 0, true, ""
		}
		return pos + i, false, ""
	}
	for pos < len(in) {
		if in[pos] != '*' {
			i := bytes.IndexByte(in[pos:], '\n')
			if nul := bytes.IndexByte(in[pos:], 0); nul >= 0 && (i < 0 || nul < i) {
				i = -1 // Redis looks for the LF with strchr, which stops at a NUL
			}
			n := i
			if i < 0 {
				n = len(in) - pos
			}
			if n > lim.maxInline {
				return cmds, msgTooBigInline
			}
			if i < 0 {
				return cmds, ""
			}
			text := bytes.TrimSuffix(in[pos:pos+i], []byte("\r"))
			pos += i + 1
			args, ok := refSplit(text)
			if !ok {
				return cmds, msgUnbalancedQuotes
			}
			if len(args) > 0 {
				cmds = append(cmds, args)
			}
			continue
		}
		cr, done, msg := line(msgTooBigMultibulk)
		if done {
			return cmds, msg
		}
		count, ok := refInt(in[pos+1 : cr])
		if !ok || count > lim.maxMultibulk {
			return cmds, msgInvalidMultibulk
		}
		pos = cr + 2
		if count <= 0 {
			continue
		}
		var args [][]byte
		for range count {
			if pos >= len(in) {
				return cmds, ""
			}
			cr, done, msg := line(msgTooBigBulk)
			if done {
				return cmds, msg
			}
			if in[pos] != '$' {
				return cmds, "expected '$', got '" + string(in[pos:pos+1]) + "'"
			}
			n, ok := refInt(in[pos+1 : cr])
			if !ok || n < 0 || n > lim.maxBulk {
				return cmds, msgInvalidBulk
			}
			pos = cr + 2
			if int64(len(in)-pos) < n+2 {
				return cmds, ""
			}
			args = append(args, in[pos:pos+int(n)])
			pos += int(n) + 2
		}
		cmds = append(cmds, args)
	}
	return cmds, ""
}

// refInt parses s as Redis's string2ll does, through strconv.
func refInt(s []byte) (int64, bool) {
	t := string(s)
	digits := strings.TrimPrefix(t, "-")
	if len(t) > 20 || digits == "" || digits[0] < '1' && t != "0" || digits[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(t, 10, 64)
	return n, err == nil
}

// refSplit splits an inline line as sdssplitargs does, written as a scanner
// over a NUL-terminated copy.
func refSplit(line []byte) ([][]byte, bool) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	s := append(append([]byte(nil), line...), 0, 0, 0, 0) // room to peek
	args := [][]byte{}
	space := func(c byte) bool { return strings.IndexByte(" \t\n\v\f\r", c) >= 0 }
	p := 0
	for {
		for s[p] != 0 && space(s[p]) {
			p++
		}
		if s[p] == 0 {
			return args, true
		}
		arg := []byte{}
		quote := byte(0)
	token:
		for {
			c := s[p]
			switch {
			case quote == '"' && c == '\\' && s[p+1] == 'x' && isHex(s[p+2]) && isHex(s[p+3]):
				v, _ := strconv.ParseUint(string(s[p+2:p+4]), 16, 8)
				arg = append(arg, byte(v))
				p += 4
			case quote == '"' && c == '\\' && s[p+1] != 0:
				e := s[p+1]
				if j := strings.IndexByte("nrtba", e); j >= 0 {
					e = "\n\r\t\b\a"[j]
				}
				arg = append(arg, e)
				p += 2
			case quote == '\'' && c == '\\' && s[p+1] == '\'':
				arg = append(arg, '\'')
				p += 2
			case quote != 0 && c == quote:
				if s[p+1] != 0 && !space(s[p+1]) {
					return nil, false
				}
				p++
				break token
			case quote != 0 && c == 0:
				return nil, false
			case quote != 0:
				arg = append(arg, c)
				p++
			case c == 0:
				break token
			case c == ' ' || c == '\n' || c == '\r' || c == '\t':
				p++
				break token
			case c == '"' || c == '\'':
				quote = c
				p++
			default:
				arg = append(arg, c)
				p++
			}
		}
		args = append(args, arg)
	}
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n",
		"PING\r\nECHO \"a\\x41\" 'b\\'c'\n",
		"*0\r\n*-1\r\n*1\r\n$0\r\n\r\n",
		"*1\r\n$4\r\nPINGxx*1\rX$4\rYPING\r\n",
		"*1\r\n$9223372036854775807\r\n",
		"*1\r\n$99999999999999999999\r\n",
		"*99999999999999999999\r\n",
		"*1\r\nx\r\n",
		"*1234567890123",
		"0123456789012345678901234567",
		"ECHO \"abc\n",
		"\r\n\n \n*1\r\n$1\r\n\x00\r\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i), int64(i))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8, seed int64) {
		checkSplits(t, in, testLimits(), int(chunk%16)+1, seed)
	})
}

// checkSplits parses in whole, chunk bytes at a time and in random pieces,
// and checks that each gives what refParse reads in the whole input.
func checkSplits(t *testing.T, in []byte, lim limits, chunk int, seed int64) {
	t.Helper()
	want, wantErr := refParse(in, lim)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	for _, res := range []parseResult{
		runParser(in, lim, len(in), false),
		runParser(in, lim, chunk, false),
		runParserSplit(in, lim, func(int) int { return 1 + rng.IntN(len(in)+1) }, false),
		runParserSplit(in, lim, func(int) int { return 1 + rng.IntN(3) }, false),
	} {
		if got, w := strCmds(res.cmds), strCmds(want); !slices.EqualFunc(got, w, slices.Equal) {
			t.Fatalf("input %q: commands\n%q\nwant\n%q", in, got, w)
		}
		if res.errMsg != wantErr {
			t.Fatalf("input %q: error %q, want %q", in, res.errMsg, wantErr)
		}
	}
}

// randomStream is a pipeline of requests, valid, ignored and broken ones,
// drawn under lim so that every limit is met, reached and passed.
func randomStream(rng *rand.Rand, lim limits) []byte {
	var b []byte
	arg := func(n int) []byte {
		a := make([]byte, n)
		for i := range a {
			a[i] = "ab \"'\\\r\n\x00*$x"[rng.IntN(12)]
		}
		return a
	}
	for range 1 + rng.IntN(8) {
		switch rng.IntN(10) {
		case 0, 1, 2, 3: // multibulk
			n := 1 + rng.IntN(int(lim.maxMultibulk))
			b = append(b, '*')
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, "\r\n"...)
			for range n {
				a := arg(rng.IntN(int(lim.maxBulk) + 1))
				b = append(b, '$')
				b = strconv.AppendInt(b, int64(len(a)), 10)
				b = append(b, "\r\n"...)
				b = append(append(b, a...), "\r\n"...)
			}
		case 4, 5: // inline, perhaps quoted
			words := []string{"PING", "ECHO", "\"a b\"", "'c\\'d'", "\"\\x41\\n\"", "x", "\"\"", "\t"}
			for range 1 + rng.IntN(4) {
				b = append(append(b, words[rng.IntN(len(words))]...), ' ')
			}
			b = append(b, "\r\n\n"[rng.IntN(2):]...)
		case 6: // ignored
			b = append(b, []string{"*0\r\n", "*-1\r\n", "\r\n", "  \n"}[rng.IntN(4)]...)
		case 7: // broken
			b = append(b, []string{"*5\r\n", "*1\r\n$17\r\n", "*1\r\n:1\r\n", "ECHO \"a\n",
				"*1\r\n$000000000000", "*123456789012", "0123456789012345678901234", "*1\r\n$-1\r\n", "*x\r\n"}[rng.IntN(9)]...)
		default: // a valid request with one byte changed
			start := len(b)
			b = append(b, cmd("ECHO", string(arg(rng.IntN(6))))...)
			b[start+rng.IntN(len(b)-start)] = "*$\r\n0-9x"[rng.IntN(8)]
		}
	}
	return b
}

func TestParseRandomSplitsMatchWholeBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	outcomes := map[string]int{}
	for i := range 3000 {
		in := randomStream(rng, testLimits())
		checkSplits(t, in, testLimits(), 1+i%9, int64(i))
		res := runParser(in, testLimits(), len(in), false)
		outcomes[res.errMsg]++
		if len(res.cmds) > 0 {
			outcomes["commands"]++
		}
	}
	// The streams reach every kind of end.
	for _, end := range []string{"", "commands", msgInvalidMultibulk, msgInvalidBulk, msgTooBigBulk, msgTooBigMultibulk,
		msgTooBigInline, msgUnbalancedQuotes, "expected '$', got ':'"} {
		if outcomes[end] == 0 {
			t.Errorf("no stream ended with %q; outcomes %v", end, outcomes)
		}
	}
}

func TestParseKeepsItsPlaceInALongRequest(t *testing.T) {
	// 100,000 arguments arriving 7 bytes at a time: each piece is parsed
	// once, the arguments before it are never read again, and the buffer
	// grows a few times, not once per piece.
	const args = 100000
	head := "*" + strconv.Itoa(args) + "\r\n"
	req := []byte(head + strings.Repeat("$1\r\nx\r\n", args))
	rd := newRequestReader(limits{maxBulk: 1 << 20, maxInline: 1 << 10, maxHeader: 1 << 10, maxMultibulk: maxMultibulkLen})
	fed, grown, size := 0, 0, 0
	for fed < len(req) {
		room := rd.room()
		if len(rd.buf) != size {
			size = len(rd.buf)
			grown++
		}
		n := copy(room[:min(7, len(room))], req[fed:])
		fed += n
		rd.filled(n)
		got, st, msg := rd.parse(false)
		if st == gotRequest {
			if fed != len(req) || len(got) != args {
				t.Fatalf("request of %d arguments after %d of %d bytes", len(got), fed, len(req))
			}
			break
		}
		if st == violation {
			t.Fatal(msg)
		}
		if want := max(fed-len(head), 0) / 7; len(rd.spans) != want {
			t.Fatalf("after %d bytes, %d arguments kept, want %d", fed, len(rd.spans), want)
		}
	}
	if grown > 20 {
		t.Errorf("the buffer was allocated %d times, want at most 20", grown)
	}
}
