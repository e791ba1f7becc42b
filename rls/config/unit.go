package config

import (
	"strings"
	"time"
)

// Unit is a rate limit's unit, numbered as the RLS v3 proto numbers
// RateLimitResponse.RateLimit.Unit, so that a proto value converts with
// Unit(u).
type Unit int

// The units. UnitUnknown is no unit: a configuration never holds it.
const (
	UnitUnknown Unit = 0
	UnitSecond  Unit = 1
	UnitMinute  Unit = 2
	UnitHour    Unit = 3
	UnitDay     Unit = 4
	UnitMonth   Unit = 5
	UnitYear    Unit = 6
	UnitWeek    Unit = 7
)

// unitNames are the units by their proto names, which configuration files
// spell in any case ("second", "SECOND").
var unitNames = map[string]Unit{
	"SECOND": UnitSecond,
	"MINUTE": UnitMinute,
	"HOUR":   UnitHour,
	"DAY":    UnitDay,
	"MONTH":  UnitMonth,
	"YEAR":   UnitYear,
	"WEEK":   UnitWeek,
}

// parseUnit reads a unit as envoyproxy/ratelimit does: the proto name in
// any case; UNKNOWN is not a unit.
func parseUnit(s string) (Unit, bool) {
	u, ok := unitNames[strings.ToUpper(s)]
	return u, ok
}

// Duration is the unit's length, as envoyproxy/ratelimit's UnitToDivider
// has it: a month is 30 days and a year 365 days, never calendar ones. It
// is 0 for UnitUnknown and any other value.
func (u Unit) Duration() time.Duration {
	const day = 24 * time.Hour
	switch u {
	case UnitSecond:
		return time.Second
	case UnitMinute:
		return time.Minute
	case UnitHour:
		return time.Hour
	case UnitDay:
		return day
	case UnitWeek:
		return 7 * day
	case UnitMonth:
		return 30 * day
	case UnitYear:
		return 365 * day
	}
	return 0
}

// String is the unit's proto name ("SECOND").
func (u Unit) String() string {
	for name, v := range unitNames {
		if v == u {
			return name
		}
	}
	return "UNKNOWN"
}

// Algorithm is the engine family a limit runs on.
type Algorithm int

// The algorithms. FixedWindow is the default, as envoyproxy/ratelimit
// counts in fixed windows.
const (
	FixedWindow    Algorithm = iota // FW: a counter per aligned window
	SlidingWindow                   // SW: a log of request times
	SlidingCounter                  // SWC: two windows' counters, weighted
	GCRA                            // CL: redis-cell's generic cell rate algorithm
)

// algorithmNames are the algorithms as a file's `algorithm:` names them.
var algorithmNames = map[string]Algorithm{
	"fixed_window":    FixedWindow,
	"sliding_window":  SlidingWindow,
	"sliding_counter": SlidingCounter,
	"gcra":            GCRA,
}

// String is the algorithm's name in a configuration file ("fixed_window").
func (a Algorithm) String() string {
	for name, v := range algorithmNames {
		if v == a {
			return name
		}
	}
	return "unknown"
}
