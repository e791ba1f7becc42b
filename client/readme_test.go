package client

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellserver/cellserver/internal/testenv"
)

// quickstart is the program the README shows for using the client from
// another module; the README quotes it verbatim.
const quickstart = "testdata/quickstart/main.go"

// TestReadmeQuickstart: the README's go get line names this module, its
// program is testdata/quickstart/main.go word for word, and that program,
// built as a module of its own that requires this one, prints the
// decisions it promises against a real cellserver.
func TestReadmeQuickstart(t *testing.T) {
	program, err := os.ReadFile(quickstart)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("```go\n"+string(program)+"```\n")) {
		t.Errorf("README.md does not show %s verbatim in a go block", quickstart)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	module := modulePath(t, filepath.Join(root, "go.mod"))
	if want := "go get " + module + "/client@latest"; !bytes.Contains(readme, []byte(want)) {
		t.Errorf("README.md lacks %q", want)
	}

	gobin := testenv.NeedTool(t, "go", "the Go toolchain, which builds the README's program")
	dir := t.TempDir()
	// The program's module requires this one, found in this tree, and the
	// versions of go-redis and the rest that this one builds with (its
	// requirements and go.sum, copied), so that the build is offline:
	// every module it needs is in the module cache already.
	ours := readFile(t, filepath.Join(root, "go.mod"))
	gomod := strings.Replace(ours, "module "+module+"\n", "module example.com/quickstart\n", 1) +
		"\nrequire " + module + " v0.0.0\n\nreplace " + module + " => " + root + "\n"
	writeFile(t, filepath.Join(dir, "go.mod"), gomod)
	writeFile(t, filepath.Join(dir, "go.sum"), readFile(t, filepath.Join(root, "go.sum")))
	writeFile(t, filepath.Join(dir, "main.go"), string(program))
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(gobin, "build", "-o", "quickstart", ".")

	s := startServer(t)
	env = append(env, "CELLSERVER_ADDR="+s.addr)
	got := run(filepath.Join(dir, "quickstart"))
	want := "request 1: allowed, 2 left\n" +
		"request 2: allowed, 1 left\n" +
		"request 3: allowed, 0 left\n" +
		"request 4: limited, retry in 20s\n"
	if got != want {
		t.Errorf("the README's program printed\n%s\nwant\n%s", got, want)
	}
}

// modulePath returns the module path go.mod declares.
func modulePath(t *testing.T, gomod string) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, gomod), "\n") {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("%s declares no module", gomod)
	return ""
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
