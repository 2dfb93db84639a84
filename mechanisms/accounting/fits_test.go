package accounting

import (
	"math"
	"testing"
)

// Fits reports exactly what Check admits: the reported ε fits and one a
// hair larger does not, for every accountant and every kind of call, on a
// fresh budget and after spending.
func TestFitsIsWhatCheckAdmits(t *testing.T) {
	budget := Budget{Eps: 4.4, Delta: 1e-5}
	for _, mode := range []Mode{ModeZCDP, ModeBasic, ModeGDP, ModeRDP} {
		for _, spent := range [][]Event{nil, {Pure(0.5)}, {GaussianZcdpFor(1, 1e-5), BoundedRange(0.3)}} {
			a, err := NewAccountant(mode, budget)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Spend(spent...); err != nil {
				if mode == ModeGDP {
					continue // GDP prices a Gaussian zCDP event; every event here is composable
				}
				t.Fatalf("%v: spend %v: %v", mode, spent, err)
			}
			delta := budget.Delta
			if mode == ModeBasic {
				delta = a.Remaining().Delta / 2
			}
			f := a.Fits(delta)
			gaussian := GaussianZcdpFor
			if mode == ModeGDP {
				gaussian = GdpFor
			}
			for _, c := range []struct {
				name  string
				eps   float64
				event func(float64) Event
			}{
				{"pure", f.Pure, Pure},
				{"bounded range", f.BoundedRange, BoundedRange},
				{"gaussian", f.Gaussian, func(e float64) Event { return gaussian(e, delta) }},
			} {
				if c.name == "gaussian" && delta == 0 {
					if c.eps != 0 {
						t.Errorf("%v after %v: a Gaussian call of ε=%v is said to fit with no δ left", mode, spent, c.eps)
					}
					continue
				}
				if c.eps <= 0 {
					t.Errorf("%v after %v: no %s call fits", mode, spent, c.name)
					continue
				}
				if err := a.Check(c.event(c.eps)); err != nil {
					t.Errorf("%v after %v: the reported %s ε=%v does not fit: %v", mode, spent, c.name, c.eps, err)
				}
				if err := a.Check(c.event(c.eps * (1 + 1e-6))); err == nil {
					t.Errorf("%v after %v: a %s call above the reported ε=%v fits too", mode, spent, c.name, c.eps)
				}
			}
			if f.BoundedRange < f.Pure {
				t.Errorf("%v after %v: a bounded-range call fits less (%v) than a pure one (%v)", mode, spent, f.BoundedRange, f.Pure)
			}
		}
	}
	// The example: on a fresh (4.4, 1e-5) zcdp budget one pure
	// call fits at most ε = √(2ρ*), far below the basic rule's 4.4, and
	// the rdp accountant's pure branch admits all of 4.4.
	z, _ := NewAccountant(ModeZCDP, budget)
	if got, want := z.Fits(1e-5).Pure, math.Sqrt(2*RhoForTarget(4.4, 1e-5)); math.Abs(got-want) > 1e-6*want {
		t.Errorf("zcdp: largest pure ε %v, want √(2ρ*) = %v", got, want)
	}
	r, _ := NewAccountant(ModeRDP, budget)
	if got := r.Fits(1e-5).Pure; math.Abs(got-4.4) > 1e-6 {
		t.Errorf("rdp: largest pure ε %v, want the budget's 4.4", got)
	}
}
