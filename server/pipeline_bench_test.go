package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"runtime"
	"strconv"
	"testing"

	"github.com/cellserver/cellserver/commands"
	"github.com/cellserver/cellserver/engine"
)

// BenchmarkServerPipeline measures the whole server path: a loopback
// client sends batches of pipelined CL.THROTTLE requests on keys that
// already exist, through the real command table and engine, and reads every
// reply, on an event loop, on a goroutine per connection, and over TLS
// (a goroutine per connection). allocs/cmd counts the allocations of the
// whole process (client included, which allocates nothing over plain TCP)
// per command.
func BenchmarkServerPipeline(b *testing.B) {
	for _, drv := range []struct {
		name  string
		loops int
		tls   bool
	}{{"loop", 1, false}, {"goroutine", 0, false}, {"tls", 0, true}} {
		for _, depth := range []int{1, 16} {
			b.Run(drv.name+"/P"+strconv.Itoa(depth), func(b *testing.B) { benchPipeline(b, drv.loops, depth, drv.tls) })
		}
	}
}

func benchPipeline(b *testing.B, loops, depth int, useTLS bool) {
	eng := engine.New(engine.Options{SweepInterval: -1})
	defer eng.Close()
	cmds := commands.New(commands.Options{Engine: eng, Logger: newTestLogger()})
	cfg := Config{Handler: cmds, Logger: newTestLogger(), EventLoops: loops}
	var clientTLS *tls.Config
	if useTLS {
		p := newTestPKI(b)
		var err error
		if cfg.TLS, err = LoadTLS(p.certFile, p.keyFile, ""); err != nil {
			b.Fatal(err)
		}
		clientTLS = p.clientTLS()
	}
	srv := New(cfg)
	cmds.SetHost(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			b.Error(err)
		}
	}()
	var nc net.Conn
	if useTLS {
		nc, err = tls.Dial("tcp", ln.Addr().String(), clientTLS)
	} else {
		nc, err = net.Dial("tcp", ln.Addr().String())
	}
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()

	var batch []byte
	for i := range depth {
		batch = append(batch, cmd("CL.THROTTLE", "user"+strconv.Itoa(i), "1000000", "1000000", "86400")...) // keys that outlive the run
	}
	rd := bufio.NewReaderSize(nc, 64<<10)
	roundTrip := func() {
		if _, err := nc.Write(batch); err != nil {
			b.Fatal(err)
		}
		for range depth * 6 { // "*5" and five integers per reply
			line, err := rd.ReadSlice('\n')
			if err != nil || (line[0] != '*' && line[0] != ':') {
				b.Fatalf("reply line %q, err %v", line, err)
			}
		}
	}
	roundTrip() // creates the keys and the connection's buffers

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		roundTrip()
		n++
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n*depth), "allocs/cmd")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*depth), "ns/cmd")
}
