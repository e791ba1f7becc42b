package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellserver/cellserver/persist/redistest"
)

// respConn is a raw RESP2 connection, for comparing replies byte for byte.
type respConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRESP(t *testing.T, addr string) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{conn: c, r: bufio.NewReader(c)}
}

// do sends args as a RESP array and returns the reply's bytes.
func (c *respConn) do(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	var reply strings.Builder
	if err := readReply(c.r, &reply); err != nil {
		t.Fatalf("%q: reading the reply: %v (so far %q)", args, err, reply.String())
	}
	return reply.String()
}

// readReply copies one RESP2 reply from r to out.
func readReply(r *bufio.Reader, out *strings.Builder) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
	switch line[0] {
	case '$':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		out.Write(buf)
	case '*':
		for range max(n, 0) {
			if err := readReply(r, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestRunSharedBadInput: every bad input gets the same reply, byte for byte,
// from a shared-mode instance as from a memory-mode one, and nothing a
// refused call would have created is written to the store: not by an
// invalid call, not by a THROTTLE.ALL one of whose rules is on a key of
// another kind or at its limit.
func TestRunSharedBadInput(t *testing.T) {
	t.Parallel()
	store := redistest.Start(t)
	ctx := context.Background()
	storeClient := store.Client(t)
	// Another application's values under the prefix, which only the store
	// can hold: a plain string and a hash.
	if err := storeClient.Set(ctx, "t:foreign", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := storeClient.HSet(ctx, "t:fhash", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	memory := dialRESP(t, startRun(t, []string{"--addr", "127.0.0.1:0"}, nil).addr)
	shared := dialRESP(t, startRun(t, sharedArgs(store.URL()), nil).addr)

	// Keys set up on both instances, each of one family; "full" is an FW
	// key at its limit of 1.
	for _, args := range [][]string{
		{"CL.THROTTLE", "clkey", "15", "30", "60"},
		{"SW.THROTTLE", "swkey", "10", "1h"},
		{"FW.THROTTLE", "fwkey", "10", "1h"},
		{"FW.THROTTLE", "full", "1", "1h"},
	} {
		for _, c := range []*respConn{memory, shared} {
			if r := c.do(t, args...); !strings.HasPrefix(r, "*5\r\n:0\r\n") {
				t.Fatalf("%q = %q, want admitted", args, r)
			}
		}
	}

	tests := []struct {
		name string
		args []string
		// like: the key holds another application's value, which only
		// the store has; the reference is memory's reply with that key
		// replaced by like, a key of another family.
		like string
	}{
		{"CL no args", []string{"CL.THROTTLE"}, ""},
		{"CL too few", []string{"CL.THROTTLE", "n1", "1", "2"}, ""},
		{"CL too many", []string{"CL.THROTTLE", "n1", "1", "2", "3", "4", "5"}, ""},
		{"CL burst not an integer", []string{"CL.THROTTLE", "n1", "x", "2", "3"}, ""},
		{"CL period not an integer", []string{"CL.THROTTLE", "n1", "1", "2", "3.5"}, ""},
		{"CL quantity not an integer", []string{"CL.THROTTLE", "n1", "1", "2", "3", "q"}, ""},
		{"CL zero count", []string{"CL.THROTTLE", "n1", "15", "0", "60"}, ""},
		{"CL zero period", []string{"CL.THROTTLE", "n1", "15", "30", "0"}, ""},
		{"CL rate under 1ns", []string{"CL.THROTTLE", "n1", "1", "10000000000", "1"}, ""},
		{"CL negative quantity new key", []string{"CL.THROTTLE", "n1", "15", "30", "60", "-100"}, ""},
		{"CL on SW", []string{"CL.THROTTLE", "swkey", "15", "30", "60"}, ""},
		{"CL on FW", []string{"CL.THROTTLE", "fwkey", "15", "30", "60"}, ""},
		{"CL on string", []string{"CL.THROTTLE", "foreign", "15", "30", "60"}, "swkey"},
		{"CL on hash", []string{"CL.THROTTLE", "fhash", "15", "30", "60"}, "swkey"},

		{"SW too few", []string{"SW.THROTTLE", "n2", "10"}, ""},
		{"SW limit not an integer", []string{"SW.THROTTLE", "n2", "x", "1h"}, ""},
		{"SW zero limit", []string{"SW.THROTTLE", "n2", "0", "1h"}, ""},
		{"SW zero window", []string{"SW.THROTTLE", "n2", "10", "0"}, ""},
		{"SW negative quantity", []string{"SW.THROTTLE", "n2", "10", "1h", "-1"}, ""},
		{"SW unknown option", []string{"SW.THROTTLE", "n2", "10", "1h", "1", "BOGUS"}, ""},
		{"SWC bad window", []string{"SWC.THROTTLE", "n2", "10", "1y"}, ""},
		{"SWC negative quantity", []string{"SWC.THROTTLE", "n2", "10", "1h", "-5"}, ""},
		{"SWC on SW", []string{"SWC.THROTTLE", "swkey", "10", "1h"}, ""},
		{"FW quantity not an integer", []string{"FW.THROTTLE", "n2", "10", "1h", "x"}, ""},
		{"FW negative limit", []string{"FW.THROTTLE", "n2", "-10", "1h"}, ""},
		{"FW on CL", []string{"FW.THROTTLE", "clkey", "10", "1h"}, ""},
		{"SW on FW", []string{"SW.THROTTLE", "fwkey", "10", "1h"}, ""},
		{"FW on string", []string{"FW.THROTTLE", "foreign", "10", "1h"}, "swkey"},
		{"SW on hash", []string{"SW.THROTTLE", "fhash", "10", "1h"}, "fwkey"},

		{"ALL no args", []string{"THROTTLE.ALL"}, ""},
		{"ALL only an option", []string{"THROTTLE.ALL", "QUANTITY", "1", "MS", "MS"}, ""},
		{"ALL incomplete", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "SW", "n4", "10"}, ""},
		{"ALL unknown rule", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "XX", "n4", "10", "1h"}, ""},
		{"ALL duplicate keys", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "SW", "n3", "5", "1h"}, ""},
		{"ALL zero rate", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "CL", "n4", "1", "0", "60"}, ""},
		{"ALL CL rate under 1ns", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "CL", "n4", "1", "10000000000", "1"}, ""},
		{"ALL CL not an integer", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "CL", "n4", "x", "2", "3"}, ""},
		{"ALL negative quantity", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "QUANTITY", "-1"}, ""},
		{"ALL bad window", []string{"THROTTLE.ALL", "SW", "n3", "10", "-1h"}, ""},
		{"ALL one rule on SW", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "CL", "swkey", "15", "30", "60"}, ""},
		// A key of another family judged before a zero rate wins.
		{"ALL zero rate on SW", []string{"THROTTLE.ALL", "CL", "swkey", "1", "10000000000", "1"}, ""},
		{"ALL SW before zero rate", []string{"THROTTLE.ALL", "FW", "swkey", "10", "1h", "CL", "n1", "1", "10000000000", "1"}, ""},
		{"ALL zero rate on string", []string{"THROTTLE.ALL", "CL", "foreign", "1", "10000000000", "1"}, "swkey"},
		{"ALL one rule on string", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "SW", "foreign", "10", "1h"}, "fwkey"},
		{"ALL one rule on hash", []string{"THROTTLE.ALL", "SWC", "fhash", "10", "1h", "FW", "n3", "10", "1h"}, "swkey"},

		// ErrExpire on an existing CL key deletes it, as redis-cell does.
		{"CL negative quantity on CL", []string{"CL.THROTTLE", "clkey", "15", "30", "60", "-100"}, ""},
		{"CL key deleted", []string{"EXISTS", "clkey"}, ""},
	}
	for _, tt := range tests {
		ref := tt.args
		if tt.like != "" {
			ref = slices.Clone(tt.args)
			for i, a := range ref {
				if a == "foreign" || a == "fhash" {
					ref[i] = tt.like
				}
			}
		}
		want := memory.do(t, ref...)
		got := shared.do(t, tt.args...)
		if got != want {
			t.Errorf("%s: %q\nshared: %q\nmemory: %q", tt.name, tt.args, got, want)
		}
		if !strings.HasPrefix(want, "-") && tt.args[0] != "EXISTS" {
			t.Errorf("%s: %q = %q, want an error", tt.name, tt.args, want)
		}
	}

	// A THROTTLE.ALL refused by its rule on "full" writes none of its keys.
	refused := []string{"THROTTLE.ALL", "SW", "n5", "10", "1h", "FW", "full", "1", "1h", "CL", "n6", "15", "30", "60"}
	for name, c := range map[string]*respConn{"memory": memory, "shared": shared} {
		if r := c.do(t, refused...); !strings.HasPrefix(r, "*5\r\n:1\r\n") {
			t.Errorf("%s: THROTTLE.ALL with a rule at its limit = %q, want refused", name, r)
		}
		if r := c.do(t, "EXISTS", "n1", "n2", "n3", "n4", "n5", "n6"); r != ":0\r\n" {
			t.Errorf("%s: the refused calls created keys: EXISTS = %q", name, r)
		}
	}
	keys, err := storeClient.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{"t:fhash", "t:foreign", "t:full", "t:fwkey", "t:swkey"}; !slices.Equal(keys, want) {
		t.Errorf("the store holds %q after the refused calls, want only %q", keys, want)
	}
	if v, _ := storeClient.Get(ctx, "t:foreign").Result(); v != "hello" {
		t.Errorf("another application's string is now %q, want it left alone", v)
	}
	if v, _ := storeClient.HGet(ctx, "t:fhash", "f").Result(); v != "v" {
		t.Errorf("another application's hash field is now %q, want it left alone", v)
	}
}
