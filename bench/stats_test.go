package main

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, nan, 30}, 20},
		{[]float64{250000, 1, 260000, 255000, 1e9}, 255000},
		{nil, nan},
		{[]float64{nan, nan}, nan},
	} {
		got := median(tc.in)
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	in := []float64{3, 1, 2}
	median(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("median reordered its argument: %v", in)
	}
}

func TestMedianFiguresTakesEachFigureAlone(t *testing.T) {
	got := medianFigures([]figures{
		{rps: 100, p50: 9, p99: 1},
		{rps: 300, p50: 1, p99: 3},
		{rps: 200, p50: 5, p99: 2},
	})
	if want := (figures{rps: 200, p50: 5, p99: 2}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
