package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cellserver/cellserver/internal/testenv"
)

// dockerfile is what the image test reads from the repository's Dockerfile.
type dockerfile struct {
	buildFlags  []string          // the go build line's flags
	env         map[string]string // ENV of the final stage
	uid, gid    int               // USER of the final stage
	healthcheck []string          // HEALTHCHECK CMD, exec form
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	cur := ""
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	d := dockerfile{env: map[string]string{}}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "FROM "):
			d.env = map[string]string{} // only the final stage counts
		case strings.Contains(l, "go build"):
			d.buildFlags = regexp.MustCompile(`-trimpath|-ldflags "[^"]*"`).FindAllString(l, -1)
			if !strings.Contains(l, "CGO_ENABLED=0") {
				t.Error("the image's build does not set CGO_ENABLED=0")
			}
		case strings.HasPrefix(l, "ENV "):
			k, v, _ := strings.Cut(strings.TrimPrefix(l, "ENV "), "=")
			d.env[k] = v
		case strings.HasPrefix(l, "USER "):
			u, g, _ := strings.Cut(strings.TrimPrefix(l, "USER "), ":")
			d.uid, _ = strconv.Atoi(u)
			d.gid, _ = strconv.Atoi(g)
		case strings.HasPrefix(l, "HEALTHCHECK "):
			_, cmd, _ := strings.Cut(l, " CMD ")
			if err := json.Unmarshal([]byte(cmd), &d.healthcheck); err != nil {
				t.Fatalf("HEALTHCHECK is not in exec form (the image has no shell): %q", cmd)
			}
		}
	}
	return d
}

// TestImageBinary checks what can be checked of the image without a Docker
// engine: the binary built with the Dockerfile's flags is static, runs as the
// image's non-root user with the image's environment (listening on every
// interface), and the image's HEALTHCHECK command passes against it.
func TestImageBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	if os.Getuid() != 0 {
		testenv.SkipOrFail(t, "running the binary as the image's user needs root")
	}
	d := readDockerfile(t)
	if d.uid == 0 {
		t.Fatalf("the image runs as root (USER %d)", d.uid)
	}
	if d.env["CELLSERVER_ADDR"] != "0.0.0.0:6379" {
		t.Errorf("image CELLSERVER_ADDR = %q, want 0.0.0.0:6379", d.env["CELLSERVER_ADDR"])
	}
	if len(d.healthcheck) != 2 || d.healthcheck[1] != "ping" {
		t.Fatalf("HEALTHCHECK = %q, want [/cellserver ping]", d.healthcheck)
	}

	dir, err := os.MkdirTemp("", "cellserver-image")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755) // the image's user must reach the binary
	bin := filepath.Join(dir, "cellserver")
	args := []string{"build"}
	for _, f := range d.buildFlags {
		if v, ok := strings.CutPrefix(f, "-ldflags "); ok {
			f = "-ldflags=" + strings.ReplaceAll(strings.Trim(v, `"`), "${VERSION}", "image-test")
		}
		args = append(args, f)
	}
	build := exec.Command("go", append(args, "-o", bin, ".")...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked; the distroless static image has no libc")
		}
	}
	ef.Close()

	// The image's environment, on a free port instead of 6379.
	port := strconv.Itoa(freePort(t))
	env := []string{"CELLSERVER_ADDR=0.0.0.0:" + port}
	srv := exec.Command(bin)
	srv.Env = env
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(d.uid), Gid: uint32(d.gid)}}
	var logs syncBuffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })

	health := exec.Command(bin, d.healthcheck[1:]...)
	health.Env = env
	health.SysProcAttr = srv.SysProcAttr
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := health.CombinedOutput()
		if err == nil && string(out) == "PONG\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HEALTHCHECK never passed: %v %q; server log:\n%s", err, out, logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling a separate process until it listens
		health = exec.Command(bin, d.healthcheck[1:]...)
		health.Env, health.SysProcAttr = env, srv.SysProcAttr
	}
	if l := logs.String(); !strings.Contains(l, "addr=0.0.0.0:"+port) && !strings.Contains(l, "addr=[::]:"+port) {
		t.Errorf("server log does not show it listening on every interface:\n%s", logs.String())
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(freeAddr(t))
	n, _ := strconv.Atoi(p)
	return n
}
