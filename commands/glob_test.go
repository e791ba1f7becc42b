package commands

import "testing"

// TestGlobMatch follows Redis's stringmatchlen, including its edge cases.
func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "anything", true},
		{"*", "", false}, // Redis: an empty string matches no pattern
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hallo", true}, // reversed ranges work
		{"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{"user:*", "user:42", true},
		{"user:*", "usr:42", false},
		{"*:42", "user:42", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"abc*", "abc", true},
		{"[abc", "a", true}, // unterminated class: Redis reads to the end
		{"[", "a", false},
		{"a[", "ab", false},
		{"*[]]", "x]", false}, // Redis: "[]" is an empty class
		{"CL", "cl", false},   // case-sensitive
	}
	for _, c := range cases {
		if got := globMatch([]byte(c.pattern), []byte(c.s)); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// TestGlobMatchHostile: a pattern of many stars against a long string ends
// quickly (Redis's skip-longer-matches rule).
func TestGlobMatchHostile(t *testing.T) {
	p := []byte("a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b")
	s := make([]byte, 5000)
	for i := range s {
		s[i] = 'a'
	}
	if globMatch(p, s) {
		t.Error("matched a string with no b")
	}
}

func FuzzGlobMatch(f *testing.F) {
	f.Add([]byte("h[a-z]*\\?"), []byte("hello?"))
	f.Add([]byte("[^"), []byte("x"))
	f.Fuzz(func(t *testing.T, p, s []byte) {
		globMatch(p, s) // must not panic or hang
	})
}
