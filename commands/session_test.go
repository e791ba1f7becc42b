package commands

import (
	"strings"
	"testing"
	"time"
)

// protoWriter is a respWriter that follows SwitchProto, as the server's does.
type protoWriter struct{ *respWriter }

func (w protoWriter) SwitchProto(proto int) { w.proto = proto }

func TestSessionEffects(t *testing.T) {
	h := newHarness(t)
	users, err := LoadUsers("", "secret")
	if err != nil {
		t.Fatal(err)
	}
	h.withOpts(Options{Users: users})
	s := h.cmds.NewSession(7, "127.0.0.1:1", "127.0.0.1:2", h.clock.Now())
	if !s.AuthRequired() || s.Proto() != 2 {
		t.Fatalf("new session: AuthRequired %v Proto %d", s.AuthRequired(), s.Proto())
	}
	steps := []struct {
		args     string
		want     Effect
		wantInfo func(ClientInfo) bool
	}{
		{"AUTH secret", EffectAuth | EffectInfo, func(ci ClientInfo) bool { return ci.Authenticated }},
		{"PING", EffectInfo, func(ci ClientInfo) bool { return ci.LastCommand == "ping" }},
		{"PING", 0, nil}, // the same command again: nothing to publish
		{"HELLO 3", EffectProto | EffectInfo, func(ci ClientInfo) bool { return ci.Proto == 3 }},
		{"CLIENT SETNAME app", EffectInfo, func(ci ClientInfo) bool { return ci.Name == "app" }},
		{"MULTI", EffectInfo, func(ci ClientInfo) bool { return ci.InMulti }},
		{"DISCARD", EffectInfo, func(ci ClientInfo) bool { return !ci.InMulti }},
		{"RESET", EffectProto | EffectAuth | EffectInfo, func(ci ClientInfo) bool { return ci.Proto == 2 && !ci.Authenticated }},
		{"QUIT", EffectQuit | EffectInfo, nil},
	}
	for _, st := range steps {
		w := protoWriter{&respWriter{proto: s.Proto()}}
		var args [][]byte
		for _, a := range strings.Fields(st.args) {
			args = append(args, []byte(a))
		}
		if got := s.Dispatch(w, args); got != st.want {
			t.Errorf("%s: effects %b, want %b (reply %q)", st.args, got, st.want, w.buf.String())
		}
		if st.wantInfo != nil && !st.wantInfo(s.Info()) {
			t.Errorf("%s: info %+v", st.args, s.Info())
		}
		if st.args == "HELLO 3" && !strings.HasPrefix(w.buf.String(), "%7\r\n") {
			t.Errorf("HELLO 3 answered %q, want a RESP3 map", w.buf.String())
		}
	}
}

func TestSessionOverlaps(t *testing.T) {
	h := newHarness(t)
	s := h.cmds.NewSession(1, "a", "b", time.Unix(0, 0))
	for _, c := range []struct {
		args string
		want bool
	}{
		{"CL.THROTTLE k 1 1 1", true}, {"cl.throttle k 1 1 1", true}, {"SW.THROTTLE k 1 1", true},
		{"SWC.THROTTLE k 1 1", true}, {"FW.THROTTLE k 1 1", true}, {"THROTTLE.ALL 1 k gcra 1 1 1", true},
		{"PING", false}, {"CLIENT SETNAME x", false}, {"NOSUCH", false},
	} {
		var args [][]byte
		for _, a := range strings.Fields(c.args) {
			args = append(args, []byte(a))
		}
		if got := s.Overlaps(args); got != c.want {
			t.Errorf("Overlaps(%s) = %v, want %v", c.args, got, c.want)
		}
	}
	s.Dispatch(&respWriter{proto: 2}, [][]byte{[]byte("MULTI")})
	if s.Overlaps([][]byte{[]byte("CL.THROTTLE"), []byte("k"), []byte("1"), []byte("1"), []byte("1")}) {
		t.Error("a command queued in MULTI overlaps")
	}
}
