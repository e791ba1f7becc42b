package engine

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestValidateMatchesDecide checks that Validate returns exactly the
// errors Decide returns on absent states that no state can change
// (ErrNoRules, ErrDuplicateKey, ErrZeroRate), and nil otherwise.
func TestValidateMatchesDecide(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	now := int64(1_700_000_000_000_000_000)
	small := func() int64 { return []int64{-1 << 40, -5, -1, 0, 0, 1, 2, 60, 1 << 40}[rng.IntN(9)] }
	rule := func() Rule {
		keys := []string{"a", "b", "c"}
		r := Rule{Key: []byte(keys[rng.IntN(len(keys))])}
		switch rng.IntN(4) {
		case 0:
			r.Family = FamilyCL
			r.GCRA = GCRAQuota{MaxBurst: small(), Count: small(), Period: small()}
		case 1:
			r.Family = FamilySW
		case 2:
			r.Family = FamilySWC
		default:
			r.Family = FamilyFW
		}
		if r.Family != FamilyCL {
			r.Window = WindowQuota{Limit: max(1, small()), Window: int64(1+rng.IntN(3)) * 1e9}
		}
		return r
	}
	for i := 0; i < 200_000; i++ {
		op := []Op{OpThrottle, OpWindow, OpAll}[rng.IntN(3)]
		var rules []Rule
		switch op {
		case OpThrottle:
			r := rule()
			r.Family = FamilyCL
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
		_, err := Decide(now, op, rules, make([]Record, len(rules)), qty)
		var want error
		if errors.Is(err, ErrZeroRate) || errors.Is(err, ErrNoRules) || errors.Is(err, ErrDuplicateKey) {
			want = err
		}
		got := Validate(now, op, rules, qty)
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Fatalf("op %d rules %+v qty %d: Validate = %v, Decide = %v", op, rules, qty, got, err)
		}
	}
}
