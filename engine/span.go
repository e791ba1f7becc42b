package engine

import (
	"math"
	"math/bits"
)

// span is a signed duration, or an instant as the duration since the Unix
// epoch, held as whole seconds plus nanoseconds of the same sign. It mirrors
// the duration type redis-cell computes with, so that sums which overflow
// 64-bit nanoseconds and the float conversions come out as redis-cell's do.
type span struct {
	sec  int64
	nsec int32 // same sign as sec, |nsec| < 1e9
}

const nanosPerSecond = 1_000_000_000

// spanOfNanos returns the span of n nanoseconds.
func spanOfNanos(n int64) span {
	return span{sec: n / nanosPerSecond, nsec: int32(n % nanosPerSecond)}
}

// spanOfUnixNanos returns the instant n nanoseconds after the Unix epoch,
// for n read as an unsigned count (redis-cell stores its TAT as u64).
func spanOfUnixNanos(n uint64) span {
	return span{sec: int64(n / nanosPerSecond), nsec: int32(n % nanosPerSecond)}
}

// normalized restores the invariants after an addition.
func normalized(sec int64, nsec int32) span {
	if nsec >= nanosPerSecond {
		sec++
		nsec -= nanosPerSecond
	} else if nsec <= -nanosPerSecond {
		sec--
		nsec += nanosPerSecond
	}
	if sec > 0 && nsec < 0 {
		sec--
		nsec += nanosPerSecond
	} else if sec < 0 && nsec > 0 {
		sec++
		nsec -= nanosPerSecond
	}
	return span{sec: sec, nsec: nsec}
}

func (a span) add(b span) span { return normalized(a.sec+b.sec, a.nsec+b.nsec) }
func (a span) neg() span       { return span{sec: -a.sec, nsec: -a.nsec} }
func (a span) sub(b span) span { return a.add(b.neg()) }

// less reports whether a < b.
func (a span) less(b span) bool {
	return a.sec < b.sec || (a.sec == b.sec && a.nsec < b.nsec)
}

// wholeMicros is the span in whole microseconds, truncated toward zero.
func (a span) wholeMicros() int64 { return a.sec*1_000_000 + int64(a.nsec/1_000) }

// wholeMillis is the span in whole milliseconds, truncated toward zero.
func (a span) wholeMillis() int64 { return a.sec*1_000 + int64(a.nsec/1_000_000) }

// subsecMillis is the millisecond part of the fraction of a second, signed.
func (a span) subsecMillis() int32 { return a.nsec / 1_000_000 }

// secondsF64 is the span in seconds as a float, computed as redis-cell does.
func (a span) secondsF64() float64 {
	return float64(a.sec) + float64(a.nsec)/nanosPerSecond
}

// unixNanosU64 is the instant as nanoseconds since the epoch in unsigned
// 64-bit arithmetic that wraps, as redis-cell computes the value it stores.
func (a span) unixNanosU64() uint64 {
	return uint64(a.sec)*nanosPerSecond + uint64(int64(a.nsec))
}

// nanosSaturated is the span in nanoseconds, saturated to int64.
func (a span) nanosSaturated() int64 {
	const limit = math.MaxInt64 / nanosPerSecond // 9223372036
	switch {
	case a.sec > limit || (a.sec == limit && a.nsec > math.MaxInt64%nanosPerSecond):
		return math.MaxInt64
	case a.sec < -limit || (a.sec == -limit && a.nsec < math.MinInt64%nanosPerSecond):
		return math.MinInt64
	}
	return a.sec*nanosPerSecond + int64(a.nsec)
}

// roundUpSeconds converts a span to whole seconds the way redis-cell reports
// retry_after and reset_after: truncated, plus one when the sub-second part
// has a positive millisecond.
func (a span) roundUpSeconds() int64 {
	s := saturatingInt64(a.secondsF64())
	if a.subsecMillis() > 0 {
		s++
	}
	return s
}

// saturatingInt64 converts f to int64 as Rust's `as` does: truncation toward
// zero, saturation at the bounds, and NaN to zero.
func saturatingInt64(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= 0x1p63:
		return math.MaxInt64
	case f <= -0x1p63:
		return math.MinInt64
	}
	return int64(f)
}

// secondsAsNanosF64 returns sec*1e9 converted to float64 with a single
// rounding, as a 128-bit integer converts: exact for any int64 sec.
func secondsAsNanosF64(sec int64) float64 {
	mag := uint64(sec)
	if sec < 0 {
		mag = -mag
	}
	hi, lo := bits.Mul64(mag, nanosPerSecond)
	f := uint128ToF64(hi, lo)
	if sec < 0 {
		return -f
	}
	return f
}

// uint128ToF64 converts hi:lo to the nearest float64, ties to even.
func uint128ToF64(hi, lo uint64) float64 {
	if hi == 0 {
		return float64(lo)
	}
	shift := 64 - bits.LeadingZeros64(hi)
	m := hi<<(64-shift) | lo>>shift
	if lo&(1<<shift-1) != 0 {
		m |= 1 // sticky bit: the dropped bits were not all zero
	}
	return math.Ldexp(float64(m), shift)
}
