package commands

import (
	"math"
	"testing"
)

func TestParseCellInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"15", 15, true}, {"+15", 15, true}, {"015", 15, true}, {"-0", 0, true},
		{"-15", -15, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"", 0, false}, {"+", 0, false}, {"-", 0, false}, {"+-1", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"1.5", 0, false}, {"0x10", 0, false},
		{"1e3", 0, false}, {"١", 0, false}, // non-ASCII digits are not digits
	}
	for _, c := range cases {
		got, ok := parseCellInt([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseCellInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"10", 10, true}, {"-10", -10, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"18446744073709551616", 0, false},
		{"010", 0, false}, {"+1", 0, false}, {"-0", 0, false}, {"", 0, false}, {"-", 0, false},
		{"1", 1, true}, {"-1", -1, true}, {"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false}, {"00", 0, false}, {"01", 0, false},
		{"1 ", 0, false}, {" 1", 0, false}, {"1-", 0, false}, {"0x1", 0, false},
		{"000000000000000000001", 0, false}, // 21 bytes: too long, whatever they hold
	}
	for _, c := range cases {
		got, ok := ParseInt([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
