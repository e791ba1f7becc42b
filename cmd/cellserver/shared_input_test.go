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

// wrongTypeReply is the reply to a command on a key holding another kind
// of value, in memory and in the store alike.
const wrongTypeReply = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"

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
		// foreign: the key holds another application's value, which only
		// the store has; memory's reply to a key of another kind is the
		// reference.
		foreign bool
	}{
		{"CL no args", []string{"CL.THROTTLE"}, false},
		{"CL too few", []string{"CL.THROTTLE", "n1", "1", "2"}, false},
		{"CL too many", []string{"CL.THROTTLE", "n1", "1", "2", "3", "4", "5"}, false},
		{"CL burst not an integer", []string{"CL.THROTTLE", "n1", "x", "2", "3"}, false},
		{"CL period not an integer", []string{"CL.THROTTLE", "n1", "1", "2", "3.5"}, false},
		{"CL quantity not an integer", []string{"CL.THROTTLE", "n1", "1", "2", "3", "q"}, false},
		{"CL zero count", []string{"CL.THROTTLE", "n1", "15", "0", "60"}, false},
		{"CL zero period", []string{"CL.THROTTLE", "n1", "15", "30", "0"}, false},
		{"CL rate under 1ns", []string{"CL.THROTTLE", "n1", "1", "10000000000", "1"}, false},
		{"CL negative quantity new key", []string{"CL.THROTTLE", "n1", "15", "30", "60", "-100"}, false},
		{"CL on SW", []string{"CL.THROTTLE", "swkey", "15", "30", "60"}, false},
		{"CL on FW", []string{"CL.THROTTLE", "fwkey", "15", "30", "60"}, false},
		{"CL on string", []string{"CL.THROTTLE", "foreign", "15", "30", "60"}, true},
		{"CL on hash", []string{"CL.THROTTLE", "fhash", "15", "30", "60"}, true},

		{"SW too few", []string{"SW.THROTTLE", "n2", "10"}, false},
		{"SW limit not an integer", []string{"SW.THROTTLE", "n2", "x", "1h"}, false},
		{"SW zero limit", []string{"SW.THROTTLE", "n2", "0", "1h"}, false},
		{"SW zero window", []string{"SW.THROTTLE", "n2", "10", "0"}, false},
		{"SW negative quantity", []string{"SW.THROTTLE", "n2", "10", "1h", "-1"}, false},
		{"SW unknown option", []string{"SW.THROTTLE", "n2", "10", "1h", "1", "BOGUS"}, false},
		{"SWC bad window", []string{"SWC.THROTTLE", "n2", "10", "1y"}, false},
		{"SWC negative quantity", []string{"SWC.THROTTLE", "n2", "10", "1h", "-5"}, false},
		{"SWC on SW", []string{"SWC.THROTTLE", "swkey", "10", "1h"}, false},
		{"FW quantity not an integer", []string{"FW.THROTTLE", "n2", "10", "1h", "x"}, false},
		{"FW negative limit", []string{"FW.THROTTLE", "n2", "-10", "1h"}, false},
		{"FW on CL", []string{"FW.THROTTLE", "clkey", "10", "1h"}, false},
		{"SW on FW", []string{"SW.THROTTLE", "fwkey", "10", "1h"}, false},
		{"FW on string", []string{"FW.THROTTLE", "foreign", "10", "1h"}, true},
		{"SW on hash", []string{"SW.THROTTLE", "fhash", "10", "1h"}, true},

		{"ALL no args", []string{"THROTTLE.ALL"}, false},
		{"ALL only an option", []string{"THROTTLE.ALL", "QUANTITY", "1", "MS", "MS"}, false},
		{"ALL incomplete", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "SW", "n4", "10"}, false},
		{"ALL unknown rule", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "XX", "n4", "10", "1h"}, false},
		{"ALL duplicate keys", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "SW", "n3", "5", "1h"}, false},
		{"ALL zero rate", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "CL", "n4", "1", "0", "60"}, false},
		{"ALL CL rate under 1ns", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "CL", "n4", "1", "10000000000", "1"}, false},
		{"ALL CL not an integer", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "CL", "n4", "x", "2", "3"}, false},
		{"ALL negative quantity", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "QUANTITY", "-1"}, false},
		{"ALL bad window", []string{"THROTTLE.ALL", "SW", "n3", "10", "-1h"}, false},
		{"ALL one rule on SW", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "CL", "swkey", "15", "30", "60"}, false},
		{"ALL one rule on string", []string{"THROTTLE.ALL", "FW", "n3", "10", "1h", "SW", "foreign", "10", "1h"}, true},
		{"ALL one rule on hash", []string{"THROTTLE.ALL", "SWC", "fhash", "10", "1h", "FW", "n3", "10", "1h"}, true},

		// ErrExpire on an existing CL key deletes it, as redis-cell does.
		{"CL negative quantity on CL", []string{"CL.THROTTLE", "clkey", "15", "30", "60", "-100"}, false},
		{"CL key deleted", []string{"EXISTS", "clkey"}, false},
	}
	for _, tt := range tests {
		want := wrongTypeReply
		if !tt.foreign {
			want = memory.do(t, tt.args...)
		}
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
