package metrics

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
)

// host is a commands.Host with settable counters.
type host struct {
	mu    sync.Mutex
	stats commands.HostStats
}

func (h *host) Clients() []commands.ClientInfo { return nil }
func (h *host) Stats() commands.HostStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// discard is a commands.Writer that keeps only whether it wrote an error.
type discard struct{ err string }

func (d *discard) WriteError(msg string) { d.err = msg }
func (*discard) WriteString(string)      {}
func (*discard) WriteBulk([]byte)        {}
func (*discard) WriteBulkString(string)  {}
func (*discard) WriteInt(int64)          {}
func (*discard) WriteArray(int)          {}
func (*discard) WriteMap(int)            {}
func (*discard) WriteSet(int)            {}
func (*discard) WriteNull()              {}
func (*discard) WriteNullArray()         {}
func (*discard) WriteVerbatim(string)    {}

// rig is an engine, its commands and a host, as cmd/cellserver wires them,
// with the metrics handler served over HTTP.
type rig struct {
	t      *testing.T
	clock  *engine.ManualClock
	eng    *engine.Engine
	cmds   *commands.Commands
	host   *host
	client *commands.Client
	srv    *httptest.Server
}

func newRig(t *testing.T, maxMemory int64, opts Options) *rig {
	t.Helper()
	c := engine.NewManualClock(time.Unix(1_795_336_191, 0))
	eng := engine.New(engine.Options{Now: c.Now, SweepInterval: -1, Shards: 1, MaxMemory: maxMemory})
	t.Cleanup(eng.Close)
	h := &host{}
	cmds := commands.New(commands.Options{Engine: eng, Host: h})
	opts.Commands, opts.Engine, opts.Host = cmds, eng, h
	srv := httptest.NewServer(NewHandler(opts))
	t.Cleanup(srv.Close)
	return &rig{t: t, clock: c, eng: eng, cmds: cmds, host: h, srv: srv,
		client: commands.NewClient(1, "127.0.0.1:50000", "127.0.0.1:6379", c.Now())}
}

// do runs one command through commands.Dispatch and returns its error
// reply, if any.
func (r *rig) do(args ...string) string {
	r.t.Helper()
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	w := &discard{}
	r.cmds.Dispatch(w, r.client, bargs)
	return w.err
}

// get fetches path and returns the status and body.
func (r *rig) get(path string) (int, string) {
	r.t.Helper()
	resp, err := http.Get(r.srv.URL + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// sampleLine is one sample of the text exposition format:
// name{label="value",...} value.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$`)

// scrape GETs /metrics and returns every sample by its series
// (`name{labels}` as exposed), checking the exposition's form on the way.
func (r *rig) scrape() map[string]float64 {
	r.t.Helper()
	status, body := r.get("/metrics")
	if status != http.StatusOK {
		r.t.Fatalf("GET /metrics: %d %s", status, body)
	}
	out := make(map[string]float64)
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			r.t.Fatalf("not a sample line: %q", line)
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			r.t.Fatalf("%q: %v", line, err)
		}
		if _, dup := out[m[1]]; dup {
			r.t.Fatalf("series %s exposed twice", m[1])
		}
		out[m[1]] = v
	}
	return out
}

// TestScrapeAfterTraffic drives commands through Dispatch between two
// scrapes of /metrics over HTTP and checks that each counter moved by
// exactly what the traffic did.
func TestScrapeAfterTraffic(t *testing.T) {
	r := newRig(t, 0, Options{})
	r.do("CL.THROTTLE", "warm", "1", "1", "60")
	before := r.scrape()
	for _, name := range []string{
		`cellserver_commands_total{command="cl.throttle",outcome="allowed"}`,
		`cellserver_command_duration_seconds_count{command="cl.throttle"}`,
		`cellserver_keys{family="cl"}`, `cellserver_connected_clients`, `go_goroutines`,
	} {
		if _, ok := before[name]; !ok {
			t.Errorf("first scrape lacks %s", name)
		}
	}

	// The traffic: 2 allowed and 1 limited on k (a limit of 2), 3 allowed
	// on three new keys, 2 errors, 2 PINGs, a rejected command, and a
	// CL.THROTTLE inside MULTI/EXEC.
	for range 3 {
		r.do("CL.THROTTLE", "k", "1", "1", "60")
	}
	for _, k := range []string{"a", "b", "c"} {
		r.do("CL.THROTTLE", k, "0", "1", "1") // lives 1s
	}
	if msg := r.do("CL.THROTTLE", "k", "x", "1", "60"); msg == "" {
		t.Fatal("bad argument not refused")
	}
	r.do("CL.THROTTLE", "z", "1", "0", "60") // zero rate: error
	r.do("PING")
	r.do("PING")
	r.do("NOSUCH")
	r.do("MULTI")
	r.do("CL.THROTTLE", "m", "1", "1", "60")
	r.do("EXEC")
	r.clock.Advance(2 * time.Second) // a, b, c expire
	if n := r.eng.Sweep(); n != 3 {
		t.Fatalf("Sweep removed %d, want 3", n)
	}
	r.host.mu.Lock()
	r.host.stats = commands.HostStats{ConnectedClients: 3, TotalConnections: 10, RejectedConnections: 2}
	r.host.mu.Unlock()

	after := r.scrape()
	deltas := map[string]float64{
		`cellserver_commands_total{command="cl.throttle",outcome="allowed"}`:          2 + 3 + 1,
		`cellserver_commands_total{command="cl.throttle",outcome="limited"}`:          1,
		`cellserver_commands_total{command="cl.throttle",outcome="error"}`:            2,
		`cellserver_command_duration_seconds_count{command="cl.throttle"}`:            9,
		`cellserver_command_duration_seconds_bucket{command="cl.throttle",le="+Inf"}`: 9,
		`cellserver_commands_total{command="ping",outcome="ok"}`:                      2,
		`cellserver_commands_total{command="ping",outcome="error"}`:                   0,
		`cellserver_command_duration_seconds_count{command="ping"}`:                   2,
		`cellserver_commands_total{command="multi",outcome="ok"}`:                     1,
		`cellserver_commands_total{command="exec",outcome="ok"}`:                      1,
		`cellserver_keys{family="cl"}`:                                                2, // k and m; a, b, c expired
		`cellserver_expired_keys_total`:                                               3,
		`cellserver_evicted_keys_total`:                                               0,
		`cellserver_connected_clients`:                                                3,
		`cellserver_connections_total`:                                                10,
		`cellserver_rejected_connections_total`:                                       2,
		`cellserver_used_memory_bytes`:                                                float64(r.eng.Used() - int64(before[`cellserver_used_memory_bytes`])),
		`cellserver_maxmemory_bytes`:                                                  0,
	}
	for series, want := range deltas {
		if got := after[series] - before[series]; got != want {
			t.Errorf("%s moved by %v, want %v", series, got, want)
		}
	}
	if after[`cellserver_used_memory_bytes`] != float64(r.eng.Used()) || r.eng.Used() == 0 {
		t.Errorf("used memory %v, engine says %d", after[`cellserver_used_memory_bytes`], r.eng.Used())
	}
	// Rejected commands and commands never run have no series.
	for series := range after {
		if strings.Contains(series, `command="nosuch"`) || strings.Contains(series, `command="echo"`) {
			t.Errorf("series for a command that never ran: %s", series)
		}
	}
	// The histogram's buckets are cumulative and end at the count.
	prev := 0.0
	for _, b := range commands.LatencyBounds() {
		le := strconv.FormatFloat(b.Seconds(), 'g', -1, 64)
		v, ok := after[`cellserver_command_duration_seconds_bucket{command="cl.throttle",le="`+le+`"}`]
		if !ok || v < prev {
			t.Fatalf("bucket le=%s: %v (present %v), after %v", le, v, ok, prev)
		}
		prev = v
	}
	if prev > after[`cellserver_command_duration_seconds_count{command="cl.throttle"}`] {
		t.Errorf("buckets exceed the count")
	}
}

// TestScrapeEvictions: evictions under maxmemory show in the metrics, as in
// INFO.
func TestScrapeEvictions(t *testing.T) {
	probe := engine.New(engine.Options{Shards: 1, SweepInterval: -1})
	probe.Throttle(nil, []byte("k"), engine.GCRAQuota{MaxBurst: 1, Count: 1, Period: 1}, 1)
	perKey := probe.Used() // what a key with a one-byte name costs
	probe.Close()

	r := newRig(t, 2*perKey, Options{})
	r.do("CL.THROTTLE", "a", "15", "30", "60", "3") // lives 6s
	r.do("CL.THROTTLE", "b", "15", "30", "60", "1") // 2s
	r.do("CL.THROTTLE", "c", "15", "30", "60", "2") // 4s: evicts b
	r.do("CL.THROTTLE", "d", "15", "30", "60", "5") // 10s: evicts c
	got := r.scrape()
	for series, want := range map[string]float64{
		`cellserver_evicted_keys_total`: 2,
		`cellserver_keys{family="cl"}`:  2,
		`cellserver_used_memory_bytes`:  float64(2 * perKey),
		`cellserver_maxmemory_bytes`:    float64(2 * perKey),
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
}

// TestPersistenceHook: the hook's figures are exported under
// cellserver_persist_, and a bad name fails only its own figure.
func TestPersistenceHook(t *testing.T) {
	flushes := atomic.Int64{}
	r := newRig(t, 0, Options{Persistence: func() []Sample {
		return []Sample{
			{Name: "flushes_total", Value: float64(flushes.Load()), Counter: true},
			{Name: "pending_keys", Help: "Keys waiting for the writer.", Value: 7},
		}
	}})
	flushes.Store(41)
	if got := r.scrape(); got["cellserver_persist_flushes_total"] != 41 || got["cellserver_persist_pending_keys"] != 7 {
		t.Errorf("persistence figures: %v %v", got["cellserver_persist_flushes_total"], got["cellserver_persist_pending_keys"])
	}
	_, body := r.get("/metrics")
	for _, line := range []string{"# TYPE cellserver_persist_flushes_total counter", "# TYPE cellserver_persist_pending_keys gauge",
		"# HELP cellserver_persist_pending_keys Keys waiting for the writer."} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("exposition lacks %q", line)
		}
	}

	bad := newRig(t, 0, Options{Persistence: func() []Sample {
		return []Sample{{Name: "bad name", Value: 1}, {Name: "good", Value: 2}}
	}})
	got := bad.scrape()
	if _, ok := got[`cellserver_keys{family="cl"}`]; !ok || got["cellserver_persist_good"] != 2 {
		t.Errorf("with a bad figure, the others are lost: %v", got)
	}
}

// TestHealthAndReadiness: /healthz answers while the process serves;
// /readyz turns from 503 to 200 once the ready func says so.
func TestHealthAndReadiness(t *testing.T) {
	var ready atomic.Bool
	r := newRig(t, 0, Options{Ready: ready.Load})
	expect := func(r *rig, path string, status int, body string) {
		t.Helper()
		if gotStatus, gotBody := r.get(path); gotStatus != status || gotBody != body {
			t.Errorf("GET %s = %d %q, want %d %q", path, gotStatus, gotBody, status, body)
		}
	}
	expect(r, "/healthz", 200, "ok\n")
	expect(r, "/readyz", 503, "loading\n")
	ready.Store(true)
	expect(r, "/healthz", 200, "ok\n")
	expect(r, "/readyz", 200, "ready\n")
	expect(r, "/nosuch", 404, "404 page not found\n")
	// Without a ready func, ready from the start.
	expect(newRig(t, 0, Options{}), "/readyz", 200, "ready\n")
}

// TestTwoHandlers: each handler has its own registry; two side by side
// report their own figures.
func TestTwoHandlers(t *testing.T) {
	a, b := newRig(t, 0, Options{}), newRig(t, 0, Options{})
	a.do("CL.THROTTLE", "k", "1", "1", "60")
	if got := a.scrape()[`cellserver_keys{family="cl"}`]; got != 1 {
		t.Errorf("a: %v keys", got)
	}
	if got := b.scrape()[`cellserver_keys{family="cl"}`]; got != 0 {
		t.Errorf("b: %v keys", got)
	}
}

// TestTopRefusedKeys: with TopKeys set, the keys refused most are gauges
// by key, family and window, no more than TopKeys per window; without it,
// none.
func TestTopRefusedKeys(t *testing.T) {
	r := newRig(t, 0, Options{TopKeys: 2})
	for _, k := range []struct {
		key  string
		refs int
	}{{"a", 3}, {"b", 2}, {"c", 1}, {"bad\xff", 4}} {
		for range k.refs + 1 { // the first is admitted
			r.do("SW.THROTTLE", k.key, "1", "1h")
		}
	}
	got := map[string]float64{}
	for series, v := range r.scrape() {
		if strings.HasPrefix(series, "cellserver_top_refused_keys") {
			got[series] = v
		}
	}
	want := map[string]float64{
		`cellserver_top_refused_keys{family="sw",key="bad` + "\uFFFD" + `",window="1m"}`: 4,
		`cellserver_top_refused_keys{family="sw",key="a",window="1m"}`:                   3,
		`cellserver_top_refused_keys{family="sw",key="bad` + "\uFFFD" + `",window="1h"}`: 4,
		`cellserver_top_refused_keys{family="sw",key="a",window="1h"}`:                   3,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for s, v := range want {
		if got[s] != v {
			t.Errorf("%s = %v, want %v (got %v)", s, got[s], v, got)
		}
	}

	none := newRig(t, 0, Options{})
	none.do("SW.THROTTLE", "a", "1", "1h")
	none.do("SW.THROTTLE", "a", "1", "1h")
	for series := range none.scrape() {
		if strings.HasPrefix(series, "cellserver_top_refused_keys") {
			t.Errorf("exported without TopKeys: %s", series)
		}
	}
}

// TestScrapeBesideRefusals: scrapes of the top keys, which move the
// sub-windows on as the clock passes a minute, run beside a client's
// refusals without a data race (run with -race).
func TestScrapeBesideRefusals(t *testing.T) {
	r := newRig(t, 0, Options{TopKeys: 3})
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := commands.NewClient(2, "127.0.0.1:50001", "127.0.0.1:6379", r.clock.Now())
		args := [][]byte{[]byte("SW.THROTTLE"), []byte("k"), []byte("1"), []byte("1h")}
		for !done.Load() {
			r.cmds.Dispatch(&discard{}, client, args)
		}
	}()
	for range 20 {
		r.clock.Advance(time.Minute)
		r.scrape()
	}
	done.Store(true)
	wg.Wait()
}
