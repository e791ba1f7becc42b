package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

// chunkConn is a net.Conn whose reads return in, chunk bytes at a time,
// then EOF, and whose writes are kept.
type chunkConn struct {
	net.Conn // nil: only Read, Write and Close are used
	in       []byte
	chunk    int
	out      bytes.Buffer
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *chunkConn) Write(p []byte) (int, error) { return c.out.Write(p) }
func (c *chunkConn) Close() error                { return nil }

// smallReads reads at most n bytes per Read from r.
type smallReads struct {
	r io.Reader
	n int
}

func (s smallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), s.n)]) }

// guardResult is what redcon parsed through a guard, and what the guard wrote.
type guardResult struct {
	cmds    [][][]byte
	errMsg  string // the protocol error, "" if the stream just ended
	written string
}

// runGuard feeds in through a guard, chunk bytes per socket read and at
// most readSize bytes per guard read (0: as redcon asks), into redcon's
// reader.
func runGuard(t testing.TB, in []byte, lim limits, chunk, readSize int) guardResult {
	conn := &chunkConn{in: in, chunk: chunk}
	g := newGuardConn(conn, lim)
	var r io.Reader = g
	if readSize > 0 {
		r = smallReads{g, readSize}
	}
	rd := redcon.NewReader(r)
	var res guardResult
	for {
		c, err := rd.ReadCommand()
		if err != nil {
			var pe *protocolError
			switch {
			case errors.As(err, &pe):
				res.errMsg = pe.msg
			case err != io.EOF:
				t.Fatalf("reader error %v (%T), want a guard error or EOF", err, err)
			}
			break
		}
		res.cmds = append(res.cmds, c.Args)
	}
	res.written = conn.out.String()
	return res
}

// testLimits are small, so that tests and the fuzzer reach every limit.
func testLimits() limits {
	return limits{maxBulk: 16, maxInline: 24, maxHeader: 12, maxMultibulk: 4}
}

func TestGuardFraming(t *testing.T) {
	tests := []struct {
		name string
		in   string
		cmds [][]string // the commands redcon gets
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
		{"NUL ends an inline line", "ECHO a\x00b\n", [][]string{{"ECHO", "a"}}, ""},
		{"violation in the second command of a read", "*1\r\n$4\r\nPING\r\n*1\r\n$99\r\n", [][]string{{"PING"}}, msgInvalidBulk},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 2, 3, 7, 4096} {
			for _, readSize := range []int{0, 1, 2, 5} {
				t.Run(fmt.Sprintf("%s/chunk=%d/read=%d", tt.name, chunk, readSize), func(t *testing.T) {
					res := runGuard(t, []byte(tt.in), testLimits(), chunk, readSize)
					if got := strCmds(res.cmds); !slices.EqualFunc(got, tt.cmds, slices.Equal) {
						t.Errorf("commands %q, want %q", got, tt.cmds)
					}
					if res.errMsg != tt.err {
						t.Errorf("error %q, want %q", res.errMsg, tt.err)
					}
					wantWritten := ""
					if tt.err != "" {
						wantWritten = protoErr(tt.err)
					}
					if res.written != wantWritten {
						t.Errorf("wrote %q, want %q", res.written, wantWritten)
					}
				})
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

func TestNumberMatchesString2ll(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"10", 10, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false}, {"18446744073709551616", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"00", 0, false},
		{"01", 0, false}, {"+1", 0, false}, {"1 ", 0, false}, {" 1", 0, false},
		{"1-", 0, false}, {"0x1", 0, false}, {"000000000000000000001", 0, false},
	}
	for _, tt := range tests {
		var x number
		for i := 0; i < len(tt.in); i++ {
			x.add(tt.in[i])
		}
		got, ok := x.value()
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q: got %d %v, want %d %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
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

func TestGuardReadAllocatesNothing(t *testing.T) {
	batch := []byte(cmd("CL.THROTTLE", "user123", "15", "30", "60"))
	var stream []byte
	for range 10000 {
		stream = append(stream, batch...)
	}
	g := newGuardConn(&chunkConn{in: stream, chunk: 4096}, limits{maxBulk: 1 << 20, maxInline: 1 << 10, maxHeader: 1 << 10, maxMultibulk: 1 << 10})
	p := make([]byte, 4096)
	_, _ = g.Read(p) // allocates the read buffer once
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := g.Read(p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Read, want 0", allocs)
	}
}

func BenchmarkGuardRead(b *testing.B) {
	batch := []byte(cmd("CL.THROTTLE", "user123", "15", "30", "60"))
	var stream []byte
	for len(stream) < 1<<20 {
		stream = append(stream, batch...)
	}
	p := make([]byte, 4096)
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		g := newGuardConn(&chunkConn{in: stream, chunk: 4096}, limits{maxBulk: 1 << 20, maxInline: 1 << 10, maxHeader: 1 << 10, maxMultibulk: 1 << 10})
		for {
			if _, err := g.Read(p); err != nil {
				break
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

func FuzzGuard(f *testing.F) {
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
		f.Add([]byte(s), uint8(i), uint8(i*7))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk, readSize uint8) {
		want, wantErr := refParse(in, testLimits())
		res := runGuard(t, in, testLimits(), int(chunk%16)+1, int(readSize%9))
		if got, w := strCmds(res.cmds), strCmds(want); !slices.EqualFunc(got, w, slices.Equal) {
			t.Fatalf("input %q: commands\n%q\nwant\n%q", in, got, w)
		}
		if res.errMsg != wantErr {
			t.Fatalf("input %q: error %q, want %q", in, res.errMsg, wantErr)
		}
		wantWritten := ""
		if wantErr != "" {
			wantWritten = protoErr(strings.NewReplacer("\r", " ", "\n", " ").Replace(wantErr))
		}
		if res.written != wantWritten {
			t.Fatalf("input %q: wrote %q, want %q", in, res.written, wantWritten)
		}
	})
}

// countingReader counts the reads that return data.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.reads++
	}
	return n, err
}

func TestGuardHandsOverLongRequestsWhole(t *testing.T) {
	// 100,000 arguments arriving 7 bytes at a time: handed to redcon as
	// they come, each read would make redcon parse the request again from
	// its start; filled reads keep that logarithmic.
	const args = 100000
	req := "*" + strconv.Itoa(args) + "\r\n" + strings.Repeat("$1\r\nx\r\n", args)
	lim := limits{maxBulk: 1 << 20, maxInline: 1 << 10, maxHeader: 1 << 10, maxMultibulk: maxMultibulkLen}
	cr := &countingReader{r: newGuardConn(&chunkConn{in: []byte(req), chunk: 7}, lim)}
	c, err := redcon.NewReader(cr).ReadCommand()
	if err != nil || len(c.Args) != args {
		t.Fatalf("got %d arguments, err %v", len(c.Args), err)
	}
	if cr.reads > 40 {
		t.Errorf("the request took %d reads, want at most 40", cr.reads)
	}
}
