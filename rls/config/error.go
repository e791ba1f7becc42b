package config

import (
	"fmt"
	"regexp"
	"strconv"
)

// Error is a configuration file's problem: the file as Load or Parse was
// given it, the line when the YAML library or the file's structure gives
// one (else 0), and the problem in envoyproxy/ratelimit's words where it
// has words for it.
type Error struct {
	File    string
	Line    int
	Problem string
}

// Error reads "file:line: problem", or "file: problem" without a line, as
// envoyproxy/ratelimit's "file: problem" does.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Problem)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Problem)
}

// yamlLine finds the line in a yaml.v3 syntax error ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`line (\d+)`)

// syntaxError wraps a YAML syntax error as envoyproxy/ratelimit words it,
// with the line the library names.
func syntaxError(file string, err error) *Error {
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	return &Error{File: file, Line: line, Problem: "error loading config file: " + err.Error()}
}
