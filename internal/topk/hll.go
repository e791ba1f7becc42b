package topk

import (
	"math"
	"math/bits"
)

// hllBits is the HyperLogLog's precision: 2^12 registers of a byte, whose
// estimate has a standard error of 1.04/sqrt(4096), 1.6%.
const hllBits = 12

// hll estimates how many distinct hashes it was given (Flajolet et al.,
// 2007's registers, read by Ertl's estimator). Not safe for concurrent use.
type hll struct {
	reg [1 << hllBits]uint8
}

// add counts hash h.
func (x *hll) add(h uint64) {
	i := h >> (64 - hllBits)
	rank := uint8(bits.LeadingZeros64(h<<hllBits|1<<(hllBits-1))) + 1
	if rank > x.reg[i] {
		x.reg[i] = rank
	}
}

func (x *hll) reset() { clear(x.reg[:]) }

// union sets x to the union of x and y.
func (x *hll) union(y *hll) {
	for i, r := range y.reg {
		x.reg[i] = max(x.reg[i], r)
	}
}

// estimate returns the number of distinct hashes added, by Ertl's improved
// estimator ("New cardinality estimation algorithms for HyperLogLog
// sketches", 2017, algorithm 6): the raw estimate of Flajolet et al. with
// linear counting below 2.5 keys a register is biased by about +2% just
// above that switch (10,240 keys here), where this one stays within the
// standard error over the whole range, small counts included.
func (x *hll) estimate() uint64 {
	const m = 1 << hllBits
	const q = 64 - hllBits // a register holds 1 to q+1
	var hist [q + 2]int
	for _, r := range x.reg {
		hist[r]++
	}
	z := m * hllTau(1-float64(hist[q+1])/m)
	for k := q; k >= 1; k-- {
		z = 0.5 * (z + float64(hist[k]))
	}
	z += m * hllSigma(float64(hist[0])/m)
	return uint64(m*m/(2*math.Ln2)/z + 0.5)
}

// hllSigma is Ertl's sigma(x) = x + sum_k x^(2^k) 2^(k-1), for the empty
// registers' share x; +Inf at 1 (no hash added), which estimate turns to 0.
func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		next := z + x*y
		y *= 2
		if next == z {
			return z
		}
		z = next
	}
}

// hllTau is Ertl's tau(x), for the share x of registers below the largest
// rank.
func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		y *= 0.5
		next := z - (1-x)*(1-x)*y
		if next == z {
			return z / 3
		}
		z = next
	}
}
