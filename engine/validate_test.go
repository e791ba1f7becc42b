package engine

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestValidateMatchesDecide checks that Validate returns an error only
// where Decide returns that error whatever the keys hold (absent, or any
// family's state), and returns those Decide gives on absent keys that no
// state can change (ErrNoRules, ErrDuplicateKey, ErrLeakyInAll, and
// CL.THROTTLE's zero rate).
func TestValidateMatchesDecide(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	now := int64(1_700_000_000_000_000_000)
	nowMs := now / 1e6
	small := func() int64 { return []int64{-1 << 40, -5, -1, 0, 0, 1, 2, 60, 1 << 40}[rng.IntN(9)] }
	families := []Family{FamilyCL, FamilySW, FamilySWC, FamilyFW, FamilyLB}
	rule := func() Rule {
		keys := []string{"a", "b", "c"}
		r := Rule{Key: []byte(keys[rng.IntN(len(keys))]), Family: families[rng.IntN(len(families))]}
		switch r.Family {
		case FamilyCL:
			r.GCRA = GCRAQuota{MaxBurst: small(), Count: small(), Period: small()}
		case FamilyLB:
			r.Leaky = LeakyQuota{Count: max(1, small()), Period: 1e9, MaxWait: 1e9}
		default:
			r.Window = WindowQuota{Limit: max(1, small()), Window: int64(1+rng.IntN(3)) * 1e9}
		}
		return r
	}
	// state is a key's state: absent, or one of a family's, live.
	state := func(key []byte) Record {
		rec := Record{Key: string(key), ExpireAtMs: nowMs + 60_000}
		switch rng.IntN(len(families) + 1) {
		case 0:
			return Record{Key: string(key)}
		case 1:
			rec.Family, rec.TAT = FamilyCL, uint64(now)+1e9
		case 2:
			rec.Family, rec.Log, rec.Quantities = FamilySW, []int64{now - 1e8}, []uint32{1}
		case 3:
			rec.Family, rec.Start, rec.Cur = FamilySWC, now-now%1e9, 1
		case 4:
			rec.Family, rec.Start, rec.Cur = FamilyFW, now-now%1e9, 1
		default:
			rec.Family, rec.Tail = FamilyLB, now+1e8
		}
		return rec
	}
	stateless := func(err error) bool {
		return errors.Is(err, ErrNoRules) || errors.Is(err, ErrDuplicateKey) || errors.Is(err, ErrLeakyInAll)
	}
	for i := 0; i < 200_000; i++ {
		op := []Op{OpThrottle, OpWindow, OpAll}[rng.IntN(3)]
		var rules []Rule
		switch op {
		case OpThrottle:
			r := rule()
			r.Family, r.GCRA = FamilyCL, GCRAQuota{MaxBurst: small(), Count: small(), Period: small()}
			rules = []Rule{r}
		case OpWindow:
			r := rule()
			for r.Family == FamilyCL {
				r = rule()
			}
			rules = []Rule{r}
		default:
			for range rng.IntN(4) {
				rules = append(rules, rule())
			}
		}
		qty := small()
		got := Validate(op, rules)
		_, want := Decide(now, op, rules, make([]Record, len(rules)), qty)
		if (stateless(want) || (op == OpThrottle && errors.Is(want, ErrZeroRate))) && (got == nil || got.Error() != want.Error()) {
			t.Fatalf("op %d rules %+v qty %d: Validate = %v, Decide on absent keys = %v", op, rules, qty, got, want)
		}
		if got == nil {
			continue
		}
		for range 4 {
			states := make([]Record, len(rules))
			for j := range rules {
				states[j] = state(rules[j].Key)
			}
			if _, err := Decide(now, op, rules, states, qty); err == nil || err.Error() != got.Error() {
				t.Fatalf("op %d rules %+v states %+v qty %d: Validate = %v, Decide = %v", op, rules, states, qty, got, err)
			}
		}
	}
}

// TestValidateLeavesZeroRateInAll: a zero rate in THROTTLE.ALL is judged
// with the keys, where a key of another family ahead of it answers
// WRONGTYPE, as in memory.
func TestValidateLeavesZeroRateInAll(t *testing.T) {
	now := int64(1_700_000_000_000_000_000)
	zero := Rule{Key: []byte("z"), Family: FamilyCL, GCRA: GCRAQuota{MaxBurst: 1, Count: 10_000_000_000, Period: 1}}
	fw := Rule{Key: []byte("w"), Family: FamilyFW, Window: WindowQuota{Limit: 10, Window: 3600e9}}
	for _, rules := range [][]Rule{{zero}, {fw, zero}} {
		if err := Validate(OpAll, rules); err != nil {
			t.Errorf("Validate(OpAll, %d rules) = %v, want nil: the keys decide", len(rules), err)
		}
	}
	sw := Record{Key: "w", Family: FamilySW, Log: []int64{now - 1e8}, Quantities: []uint32{1}, ExpireAtMs: now/1e6 + 60_000}
	if _, err := Decide(now, OpAll, []Rule{fw, zero}, []Record{sw, {Key: "z"}}, 1); !errors.Is(err, ErrWrongType) {
		t.Errorf("Decide with an SW key ahead of the zero rate = %v, want WRONGTYPE", err)
	}
}
