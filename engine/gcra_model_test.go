package engine

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// modelGCRA is redis-cell's rate_limit written again with arbitrary-precision
// integers for every instant and duration, so that the span arithmetic in
// gcra is checked against plain integer maths.
func modelGCRA(now int64, st gcraState, q GCRAQuota, quantity int64) (gcraStep, error) {
	ei := emissionInterval(q.Count, q.Period)
	if ei == 0 {
		return gcraStep{}, ErrZeroRate
	}
	limit := q.MaxBurst + 1
	dvt := big.NewInt(ei * limit) // i64 products wrap, as in redis-cell
	inc := big.NewInt(ei * quantity)
	nowB := big.NewInt(now)
	tat := new(big.Int).Set(nowB)
	if st.ok {
		tat.SetUint64(st.tat)
	}
	base := tat
	if tat.Cmp(nowB) < 0 {
		base = nowB
	}
	newTat := new(big.Int).Add(base, inc)
	diff := new(big.Int).Sub(nowB, new(big.Int).Sub(newTat, dvt))
	res := Result{Limit: limit, RetryAfter: -1}
	var ttl *big.Int
	step := gcraStep{retry: -1}
	if diff.Sign() < 0 {
		res.Limited = true
		if inc.Cmp(dvt) <= 0 {
			res.RetryAfter = modelRoundUp(new(big.Int).Neg(diff))
			step.retry = saturate(new(big.Int).Neg(diff))
		}
		ttl = new(big.Int).Sub(tat, nowB)
	} else {
		ttl = new(big.Int).Sub(newTat, nowB)
		msB := new(big.Int).Quo(ttl, big.NewInt(1_000_000))
		if msB.Cmp(big.NewInt(-1)) < 0 {
			return gcraStep{}, ErrExpire
		}
		mod := new(big.Int).Lsh(big.NewInt(1), 64)
		u := new(big.Int).Mod(newTat, mod)
		step.store, step.tat, step.ttlMillis = true, u.Uint64(), msB.Int64()
	}
	next := new(big.Int).Sub(dvt, ttl)
	if next.Cmp(big.NewInt(-ei)) > 0 || (ei == math.MinInt64 && next.Cmp(new(big.Int).Neg(big.NewInt(ei))) > 0) {
		nu := new(big.Int).Quo(next, big.NewInt(1000))
		eu := new(big.Int).Quo(big.NewInt(ei), big.NewInt(1000))
		nf, _ := new(big.Float).SetInt(nu).Float64()
		ef, _ := new(big.Float).SetInt(eu).Float64()
		res.Remaining = saturatingInt64(nf / ef)
	}
	res.ResetAfter = modelRoundUp(ttl)
	step.reset = saturate(ttl)
	step.result = res
	return step, nil
}

// saturate clamps d to int64.
func saturate(d *big.Int) int64 {
	switch {
	case d.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case d.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return d.Int64()
}

// modelRoundUp is seconds as f64 (whole seconds + nanos/1e9), truncated,
// plus one for a positive millisecond part.
func modelRoundUp(d *big.Int) int64 {
	sec, nsec := new(big.Int).QuoRem(d, big.NewInt(nanosPerSecond), new(big.Int))
	s := saturatingInt64(float64(sec.Int64()) + float64(nsec.Int64())/nanosPerSecond)
	if nsec.Int64()/1_000_000 > 0 {
		s++
	}
	return s
}

// TestGCRAMatchesModel drives gcra and the model with random and extreme
// arguments and states and requires identical outcomes.
func TestGCRAMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	extremes := []int64{0, 1, -1, 2, 15, 30, 60, 1000, 86400, 1 << 31, 1 << 53,
		math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1, -86400}
	pick := func() int64 {
		switch rng.Intn(3) {
		case 0:
			return extremes[rng.Intn(len(extremes))]
		case 1:
			return rng.Int63n(2000) - 100
		}
		return rng.Int63() - rng.Int63()
	}
	for i := 0; i < 200_000; i++ {
		q := GCRAQuota{MaxBurst: pick(), Count: pick(), Period: pick()}
		qty := pick()
		if rng.Intn(2) == 0 {
			qty = rng.Int63n(5)
		}
		now := start + rng.Int63n(int64(1)<<50)
		st := gcraState{}
		switch rng.Intn(3) {
		case 1:
			st = gcraState{tat: uint64(now + rng.Int63n(int64(1)<<40) - int64(1)<<39), ok: true}
		case 2:
			st = gcraState{tat: rng.Uint64(), ok: true}
		}
		got, gerr := gcra(now, st, q, qty)
		want, werr := modelGCRA(now, st, q, qty)
		if gerr != werr || got != want {
			t.Fatalf("now=%d st=%+v q=%+v qty=%d:\n got  %+v %v\n want %+v %v", now, st, q, qty, got, gerr, want, werr)
		}
	}
}
