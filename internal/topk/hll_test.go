package topk

import (
	"math"
	"testing"
)

// splitmix64 is a fixed, well-mixed hash of i, so that the estimates below
// are the same on every run.
func splitmix64(i uint64) uint64 {
	i += 0x9e3779b97f4a7c15
	i = (i ^ i>>30) * 0xbf58476d1ce4e5b9
	i = (i ^ i>>27) * 0x94d049bb133111eb
	return i ^ i>>31
}

// TestHLLStandardError: over 200 sketches of n distinct hashes each, the
// estimate's mean is within a few tenths of a percent of n and its root
// mean square error within the stated 1.6% (with room for the sampling),
// for n on both sides of 2.5 keys a register (10,240), where the raw
// estimate hands over from linear counting; and a few keys are counted
// exactly.
func TestHLLStandardError(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 10} {
		var x hll
		for i := range n {
			x.add(splitmix64(i))
		}
		if got := x.estimate(); got != n {
			t.Errorf("%d distinct: estimate %d", n, got)
		}
	}
	const trials = 200
	for _, n := range []uint64{3_000, 8_000, 10_500, 11_000, 12_000, 20_000, 100_000} {
		var sum, squares float64
		for trial := range uint64(trials) {
			var x hll
			for i := range n {
				x.add(splitmix64(trial<<32 | i))
			}
			e := (float64(x.estimate()) - float64(n)) / float64(n)
			sum += e
			squares += e * e
		}
		mean, rmse := sum/trials, math.Sqrt(squares/trials)
		if math.Abs(mean) > 0.005 || rmse > 0.018 {
			t.Errorf("%d distinct: mean error %+.2f%%, root mean square %.2f%%", n, 100*mean, 100*rmse)
		}
	}
}
