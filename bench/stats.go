package main

import (
	"math"
	"slices"
)

// median is the middle of the values that are not NaN (the mean of the two
// middle ones for an even count), or NaN when there are none.
func median(values []float64) float64 {
	v := make([]float64, 0, len(values))
	for _, x := range values {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return (v[m-1] + v[m]) / 2
}

// medianFigures is the median of each figure over runs, taken separately.
func medianFigures(runs []figures) figures {
	var rps, p50, p99, perTrip, cpu, storeCPU []float64
	for _, r := range runs {
		rps, p50, p99 = append(rps, r.rps), append(p50, r.p50), append(p99, r.p99)
		perTrip = append(perTrip, r.perTrip)
		cpu, storeCPU = append(cpu, r.cpu), append(storeCPU, r.storeCPU)
	}
	return figures{rps: median(rps), p50: median(p50), p99: median(p99), perTrip: median(perTrip),
		cpu: median(cpu), storeCPU: median(storeCPU)}
}
