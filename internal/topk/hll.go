package topk

import (
	"math"
	"math/bits"
)

// hllBits is the HyperLogLog's precision: 2^12 registers of a byte, whose
// estimate has a standard error of 1.04/sqrt(4096), 1.6%.
const hllBits = 12

// hll estimates how many distinct hashes it was given (Flajolet et al.,
// 2007, with linear counting for small counts). Not safe for concurrent use.
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

// estimate returns the number of distinct hashes added.
func (x *hll) estimate() uint64 {
	const m = 1 << hllBits
	sum, zeros := 0.0, 0
	for _, r := range x.reg {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(float64(m)/float64(zeros))
	}
	return uint64(e + 0.5)
}
