package server

import (
	"strings"
	"testing"
)

// protoErr is the line Redis answers a protocol error with.
func protoErr(msg string) string { return "-ERR Protocol error: " + msg + "\r\n" }

func TestProtocolGuardOverTCP(t *testing.T) {
	long := func(prefix string, n int) string { return prefix + strings.Repeat("1", n) }
	tests := []struct {
		name   string
		cfg    Config
		in     string
		want   string
		closed bool
	}{
		{name: "max int64 bulk length",
			in:   "PING\r\n*2\r\n$4\r\nECHO\r\n$9223372036854775807\r\n",
			want: "+PONG\r\n" + protoErr("invalid bulk length"), closed: true},
		{name: "bulk length beyond int64",
			in:   cmd("PING") + "*2\r\n$4\r\nECHO\r\n$99999999999999999999\r\nxx",
			want: "+PONG\r\n" + protoErr("invalid bulk length"), closed: true},
		{name: "negative bulk length",
			in: "*1\r\n$-1\r\n", want: protoErr("invalid bulk length"), closed: true},
		{name: "bulk length not a number",
			in: "*1\r\n$4x\r\nPING\r\n", want: protoErr("invalid bulk length"), closed: true},
		{name: "bulk length with a leading zero",
			in: "*1\r\n$04\r\nPING\r\n", want: protoErr("invalid bulk length"), closed: true},
		{name: "bulk length over ProtoMaxBulkLen", cfg: Config{ProtoMaxBulkLen: 4},
			in: cmd("ECHO", "abcd") + cmd("ECHO", "abcde"), want: "$4\r\nabcd\r\n" + protoErr("invalid bulk length"), closed: true},
		{name: "multibulk count too big",
			in: "PING\r\n*1048577\r\n", want: "+PONG\r\n" + protoErr("invalid multibulk length"), closed: true},
		{name: "multibulk count not a number",
			in: "*1x\r\n", want: protoErr("invalid multibulk length"), closed: true},
		{name: "multibulk count beyond int64",
			in: "*-99999999999999999999\r\n", want: protoErr("invalid multibulk length"), closed: true},
		{name: "argument not a bulk string",
			in: "PING\r\n*1\r\nxPING\r\n", want: "+PONG\r\n" + protoErr("expected '$', got 'x'"), closed: true},
		{name: "argument starting with CR",
			in: "*1\r\n\r\n", want: protoErr("expected '$', got ' '"), closed: true},
		{name: "multibulk count line too long",
			in: long("PING\r\n*", 70000), want: "+PONG\r\n" + protoErr("too big mbulk count string"), closed: true},
		{name: "bulk length line too long",
			in: long("*1\r\n$", 70000), want: protoErr("too big bulk count string"), closed: true},
		{name: "inline request too long",
			in: long("PING\r\nECHO ", 70000), want: "+PONG\r\n" + protoErr("too big inline request"), closed: true},
		{name: "NUL hides an inline line's end",
			in:   "PING\r\nPING\x00\r\nPING\r\n" + strings.Repeat("x", 70000),
			want: "+PONG\r\n" + protoErr("too big inline request"), closed: true},
		{name: "inline request over MaxInlineLen", cfg: Config{MaxInlineLen: 8},
			in: "ECHO 123\nECHO 1234\n", want: "$3\r\n123\r\n" + protoErr("too big inline request"), closed: true},
		{name: "unbalanced quotes",
			in: "PING\r\nECHO \"a\r\n", want: "+PONG\r\n" + protoErr("unbalanced quotes in request"), closed: true},
		{name: "empty and negative multibulk ignored",
			in: "*0\r\n*-1\r\nPING\r\n*-9223372036854775808\r\n*0\r\nPING\r\n", want: "+PONG\r\n+PONG\r\n"},
		{name: "empty inline lines ignored",
			in: "\r\n  \n\r\nPING\r\n", want: "+PONG\r\n"},
		{name: "inline quoting and escapes",
			in: "ECHO \"a\\x41\\n b\"\r\nECHO 'it\\'s'\r\n", want: "$5\r\naA\n b\r\n$4\r\nit's\r\n"},
		{name: "bytes after an argument are skipped like Redis does",
			in: "*1\r\n$4\r\nPINGxx*1\rX$4\rYPING\r\n", want: "+PONG\r\n+PONG\r\n"},
		{name: "binary argument",
			in: cmd("ECHO", "a\r\n\x00b"), want: "$5\r\na\r\n\x00b\r\n"},
	}
	for _, tt := range tests {
		for _, bytewise := range []bool{false, true} {
			if bytewise && len(tt.in) > 1000 {
				continue // covered by the framer's own tests
			}
			name := tt.name
			if bytewise {
				name += "/bytewise"
			}
			t.Run(name, func(t *testing.T) {
				h := start(t, tt.cfg)
				c := h.dial()
				if bytewise {
					c.sendBytewise(tt.in)
				} else {
					c.send(tt.in)
				}
				c.expect(tt.want)
				if tt.closed {
					c.expectClosed()
				}
				other := h.dial() // the server is up, and others never noticed
				other.send("PING\r\n")
				other.expect("+PONG\r\n")
			})
		}
	}
}

func TestHugeLegalArgumentSplitAcrossReads(t *testing.T) {
	h := start(t, Config{})
	c := h.dial()
	arg := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	req := cmd("ECHO", arg) + "PING\r\n"
	go func() { // written in uneven pieces while the reply is read
		for i, n := 0, 1; i < len(req); i, n = i+n, n*3%65521+1 {
			if _, err := c.Write([]byte(req[i:min(i+n, len(req))])); err != nil {
				return
			}
		}
	}()
	c.expect("$1048576\r\n" + arg + "\r\n+PONG\r\n")
}
