package main

import (
	"fmt"
	"os"
	"os/exec"
)

// tools are the programs bench runs, found on PATH.
type tools struct {
	goCmd          string
	redisServer    string
	redisBenchmark string
	// cellModule is redis-cell's shared library (REDIS_CELL_MODULE), or "".
	cellModule string
	// envoyRatelimit is envoyproxy/ratelimit's binary (ENVOY_RATELIMIT_BIN),
	// or "".
	envoyRatelimit string
}

// aptPackage names the Debian/Ubuntu package that installs a program bench
// needs, for the message when it is missing.
func aptPackage(name string) string {
	if name == "redis-server" {
		return "redis-server"
	}
	return "redis-tools" // redis-benchmark, redis-cli
}

// findTools looks up the programs on PATH, redisServer (redis-server, or
// another Redis-compatible server: a name on PATH or a path) among them. A
// missing one is an error that names the package providing it; bench
// installs nothing itself.
func findTools(redisServer, cellModule, envoyRatelimit string) (tools, error) {
	var t tools
	var err error
	if t.goCmd, err = exec.LookPath("go"); err != nil {
		return t, fmt.Errorf("go is not on PATH: bench builds cellserver with it (see the README's set-up)")
	}
	for _, p := range []struct {
		name string
		path *string
	}{{redisServer, &t.redisServer}, {"redis-benchmark", &t.redisBenchmark}} {
		if *p.path, err = exec.LookPath(p.name); err != nil {
			return t, missingTool(p.name)
		}
	}
	if cellModule != "" {
		if st, err := os.Stat(cellModule); err != nil || st.IsDir() {
			return t, fmt.Errorf("REDIS_CELL_MODULE=%s is not a file: set it to redis-cell's shared library (libredis_cell.so) or unset it", cellModule)
		}
		t.cellModule = cellModule
	}
	if err := checkEnvoyRatelimitBin(envoyRatelimit); err != nil {
		return t, err
	}
	t.envoyRatelimit = envoyRatelimit
	return t, nil
}

// missingTool is the error for a program that is not on PATH.
func missingTool(name string) error {
	switch name {
	case "redis-server", "redis-benchmark", "redis-cli":
	case "valkey-server":
		return fmt.Errorf("valkey-server is not on PATH: .ci/valkey builds and installs it")
	default:
		return fmt.Errorf("%s is not on PATH (-redis-server names a server on PATH or a path)", name)
	}
	return fmt.Errorf("%s is not on PATH: install the %s package (apt-get install %s), as .ci/run does",
		name, aptPackage(name), aptPackage(name))
}
