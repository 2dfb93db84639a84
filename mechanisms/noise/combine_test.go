package noise

import (
	"math"
	"testing"
)

// fitTerms are the weights of one part's error in a least-squares fit of
// g parts to their total: g/(g+1) on its own noise, 1/(g+1) on the g
// others (the other parts and the total).
func fitTerms(g int) []Term {
	return []Term{{float64(g) / float64(g+1), 1}, {1 / float64(g+1), g}}
}

// One term of weight 1: the Gaussian half-width is the single draw's
// (plus one lattice step), and the Laplace Chernoff bound lies between
// the exact quantile and about twice it.
func TestCombinedHalfWidthOneDraw(t *testing.T) {
	t.Parallel()
	for _, scale := range []float64{0.5, 3, 1e6} {
		g, err := CombinedHalfWidth(true, scale, []Term{{1, 1}}, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		exact, _ := GaussianHalfWidth(scale, 0.95)
		if step := LatticeStep(scale); math.Abs(g-exact-step) > 4*step+1e-9*exact {
			t.Errorf("Gaussian σ=%v: %v, want the single draw's %v plus a step %v", scale, g, exact, step)
		}
		l, err := CombinedHalfWidth(false, scale, []Term{{1, 1}}, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		exact, _ = LaplaceHalfWidth(scale, 0.95)
		if !(l > exact && l < 2.1*exact) {
			t.Errorf("Laplace b=%v: %v, want between the exact %v and 2.1 times it", scale, l, exact)
		}
	}
}

// The half-widths grow with the level, with the weights and with the
// scale, and are 0 without noise.
func TestCombinedHalfWidthMonotone(t *testing.T) {
	t.Parallel()
	for _, gauss := range []bool{false, true} {
		h := func(scale float64, terms []Term, level float64) float64 {
			v, err := CombinedHalfWidth(gauss, scale, terms, level)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		base := h(2, fitTerms(3), 0.95)
		if !(h(2, fitTerms(3), 0.99) > base && h(2, fitTerms(3), 0.9) < base) {
			t.Errorf("gaussian=%v: the half-width does not grow with the level", gauss)
		}
		if !(h(4, fitTerms(3), 0.95) > base) {
			t.Errorf("gaussian=%v: the half-width does not grow with the scale", gauss)
		}
		if !(h(2, []Term{{0.75, 1}, {0.25, 3}, {0.1, 1}}, 0.95) > base) {
			t.Errorf("gaussian=%v: one more draw does not widen the interval", gauss)
		}
		if v := h(0, fitTerms(3), 0.95); v != 0 {
			t.Errorf("gaussian=%v: no noise, half-width %v", gauss, v)
		}
	}
	for _, bad := range [][]Term{{{math.NaN(), 1}}, {{1, -1}}, {{math.Inf(1), 1}}} {
		if _, err := CombinedHalfWidth(false, 1, bad, 0.95); err == nil {
			t.Errorf("terms %v accepted", bad)
		}
	}
	if _, err := CombinedHalfWidth(false, 1, fitTerms(2), 1); err != ErrLevel {
		t.Errorf("level 1: %v, want ErrLevel", err)
	}
}

// Seeded draws of a fitted part's error W = Σ a_j·Z_j of the samplers'
// noise fall outside ± the half-width at most 1 − level of the time
// (within sampling error): about 5 % for the Gaussian, less for the
// Laplace's Chernoff bound.
func TestCombinedHalfWidthCoverage(t *testing.T) {
	t.Parallel()
	const n, level = 20000, 0.95
	for _, gauss := range []bool{false, true} {
		for _, g := range []int{2, 5} {
			const scale = 3.0
			terms := fitTerms(g)
			h, err := CombinedHalfWidth(gauss, scale, terms, level)
			if err != nil {
				t.Fatal(err)
			}
			s := NewSeeded(uint64(g) + 7)
			out := 0
			for range n {
				w := 0.0
				for _, tm := range terms {
					for range tm.Count {
						var z float64
						if gauss {
							z = s.Gaussian(scale)
						} else {
							z = s.Laplace(scale)
						}
						w += tm.Weight * z
					}
				}
				if math.Abs(w) > h {
					out++
				}
			}
			miss := float64(out) / n
			t.Logf("gaussian=%v G=%d: half-width %.4g (σ of W %.4g), coverage %.4f", gauss, g, h, scale*math.Sqrt(float64(g)/float64(g+1))*map[bool]float64{false: math.Sqrt2, true: 1}[gauss], 1-miss)
			// 3.5 standard errors above α.
			if miss > 1-level+3.5*math.Sqrt(0.05*0.95/n) {
				t.Errorf("gaussian=%v G=%d: %v of the draws outside ± %v", gauss, g, miss, h)
			}
			if gauss && miss < 1-level-3.5*math.Sqrt(0.05*0.95/n) {
				t.Errorf("gaussian G=%d: only %v outside ± %v: the half-width is wider than the exact one", g, miss, h)
			}
		}
	}
}

// Without a single largest draw the Laplace half-width is Chernoff's
// bound alone: min over u ∈ (0, 1) of s·a·(ln(2/α) − Σ n·ln(1 − u²))/u for
// n equal weights a, plus the lattice steps; found here on a fine grid.
func TestCombinedChernoffValue(t *testing.T) {
	t.Parallel()
	const scale, level = 2.0, 0.95
	for _, tm := range []Term{{1, 2}, {0.5, 3}} {
		got, err := CombinedHalfWidth(false, scale, []Term{tm}, level)
		if err != nil {
			t.Fatal(err)
		}
		l := latticeFor(scale)
		s := float64(l.units) * l.step
		best := math.Inf(1)
		for i := 1; i < 200000; i++ {
			u := float64(i) / 200000
			best = min(best, s*tm.Weight*(math.Log(2/(1-level))-float64(tm.Count)*math.Log1p(-u*u))/u)
		}
		want := best + float64(tm.Count)*tm.Weight*l.step
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("%+v: %v, want %v", tm, got, want)
		}
	}
}
