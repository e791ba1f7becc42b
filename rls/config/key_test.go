package config

import (
	"strings"
	"testing"
)

// keyInput is what a state key stands for.
type keyInput struct {
	algo     Algorithm
	domain   string
	entries  []Entry
	patterns []string
}

// same reports whether two inputs stand for the same state: the same
// algorithm, domain and entries, a shared pattern standing for itself.
func (a keyInput) same(b keyInput) bool {
	if a.algo != b.algo || a.domain != b.domain || len(a.entries) != len(b.entries) {
		return false
	}
	for i := range a.entries {
		if a.entries[i].Key != b.entries[i].Key || a.value(i) != b.value(i) || a.shared(i) != b.shared(i) {
			return false
		}
	}
	return true
}

func (a keyInput) shared(i int) bool { return a.patterns != nil && a.patterns[i] != "" }

func (a keyInput) value(i int) string {
	if a.shared(i) {
		return a.patterns[i]
	}
	return a.entries[i].Value
}

// decodeKeyInput splits fuzz bytes into an input, with separators and
// escapes likely in the parts.
func decodeKeyInput(data []byte) keyInput {
	parts := strings.Split(string(data), "\x00")
	in := keyInput{algo: Algorithm(len(parts) % 4), domain: parts[0]}
	for i := 1; i+1 < len(parts); i += 2 {
		in.entries = append(in.entries, Entry{parts[i], parts[i+1]})
		if strings.HasSuffix(parts[i+1], "*") && len(parts[i+1])%2 == 0 {
			if in.patterns == nil {
				in.patterns = make([]string, (len(parts)-1)/2)
			}
			in.patterns[len(in.entries)-1] = parts[i+1]
		}
	}
	if in.patterns != nil {
		in.patterns = in.patterns[:len(in.entries)]
	}
	return in
}

func FuzzStateKeyUnambiguous(f *testing.F) {
	seeds := [][2]string{
		{"d\x00k\x00v", "d\x00k\x00v\x00x\x00"},
		{"d|k=v", "d\x00k\x00v"},
		{"d\x00k=v\x00", "d\x00k\x00=v"},
		{"d\x00a\x00b|c=d", "d\x00a\x00b\x00c\x00d"},
		{"d\x00f\x00x/*", "d\x00f\x00x/%2A"},
		{"d\x00f\x00ab*", "d\x00f\x00ab%2A"},
		{"a:b\x00k\x00v", "a\x00b:k\x00v"},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		x, y := decodeKeyInput(a), decodeKeyInput(b)
		kx := stateKey(x.algo, x.domain, x.entries, x.patterns)
		ky := stateKey(y.algo, y.domain, y.entries, y.patterns)
		if (kx == ky) != x.same(y) {
			t.Fatalf("inputs %+v and %+v: keys %q and %q", x, y, kx, ky)
		}
		if !strings.HasPrefix(kx, "rls:") {
			t.Fatalf("key %q lacks the prefix", kx)
		}
		// (An empty domain, which neither a configuration nor a request
		// may have, makes an empty tag: Redis hashes the whole key.)
		if tag := hashTag(kx); x.domain != "" && y.domain != "" && (tag == hashTag(ky)) != (x.domain == y.domain) {
			t.Fatalf("domains %q and %q: hash tags %q and %q", x.domain, y.domain, tag, hashTag(ky))
		}
	})
}

// TestStateKeyUnambiguous runs the fuzz property over every pair of inputs
// built from the characters the key escapes.
func TestStateKeyUnambiguous(t *testing.T) {
	atoms := []string{"", "a", "|", "=", "*", "%", "%7C", "a*", "|=", ":"}
	var inputs []keyInput
	for _, d := range atoms {
		for _, k := range atoms {
			for _, v := range atoms {
				inputs = append(inputs,
					keyInput{domain: d, entries: []Entry{{k, v}}},
					keyInput{domain: d, entries: []Entry{{k, v}, {v, k}}},
					keyInput{algo: GCRA, domain: d, entries: []Entry{{k, v}}})
				if strings.HasSuffix(v, "*") {
					inputs = append(inputs, keyInput{domain: d, entries: []Entry{{k, v}}, patterns: []string{v}})
				}
			}
		}
	}
	seen := map[string]keyInput{}
	tags := map[string]string{} // hash tag -> domain
	for _, in := range inputs {
		k := stateKey(in.algo, in.domain, in.entries, in.patterns)
		if prev, ok := seen[k]; ok && !prev.same(in) {
			t.Fatalf("inputs %+v and %+v share key %q", prev, in, k)
		}
		seen[k] = in
		tag := hashTag(k)
		if d, ok := tags[tag]; ok && d != in.domain {
			t.Fatalf("domains %q and %q share hash tag %q", d, in.domain, tag)
		}
		tags[tag] = in.domain
	}
}

// hashTag is the part of key that Redis Cluster hashes: the text between
// the first '{' and the first '}' after it when not empty, else the key.
func hashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			return key[open+1 : open+1+n]
		}
	}
	return key
}

// TestStateKeyHashTag: a key's hash tag is its domain, escaped; keys of
// one domain share it whatever their family and entries.
func TestStateKeyHashTag(t *testing.T) {
	for _, c := range []struct{ domain, tag string }{
		{"edge", "edge"},
		{"a}b", "a%7Db"},
		{"{x}", "%7Bx%7D"},
		{"p|q=r*", "p%7Cq%3Dr%2A"},
	} {
		for _, k := range []string{
			stateKey(FixedWindow, c.domain, []Entry{{"k", "v"}}, nil),
			stateKey(GCRA, c.domain, []Entry{{"{k}", "}v{"}, {"u", "w"}}, nil),
			stateKey(SlidingWindow, c.domain, []Entry{{"f", "x*"}}, []string{"x*"}),
		} {
			if got := hashTag(k); got != c.tag {
				t.Errorf("key %q: hash tag %q, want %q", k, got, c.tag)
			}
		}
	}
}

// TestAlgorithmFamily: an algorithm's state key and its engine rule name
// one family, the engine's.
func TestAlgorithmFamily(t *testing.T) {
	for a, want := range map[Algorithm]string{FixedWindow: "fw", SlidingWindow: "sw", SlidingCounter: "swc", GCRA: "cl"} {
		l := &Limit{Algorithm: a, Unit: UnitSecond, UnitMultiplier: 1, RequestsPerUnit: 1}
		if f := l.Rule([]byte("k")).Family; f != a.Family() || f.Name() != want {
			t.Errorf("%v: rule family %v, want %s", a, f, want)
		}
		if k := stateKey(a, "d", []Entry{{"k", "v"}}, nil); !strings.HasPrefix(k, "rls:"+want+":") {
			t.Errorf("%v: state key %q, want family %s", a, k, want)
		}
	}
}
