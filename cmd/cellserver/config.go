package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cellserver/cellserver/persist"
	"github.com/cellserver/cellserver/server"
)

// config is what the command line and the environment ask for. Its zero
// value is not meant to be used: parseConfig fills in the defaults.
type config struct {
	addr            string
	shards          int
	logLevel        slog.Level
	logFormat       string
	protoMaxBulkLen int64
	showVersion     bool

	// backingRedis is the backing Redis's address (persist.ParseURL), with
	// its password: log it with persist.Redact. Empty: in memory only.
	backingRedis    string
	backingPrefix   string
	flushInterval   time.Duration
	backingRequired bool
	// shutdownFlushTimeout bounds the final write of the changed keys at
	// shutdown.
	shutdownFlushTimeout time.Duration
	// backingMode is how the backing Redis is used: modeWriteBehind or
	// modeShared.
	backingMode     string
	sharedFallback  string // fallbackLocal or fallbackError
	sharedTimeout   time.Duration
	sharedDenyCache bool

	// requirepass is the default user's password: never log it.
	requirepass   string
	usersFile     string
	tlsCertFile   string
	tlsKeyFile    string
	tlsCAFile     string
	protectedMode bool
	timeout       int // seconds a client may stay idle; 0 for ever
	maxClients    int // as asked for; serve lowers it to what the open-file limit allows
	eventLoops    int // event loops serving plain-TCP clients; 0 for a goroutine per client
	// loopsHoldP is not a flag: runAlone sets it (server.Config.LoopsHoldP).
	loopsHoldP bool

	maxmemory         int64
	slowlogSlowerThan int64 // µs
	slowlogMaxLen     int
	metricsAddr       string
	metricsTopKeys    int // THROTTLE.TOP's keys /metrics shows; 0 for none

	// Envoy's rate limit service: off while rlsAddr is empty. Empty
	// header names and a zero timeout are rls.Options's defaults.
	rlsAddr                                            string
	rlsConfig                                          string
	rlsResponseHeaders                                 bool
	rlsLimitHeader, rlsRemainingHeader, rlsResetHeader string
	rlsTimeout                                         time.Duration

	// command is what to run: "" to serve, commandPing for the health check.
	command string
}

// commandPing is the word that runs `cellserver ping` instead of the server.
const commandPing = "ping"

const (
	defaultAddr            = "127.0.0.1:6379"
	defaultProtoMaxBulkLen = 512 << 20
	// minProtoMaxBulkLen is Redis's lower bound for proto-max-bulk-len.
	minProtoMaxBulkLen = 1 << 20
	// maxShards bounds --shards so that a typo cannot allocate millions of
	// shards; the engine rounds the number up to a power of two.
	maxShards = 1 << 16
	// defaultFlushInterval is how often changes go to the backing Redis.
	defaultFlushInterval = 250 * time.Millisecond
	// defaultSharedTimeout is the longest a command waits for the shared
	// store.
	defaultSharedTimeout = 250 * time.Millisecond
	// defaultShutdownFlushTimeout is how long the final write to the
	// backing Redis may take at shutdown: several attempts while the store
	// is briefly down, well within Kubernetes's 30 s grace period after
	// the 10 s the connections may take.
	defaultShutdownFlushTimeout = 5 * time.Second
)

// The values of --backing-mode and --shared-fallback.
const (
	modeWriteBehind = "write-behind"
	modeShared      = "shared"
	fallbackLocal   = "local"
	fallbackError   = "error"
)

// errUsage is returned for a command line or environment that cellserver
// cannot run with, after the reason has been written to stderr; the process
// exits with status 2.
var errUsage = errors.New("usage error")

// option is one flag with its environment twin.
type option struct {
	flag, env, usage string
	value            flag.Value
}

// parseConfig reads flags from args and, for each flag not given, its
// environment twin from env (an empty variable counts as unset). A flag beats
// its twin. It returns flag.ErrHelp for -h, and errUsage
// for anything else it cannot accept, having written why to stderr.
func parseConfig(args []string, env func(string) string, stderr io.Writer) (config, error) {
	cfg := config{
		addr:                 defaultAddr,
		logLevel:             slog.LevelInfo,
		logFormat:            "text",
		protoMaxBulkLen:      defaultProtoMaxBulkLen,
		flushInterval:        defaultFlushInterval,
		shutdownFlushTimeout: defaultShutdownFlushTimeout,
		maxClients:           server.DefaultMaxClients,
		protectedMode:        true,
		slowlogSlowerThan:    10000,
		slowlogMaxLen:        128,
		eventLoops:           server.DefaultEventLoops,
		backingMode:          modeWriteBehind,
		sharedFallback:       fallbackLocal,
		sharedTimeout:        defaultSharedTimeout,
		sharedDenyCache:      true,
	}
	opts := []option{
		{"addr", "CELLSERVER_ADDR", "`host:port` to listen on (port 0 picks a free port)", (*addrValue)(&cfg.addr)},
		{"shards", "CELLSERVER_SHARDS", "`count` of keyspace shards, rounded up to a power of two; 0 means the engine's default", (*shardsValue)(&cfg.shards)},
		{"log-level", "CELLSERVER_LOG_LEVEL", "log `level`: debug, info, warn or error (default info)", (*levelValue)(&cfg.logLevel)},
		{"log-format", "CELLSERVER_LOG_FORMAT", "log `format` on stderr: text or json", (*formatValue)(&cfg.logFormat)},
		{"proto-max-bulk-len", "CELLSERVER_PROTO_MAX_BULK_LEN", "largest bulk string a client may send, in `bytes` (Redis suffixes accepted: 512mb, 1gb, ...)", (*bytesValue)(&cfg.protoMaxBulkLen)},
		{"backing-redis", "CELLSERVER_BACKING_REDIS", "backing Redis `URL` that keeps a copy of the keyspace: redis://[user:password@]host:port[/db], rediss:// for TLS, or a comma-separated list of cluster nodes; empty keeps state in memory only", (*stringValue)(&cfg.backingRedis)},
		{"backing-prefix", "CELLSERVER_BACKING_PREFIX", "`prefix` of every key in the backing Redis (default none, where redis-cell keeps its keys)", (*stringValue)(&cfg.backingPrefix)},
		{"flush-interval", "CELLSERVER_FLUSH_INTERVAL", "`duration` between two writes of the changed keys to the backing Redis", (*durationValue)(&cfg.flushInterval)},
		{"backing-required", "CELLSERVER_BACKING_REQUIRED", "refuse to start when the backing Redis cannot be loaded, instead of serving from memory and retrying", (*boolValue)(&cfg.backingRequired)},
		{"shutdown-flush-timeout", "CELLSERVER_SHUTDOWN_FLUSH_TIMEOUT", "longest `duration` the final write of the changed keys to the backing Redis may take at shutdown; keys still unwritten then are lost, logged, and the exit status is 1", (*durationValue)(&cfg.shutdownFlushTimeout)},
		{"backing-mode", "CELLSERVER_BACKING_MODE", "how the backing Redis is used: write-behind (one cellserver keeps its state in memory and copies it there) or shared (every decision is made in the store, so that many cellservers enforce one limit)", &choiceValue{v: &cfg.backingMode, choices: []string{modeWriteBehind, modeShared}}},
		{"shared-fallback", "CELLSERVER_SHARED_FALLBACK", "what shared mode does while the store cannot be reached: local (decide from this instance's memory) or error (answer an error)", &choiceValue{v: &cfg.sharedFallback, choices: []string{fallbackLocal, fallbackError}}},
		{"shared-timeout", "CELLSERVER_SHARED_TIMEOUT", "longest `duration` a command waits for the shared store before the fallback answers", (*durationValue)(&cfg.sharedTimeout)},
		{"shared-deny-cache", "CELLSERVER_SHARED_DENY_CACHE", "in shared mode, refuse locally, until the store's retry time, a request the store has just refused (true or false)", (*boolValue)(&cfg.sharedDenyCache)},
		{"requirepass", "CELLSERVER_REQUIREPASS", "`password` of the default user; clients AUTH before any other command (prefer the environment variable, which ps does not show)", (*stringValue)(&cfg.requirepass)},
		{"users-file", "CELLSERVER_USERS_FILE", "`path` of a file of named users and their passwords (a subset of Redis's ACL file syntax)", (*stringValue)(&cfg.usersFile)},
		{"tls-cert-file", "CELLSERVER_TLS_CERT_FILE", "`path` of the server's TLS certificate (PEM); with --tls-key-file the port speaks TLS", (*stringValue)(&cfg.tlsCertFile)},
		{"tls-key-file", "CELLSERVER_TLS_KEY_FILE", "`path` of the server's TLS private key (PEM)", (*stringValue)(&cfg.tlsKeyFile)},
		{"tls-ca-cert-file", "CELLSERVER_TLS_CA_CERT_FILE", "`path` of the CA certificates (PEM) that client certificates must be signed by; set, clients must present one", (*stringValue)(&cfg.tlsCAFile)},
		{"protected-mode", "CELLSERVER_PROTECTED_MODE", "refuse non-loopback clients while listening beyond loopback with no password, as Redis does (yes or no)", (*yesNoValue)(&cfg.protectedMode)},
		{"event-loops", "CELLSERVER_EVENT_LOOPS", "`count` of event loops serving plain-TCP clients on Linux, each on one core at a time, as Redis's one thread; 0 serves each client on its own goroutine instead", (*nonNegativeInt)(&cfg.eventLoops)},
		{"timeout", "CELLSERVER_TIMEOUT", "close a client idle for this many `seconds` (0: never)", (*timeoutValue)(&cfg.timeout)},
		{"maxclients", "CELLSERVER_MAXCLIENTS", "most `clients` connected at once; one more gets an error and is closed, as in Redis; lowered at start to what the open-file limit allows", (*positiveInt)(&cfg.maxClients)},
		{"maxmemory", "CELLSERVER_MAXMEMORY", "bound on the keyspace's estimated size in `bytes` (100mb, 1gb, ...); the keys that expire soonest are evicted first; 0 for none", (*sizeValue)(&cfg.maxmemory)},
		{"slowlog-log-slower-than", "CELLSERVER_SLOWLOG_LOG_SLOWER_THAN", "`microseconds` from which a command enters the slow log; 0 logs every command, negative none", (*int64Value)(&cfg.slowlogSlowerThan)},
		{"slowlog-max-len", "CELLSERVER_SLOWLOG_MAX_LEN", "`count` of slow log entries kept", (*nonNegativeInt)(&cfg.slowlogMaxLen)},
		{"metrics-top-keys", "CELLSERVER_METRICS_TOP_KEYS", "`count` of the keys refused most often (THROTTLE.TOP) that /metrics shows per window as cellserver_top_refused_keys; 0 for none", (*nonNegativeInt)(&cfg.metricsTopKeys)},
		{"metrics-addr", "CELLSERVER_METRICS_ADDR", "`host:port` serving /metrics, /healthz and /readyz over HTTP (and /json with --rls-addr); empty for none", (*stringValue)(&cfg.metricsAddr)},
		{"rls-addr", "CELLSERVER_RLS_ADDR", "`host:port` serving Envoy's rate limit service (gRPC, RLS v3; TLS with --tls-cert-file); empty for none", (*stringValue)(&cfg.rlsAddr)},
		{"rls-config", "CELLSERVER_RLS_CONFIG", "`path` of the rate limit service's configuration (envoyproxy/ratelimit's YAML), reloaded when it changes and on SIGHUP", (*stringValue)(&cfg.rlsConfig)},
		{"rls-response-headers", "CELLSERVER_RLS_RESPONSE_HEADERS", "add the RateLimit-Limit, -Remaining and -Reset headers to the rate limit service's responses (true or false)", (*boolValue)(&cfg.rlsResponseHeaders)},
		{"rls-limit-header", "CELLSERVER_RLS_LIMIT_HEADER", "`name` of the header giving the limit (default RateLimit-Limit)", (*stringValue)(&cfg.rlsLimitHeader)},
		{"rls-remaining-header", "CELLSERVER_RLS_REMAINING_HEADER", "`name` of the header giving the remaining requests (default RateLimit-Remaining)", (*stringValue)(&cfg.rlsRemainingHeader)},
		{"rls-reset-header", "CELLSERVER_RLS_RESET_HEADER", "`name` of the header giving the seconds until the limit resets (default RateLimit-Reset)", (*stringValue)(&cfg.rlsResetHeader)},
		{"rls-timeout", "CELLSERVER_RLS_TIMEOUT", "longest `duration` a rate limit service request may take, the shared store's wait included (default 1s)", (*durationValue)(&cfg.rlsTimeout)},
	}

	fs := flag.NewFlagSet("cellserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, o := range opts {
		fs.Var(o.value, o.flag, o.usage+" (env "+o.env+")")
	}
	fs.BoolVar(&cfg.showVersion, "version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: cellserver [flags] [ping]\n\ncellserver speaks the Redis protocol and answers rate-limit commands:\nCL.THROTTLE (redis-cell's GCRA), SW.THROTTLE (sliding log), SWC.THROTTLE (sliding counter),\nFW.THROTTLE (fixed window), LB.THROTTLE (pacing: a departure time) and THROTTLE.ALL (several\nlimits, all or nothing); SW.LOG reads a sliding log, THROTTLE.TOP who is being limited.\n"+
			"With ping, it checks instead that the server the same flags and environment configure answers PING (exit 0) or not (exit 1).\n\nFlags:\n")
		fs.PrintDefaults()
	}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, errUsage // the flag package has written the error and the usage
	}
	// `ping` may come before the flags or after them.
	if fs.Arg(0) == commandPing {
		cfg.command = commandPing
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return cfg, err
			}
			return cfg, errUsage
		}
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cellserver: unexpected argument %q (run cellserver -h for usage)\n", fs.Arg(0))
		return cfg, errUsage
	}
	if cfg.showVersion {
		return cfg, nil
	}

	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, o := range opts {
		v := env(o.env)
		if given[o.flag] || v == "" {
			continue
		}
		if err := o.value.Set(v); err != nil {
			fmt.Fprintf(stderr, "cellserver: invalid value %q for environment variable %s: %v\n", v, o.env, err)
			return cfg, errUsage
		}
	}
	if cfg.backingRedis != "" {
		// The flag package would print the value, password included: the
		// address is checked here, and the error repeats no password.
		if _, err := persist.ParseURL(cfg.backingRedis); err != nil {
			fmt.Fprintf(stderr, "cellserver: invalid --backing-redis (CELLSERVER_BACKING_REDIS): %v\n", err)
			return cfg, errUsage
		}
	}
	if (cfg.tlsCertFile == "") != (cfg.tlsKeyFile == "") || (cfg.tlsCAFile != "" && cfg.tlsCertFile == "") {
		fmt.Fprintf(stderr, "cellserver: TLS needs both --tls-cert-file and --tls-key-file (and --tls-ca-cert-file only with them)\n")
		return cfg, errUsage
	}
	if cfg.metricsAddr != "" {
		if err := (*addrValue)(new(string)).Set(cfg.metricsAddr); err != nil {
			fmt.Fprintf(stderr, "cellserver: invalid --metrics-addr %q: %v\n", cfg.metricsAddr, err)
			return cfg, errUsage
		}
	}
	if cfg.rlsAddr != "" {
		if err := (*addrValue)(new(string)).Set(cfg.rlsAddr); err != nil {
			fmt.Fprintf(stderr, "cellserver: invalid --rls-addr %q: %v\n", cfg.rlsAddr, err)
			return cfg, errUsage
		}
	}
	if cfg.rlsAddr == "" && cfg.rlsConfig != "" {
		fmt.Fprintf(stderr, "cellserver: --rls-config needs --rls-addr (CELLSERVER_RLS_ADDR)\n")
		return cfg, errUsage
	}
	if cfg.backingRedis == "" && cfg.backingRequired {
		fmt.Fprintf(stderr, "cellserver: --backing-required needs a backing Redis (--backing-redis or CELLSERVER_BACKING_REDIS)\n")
		return cfg, errUsage
	}
	if cfg.backingRedis == "" && cfg.backingMode == modeShared {
		fmt.Fprintf(stderr, "cellserver: --backing-mode shared needs a store (--backing-redis or CELLSERVER_BACKING_REDIS)\n")
		return cfg, errUsage
	}
	return cfg, nil
}

// shared reports whether decisions are made in the shared store.
func (cfg config) shared() bool { return cfg.backingMode == modeShared }

// choiceValue is one of a few words, in any case.
type choiceValue struct {
	v       *string
	choices []string
}

func (c *choiceValue) String() string {
	if c.v == nil {
		return ""
	}
	return *c.v
}

func (c *choiceValue) Set(s string) error {
	for _, w := range c.choices {
		if strings.EqualFold(s, w) {
			*c.v = w
			return nil
		}
	}
	return fmt.Errorf("want %s", strings.Join(c.choices, " or "))
}

// addrValue is a listen address, host:port with a numeric port.
type addrValue string

func (a *addrValue) String() string { return string(*a) }

func (a *addrValue) Set(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port, such as 127.0.0.1:6379 or :6379")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	*a = addrValue(s)
	return nil
}

// shardsValue is a shard count, 0 meaning the engine's default.
type shardsValue int

func (n *shardsValue) String() string { return strconv.Itoa(int(*n)) }

func (n *shardsValue) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > maxShards {
		return fmt.Errorf("want a whole number from 0 to %d", maxShards)
	}
	*n = shardsValue(v)
	return nil
}

// levelValue is a log level by name.
type levelValue slog.Level

func (l *levelValue) String() string { return strings.ToLower(slog.Level(*l).String()) }

func (l *levelValue) Set(s string) error {
	levels := map[string]slog.Level{
		"debug": slog.LevelDebug, "info": slog.LevelInfo,
		"warn": slog.LevelWarn, "error": slog.LevelError,
	}
	v, ok := levels[strings.ToLower(s)]
	if !ok {
		return errors.New("want debug, info, warn or error")
	}
	*l = levelValue(v)
	return nil
}

// formatValue is a log format: text or json.
type formatValue string

func (f *formatValue) String() string { return string(*f) }

func (f *formatValue) Set(s string) error {
	switch s = strings.ToLower(s); s {
	case "text", "json":
		*f = formatValue(s)
		return nil
	}
	return errors.New("want text or json")
}

// stringValue is any string.
type stringValue string

func (v *stringValue) String() string { return string(*v) }

func (v *stringValue) Set(s string) error {
	*v = stringValue(s)
	return nil
}

// durationValue is a positive Go duration.
type durationValue time.Duration

func (d *durationValue) String() string { return time.Duration(*d).String() }

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return errors.New("want a positive duration such as 250ms or 1s")
	}
	*d = durationValue(v)
	return nil
}

// boolValue is a boolean flag: given alone it means true.
type boolValue bool

func (b *boolValue) String() string { return strconv.FormatBool(bool(*b)) }

func (b *boolValue) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*b = boolValue(v)
	return nil
}

// IsBoolFlag lets the flag be given without a value.
func (b *boolValue) IsBoolFlag() bool { return true }

// bytesValue is a size in bytes, written as Redis writes memory sizes.
type bytesValue int64

func (b *bytesValue) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *bytesValue) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	if n < minProtoMaxBulkLen {
		return fmt.Errorf("%d bytes is below the minimum of 1mb (%d)", n, minProtoMaxBulkLen)
	}
	*b = bytesValue(n)
	return nil
}

// parseBytes reads a memory size as Redis's memtoll does: a whole number of
// bytes, optionally followed (in any case) by b, k (1000), kb (1024), m
// (1000²), mb (1024²), g (1000³) or gb (1024³).
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mul    int64
	}{ // longer suffixes first, so "kb" is not read as "k"
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1},
	}
	lower := strings.ToLower(s)
	digits, mul := lower, int64(1)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			digits, mul = strings.TrimSuffix(lower, u.suffix), u.mul
			break
		}
	}
	errBad := fmt.Errorf("want a size in bytes such as 536870912, 512mb or 1gb")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, errBad
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > (1<<63-1)/mul {
		return 0, errBad
	}
	return n * mul, nil
}

// sizeValue is a size in bytes as Redis writes memory sizes, 0 allowed.
type sizeValue int64

func (b *sizeValue) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *sizeValue) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = sizeValue(n)
	return nil
}

// int64Value is any whole number.
type int64Value int64

func (v *int64Value) String() string { return strconv.FormatInt(int64(*v), 10) }

func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("want a whole number")
	}
	*v = int64Value(n)
	return nil
}

// nonNegativeInt is a whole number from 0.
type nonNegativeInt int

func (v *nonNegativeInt) String() string { return strconv.Itoa(int(*v)) }

func (v *nonNegativeInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return errors.New("want a whole number from 0")
	}
	*v = nonNegativeInt(n)
	return nil
}

// maxTimeout is Redis's bound on timeout (INT_MAX seconds), well within
// what a time.Duration holds: beyond about 9.2e9 seconds the idle timeout
// would wrap around to a negative or a tiny duration.
const maxTimeout = 1<<31 - 1

// timeoutValue is an idle timeout in whole seconds, from 0 to maxTimeout.
type timeoutValue int

func (v *timeoutValue) String() string { return strconv.Itoa(int(*v)) }

func (v *timeoutValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxTimeout {
		return fmt.Errorf("want a whole number from 0 to %d", maxTimeout)
	}
	*v = timeoutValue(n)
	return nil
}

// positiveInt is a whole number from 1.
type positiveInt int

func (v *positiveInt) String() string { return strconv.Itoa(int(*v)) }

func (v *positiveInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return errors.New("want a whole number from 1")
	}
	*v = positiveInt(n)
	return nil
}

// yesNoValue is a switch written as Redis writes them: yes or no (true and
// false are accepted too).
type yesNoValue bool

func (b *yesNoValue) String() string {
	if *b {
		return "yes"
	}
	return "no"
}

func (b *yesNoValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "yes", "true", "1":
		*b = true
	case "no", "false", "0":
		*b = false
	default:
		return errors.New("want yes or no")
	}
	return nil
}
