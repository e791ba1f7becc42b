package compat_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellserver/cellserver/internal/testenv"
)

// examplesOutput is what examples/python/throttle.py and
// examples/node/throttle.js print against a fresh cellserver: redis-cell's
// README scenario, CL.THROTTLE user:42 15 30 60 seventeen times at once. The
// times hold as long as the 17 calls take less than a second: every reply
// rounds up to the second.
var examplesOutput = func() string {
	var b strings.Builder
	b.WriteString("reset user:42\n")
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, "request %d: [0, 16, %d, -1, %d] -> 200 X-RateLimit-Limit: 16, X-RateLimit-Remaining: %d, X-RateLimit-Reset: %d\n",
			i, 16-i, 2*i, 16-i, 2*i)
	}
	b.WriteString("request 17: [1, 16, 0, 2, 32] -> 429 X-RateLimit-Limit: 16, X-RateLimit-Remaining: 0, X-RateLimit-Reset: 32, Retry-After: 2\n")
	b.WriteString("16 allowed, 1 limited\n")
	return b.String()
}()

// TestExamplePython runs examples/python/throttle.py (redis-py) against the
// server.
func TestExamplePython(t *testing.T) {
	python := pythonWithRedis(t)
	s := startServer(t)
	runExample(t, s.addr, python, filepath.Join("..", "examples", "python", "throttle.py"))
}

// TestExampleNode runs examples/node/throttle.js (ioredis, installed by
// `npm ci --prefix examples/node`) against the server.
func TestExampleNode(t *testing.T) {
	node := nodeWithIoredis(t)
	s := startServer(t)
	runExample(t, s.addr, node, filepath.Join("..", "examples", "node", "throttle.js"))
}

// runExample runs program script addr and compares its output with
// examplesOutput.
func runExample(t *testing.T, addr, program, script string) {
	t.Helper()
	if got := runProgram(t, addr, program, script); got != examplesOutput {
		t.Errorf("%s %s printed\n%s\nwant\n%s", program, script, got, examplesOutput)
	}
}

// runProgram runs program script addr and returns what it printed.
func runProgram(t *testing.T, addr, program, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*ioTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, script, addr)
	// The server has no password: one from the environment would fail AUTH.
	cmd.Env = append(os.Environ(), "CELLSERVER_PASSWORD=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s %s: %v\nstdout:\n%s\nstderr:\n%s", program, script, addr, err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("%s %s: stderr:\n%s", program, script, stderr.String())
	}
	return stdout.String()
}

// nodeWithIoredis returns the path of node, once ioredis is installed in
// examples/node (npm ci --prefix examples/node).
func nodeWithIoredis(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.SkipOrFail(t, "node is not on PATH (apt-get install nodejs npm)")
	}
	if _, err := os.Stat(filepath.Join("..", "examples", "node", "node_modules", "ioredis", "package.json")); err != nil {
		testenv.SkipOrFail(t, "ioredis is not installed in examples/node/node_modules (npm ci --prefix examples/node)")
	}
	return node
}

// pythonWithRedis returns the interpreter that runs the Python example: the
// first of python3 on PATH and /usr/bin/python3 that imports redis. Both are
// tried, in this order, because Debian's python3-redis (what .ci/run
// installs) is importable by /usr/bin/python3 only, and another python3 (a
// pyenv one, say) may come first on PATH.
func pythonWithRedis(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(name)
		if err != nil {
			tried = append(tried, name+": not found")
			continue
		}
		out, err := exec.Command(path, "-c", "import redis").CombinedOutput()
		if err == nil {
			t.Logf("python: %s", path)
			return path
		}
		tried = append(tried, fmt.Sprintf("%s: %v: %s", path, err, lastLine(out)))
	}
	testenv.SkipOrFail(t, "no python3 imports redis (apt-get install python3-redis): "+strings.Join(tried, "; "))
	return ""
}

// lastLine is the last line of out, where Python puts an exception's
// message.
func lastLine(out []byte) string {
	s := strings.TrimSpace(string(out))
	return s[strings.LastIndexByte(s, '\n')+1:]
}
