package commands

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// infoSection is one section of INFO.
type infoSection struct {
	// names are the names that ask for the section; the first is Redis's
	// default-list name.
	names []string
	// byDefault puts the section in a plain INFO.
	byDefault bool
	// write appends the section, header included.
	write func(b *strings.Builder, cx *Context)
}

// infoSections lists INFO's sections in Redis 7.0's order.
func infoSections() []infoSection {
	return []infoSection{
		{[]string{"server"}, true, infoServer},
		{[]string{"clients"}, true, infoClients},
		{[]string{"memory"}, true, infoMemory},
		{[]string{"persistence"}, true, infoPersistence},
		{[]string{"stats"}, true, infoStats},
		{[]string{"replication"}, true, infoReplication},
		{[]string{"cpu"}, true, infoCPU},
		{[]string{"module_list", "modules"}, true, func(b *strings.Builder, _ *Context) {
			b.WriteString("# Modules\r\n")
		}},
		{[]string{"commandstats"}, false, func(b *strings.Builder, cx *Context) {
			b.WriteString("# Commandstats\r\n")
			cx.cmds.writeCommandStats(b)
		}},
		{[]string{"errorstats"}, true, func(b *strings.Builder, cx *Context) {
			b.WriteString("# Errorstats\r\n")
			cx.cmds.replyErrors.write(b)
		}},
		{[]string{"cluster"}, true, func(b *strings.Builder, _ *Context) {
			b.WriteString("# Cluster\r\ncluster_enabled:0\r\n")
		}},
		{[]string{"keyspace"}, true, infoKeyspace},
	}
}

// info is INFO [section ...]. Section names are case-insensitive; "default"
// is the plain INFO's sections, "all" and "everything" are every section;
// an unknown name adds nothing, so INFO of only unknown names is empty.
func info(cx *Context, w Writer, args [][]byte) {
	// >> Args
	sections := infoSections()
	all := false
	want := make(map[string]bool)
	for _, a := range args[1:] {
		switch name := strings.ToLower(string(a)); name {
		case "all", "everything":
			all = true
		default:
			want[name] = true
		}
	}
	byDefault := len(args) == 1 || want["default"]

	// >> Operation
	var b strings.Builder
	for _, s := range sections {
		show := all || (byDefault && s.byDefault)
		for _, n := range s.names {
			show = show || want[n]
		}
		if !show {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		s.write(&b, cx)
	}

	// >> Response
	w.WriteVerbatim(b.String())
}

func infoServer(b *strings.Builder, cx *Context) {
	c := cx.cmds
	uptime := int64(time.Since(c.started) / time.Second)
	exe, _ := os.Executable()
	fmt.Fprintf(b, "# Server\r\n"+
		"redis_version:%s\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_mode:standalone\r\n"+
		"os:%s %s\r\narch_bits:%d\r\nprocess_id:%d\r\nprocess_supervised:no\r\ntcp_port:%d\r\n"+
		"server_time_usec:%d\r\nuptime_in_seconds:%d\r\nuptime_in_days:%d\r\n"+
		"executable:%s\r\nconfig_file:\r\nio_threads_active:0\r\n"+
		"cellserver_version:%s\r\ngo_version:%s\r\n",
		redisVersion, runtime.GOOS, runtime.GOARCH, strconv.IntSize, os.Getpid(), c.opts.Host.Stats().TCPPort,
		cx.Engine().Now().UnixMicro(), uptime, uptime/(24*3600),
		exe, c.opts.Version, runtime.Version())
}

func infoClients(b *strings.Builder, cx *Context) {
	fmt.Fprintf(b, "# Clients\r\nconnected_clients:%d\r\ncluster_connections:0\r\n",
		cx.cmds.opts.Host.Stats().ConnectedClients)
	if v, ok := cx.cmds.setting("maxclients"); ok {
		fmt.Fprintf(b, "maxclients:%s\r\n", v)
	}
	b.WriteString("blocked_clients:0\r\ntracking_clients:0\r\n")
}

// infoMemory reports the Go heap: used_memory is the live heap, and
// used_memory_rss what the runtime holds from the OS and has not given back.
// used_memory_dataset is the keyspace's estimate, the figure maxmemory
// bounds; its policy is always Redis's volatile-ttl (every key has a TTL,
// and the soonest to expire go first).
func infoMemory(b *strings.Builder, cx *Context) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss := m.Sys - m.HeapReleased
	maxBytes := uint64(cx.Engine().MaxMemory())
	fmt.Fprintf(b, "# Memory\r\n"+
		"used_memory:%d\r\nused_memory_human:%s\r\nused_memory_rss:%d\r\nused_memory_rss_human:%s\r\n"+
		"used_memory_dataset:%d\r\n"+
		"maxmemory:%d\r\nmaxmemory_human:%s\r\nmaxmemory_policy:%s\r\nmem_allocator:go\r\n"+
		"go_heap_objects:%d\r\ngo_gc_count:%d\r\n",
		m.HeapAlloc, bytesToHuman(m.HeapAlloc), rss, bytesToHuman(rss),
		cx.Engine().Used(),
		maxBytes, bytesToHuman(maxBytes), maxmemoryPolicy, m.HeapObjects, m.NumGC)
}

func infoPersistence(b *strings.Builder, cx *Context) {
	fmt.Fprintf(b, "# Persistence\r\n"+
		"loading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\n"+
		"rdb_last_save_time:%d\r\nrdb_last_bgsave_status:ok\r\n"+
		"aof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\n"+
		"aof_last_bgrewrite_status:ok\r\naof_last_write_status:ok\r\n",
		cx.cmds.started.Unix())
	if p := cx.cmds.opts.Persistence; p != nil {
		for _, f := range p() {
			fmt.Fprintf(b, "%s:%s\r\n", f.Name, f.Value)
		}
	}
}

func infoStats(b *strings.Builder, cx *Context) {
	c := cx.cmds
	host := c.opts.Host.Stats()
	processed, errors := c.totals()
	fmt.Fprintf(b, "# Stats\r\n"+
		"total_connections_received:%d\r\ntotal_commands_processed:%d\r\nrejected_connections:%d\r\n"+
		"expired_keys:%d\r\nevicted_keys:%d\r\nevicted_clients:0\r\n"+
		"pubsub_channels:0\r\npubsub_patterns:0\r\npubsubshard_channels:0\r\n"+
		"total_error_replies:%d\r\n",
		host.TotalConnections, processed, host.RejectedConnections,
		cx.Engine().ExpiredKeys(), cx.Engine().EvictedKeys(), errors)
	allowed, limited := c.decisions()
	fmt.Fprintf(b, "throttle_allowed_calls:%d\r\nthrottle_limited_calls:%d\r\n", allowed, limited)
	// Distinct keys refused, estimated (1.6% standard error) over the
	// current and previous minute, and hour: see THROTTLE.TOP.
	r := c.refusals
	fmt.Fprintf(b, "throttle_refused_keys_1m:%d\r\nthrottle_refused_keys_1h:%d\r\n",
		r.distinct(r.minute), r.distinct(r.hour))
}

func infoReplication(b *strings.Builder, _ *Context) {
	b.WriteString("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n" +
		"master_failover_state:no-failover\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\n" +
		"repl_backlog_active:0\r\n")
}

func infoCPU(b *strings.Builder, _ *Context) {
	self, children := cpuUsage()
	b.WriteString("# CPU\r\n")
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"used_cpu_sys", self.sys}, {"used_cpu_user", self.user},
		{"used_cpu_sys_children", children.sys}, {"used_cpu_user_children", children.user},
	} {
		us := f.d.Microseconds()
		fmt.Fprintf(b, "%s:%d.%06d\r\n", f.name, us/1_000_000, us%1_000_000)
	}
}

// infoKeyspace reports the one database. Every cellserver key expires, so
// expires equals keys.
func infoKeyspace(b *strings.Builder, cx *Context) {
	b.WriteString("# Keyspace\r\n")
	if n := cx.Engine().Len(cx.Tx); n > 0 {
		fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", n, n)
	}
}

// cpuTime is the CPU time a process has used.
type cpuTime struct{ sys, user time.Duration }

// bytesToHuman formats n as Redis's bytesToHuman does ("1.50M").
func bytesToHuman(n uint64) string {
	const k = 1024
	units := []struct {
		limit  uint64
		suffix string
	}{{k * k, "K"}, {k * k * k, "M"}, {k * k * k * k, "G"}, {k * k * k * k * k, "T"}, {k * k * k * k * k * k, "P"}}
	if n < k {
		return strconv.FormatUint(n, 10) + "B"
	}
	for _, u := range units {
		if n < u.limit {
			return strconv.FormatFloat(float64(n)/float64(u.limit/k), 'f', 2, 64) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}
