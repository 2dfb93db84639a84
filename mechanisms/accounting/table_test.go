package accounting

// The accountant table of docs/accounting.md (issue 28): how many releases
// each accountant admits on a (4.4, 1e-5) budget, against exact
// composition computed here independently of the package, by privacy-loss
// distributions (PLDs). Reproduce with
//
//	go test -tags duckdb_arrow -run '^TestAccountantTable$' -v ./mechanisms/accounting
//
// Exact composition. The δ of a composition at ε is
// δ(ε) = E_P[(1 − e^{ε−L})₊] for the composed privacy loss L under the
// first data set (the hockey-stick divergence); the PLDs used:
//
//   - Laplace count of ε (the project's discrete Laplace shifts by ~2^40
//     lattice steps, so its PLD is the continuous one to ~2^-40): L = +ε with
//     probability 1/2, −ε with probability e^{−ε}/2, and in between
//     P(L ≤ l) = e^{−(ε−l)/2}/2. Discretised pessimistically: the mass of
//     ((j−1)h, jh] goes to jh, so δ is never underestimated, and composed
//     by direct convolution.
//   - Gaussian of μ = √(2ρ): L ~ N(μ²/2, μ²); a sum of Gaussian losses is
//     Gaussian, and E[(1 − e^{x−L})₊] = Φ(−x/μ + μ/2) − e^x Φ(−x/μ − μ/2)
//     for every real x, so mixed sessions take δ(ε) = Σ_i p_i·δ_G(ε − l_i)
//     over the discretised Laplace part.
//   - Quantiles (exponential mechanism, ε-bounded range): the worst case of
//     one ε-BR release is a binary pair with losses t and t − ε (see
//     brWorstDivergence); k releases with a common t give a binomial loss,
//     maximised over a grid of t. The true worst case over the BR family
//     (different t_i, adaptively chosen) can only be larger, so this exact
//     column admits at least as many releases as the truth.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// pld is a discretised privacy-loss distribution: p[i] is the probability
// of loss (off+i)·h; inf is the probability of +∞ (truncated tails).
type pld struct {
	h   float64
	off int
	p   []float64
	inf float64
}

// laplacePLD discretises the Laplace loss of ε on the grid h, rounding up.
func laplacePLD(eps, h float64) pld {
	lo, hi := int(math.Ceil(-eps/h)), int(math.Ceil(eps/h))
	d := pld{h: h, off: lo, p: make([]float64, hi-lo+1)}
	cdf := func(l float64) float64 { // P(L ≤ l) on [−ε, ε), including the atom at −ε
		return math.Exp(-(eps-l)/2) / 2
	}
	d.p[0] += math.Exp(-eps) / 2 // the atom at −ε, at ceil(−ε/h)·h ≥ −ε
	prev := -eps
	for j := lo; j <= hi; j++ {
		top := math.Min(float64(j)*h, eps)
		if top > prev {
			d.p[j-lo] += cdf(top) - cdf(prev)
			prev = top
		}
	}
	d.p[hi-lo] += 0.5 // the atom at +ε
	return d
}

// convolve composes two PLDs on the same grid.
func convolve(a, b pld) pld {
	out := pld{h: a.h, off: a.off + b.off, p: make([]float64, len(a.p)+len(b.p)-1)}
	for i, x := range a.p {
		if x == 0 {
			continue
		}
		for j, y := range b.p {
			out.p[i+j] += x * y
		}
	}
	out.inf = a.inf + b.inf - a.inf*b.inf // either factor at +∞
	return out
}

// compose returns the k-fold composition of d (k ≥ 1).
func compose(d pld, k int) pld {
	out := d
	for i := 1; i < k; i++ {
		out = convolve(out, d)
	}
	return out
}

// gaussDelta is δ(x) = E[(1 − e^{x−L})₊] for L ~ N(μ²/2, μ²), any real x.
func gaussDelta(mu, x float64) float64 {
	if mu == 0 {
		return math.Max(0, -math.Expm1(x))
	}
	a := x/mu - mu/2
	b := x/mu + mu/2
	return math.Max(0, math.Erfc(a/math.Sqrt2)/2-math.Exp(x)*math.Erfc(b/math.Sqrt2)/2)
}

// pldDelta is δ(ε) of the PLD d composed with a Gaussian of μ (0: none).
func pldDelta(d pld, mu, eps float64) float64 {
	delta := d.inf
	for i, x := range d.p {
		if x == 0 {
			continue
		}
		l := float64(d.off+i) * d.h
		if mu > 0 {
			delta += x * gaussDelta(mu, eps-l)
		} else if l > eps {
			delta += x * -math.Expm1(eps-l)
		}
	}
	return delta
}

// brDelta is the largest δ(ε) of k ε₀-bounded-range releases over the
// binary pairs with a common t on a grid (see the file comment).
func brDelta(eps0 float64, k int, eps float64) float64 {
	worst := 0.0
	for i := 0; i <= 400; i++ {
		t := eps0 * float64(i) / 400
		q := -math.Expm1(t-eps0) / (math.Exp(t) * -math.Expm1(-eps0)) // Q(loss t)
		p := math.Exp(t) * q                                          // P(loss t)
		if !(p >= 0 && p <= 1) {
			continue
		}
		delta := 0.0
		for m := 0; m <= k; m++ { // m releases at the low loss t − ε₀
			l := float64(k)*t - float64(m)*eps0
			if l <= eps {
				continue
			}
			lc, _ := math.Lgamma(float64(k + 1))
			lm, _ := math.Lgamma(float64(m + 1))
			lk, _ := math.Lgamma(float64(k - m + 1))
			logProb := lc - lm - lk + float64(k-m)*math.Log(p) + float64(m)*math.Log1p(-p)
			delta += math.Exp(logProb) * -math.Expm1(eps-l)
		}
		worst = math.Max(worst, delta)
	}
	return worst
}

// largest returns the largest n in [0, max] for which fits(n) holds,
// fits being monotone.
func largest(max int, fits func(n int) bool) int {
	n := 0
	for n < max && fits(n+1) {
		n++
	}
	return n
}

// admitted counts how many times the accountant of mode m admits the block
// of events, spent block after block once first is spent (0 if first is
// refused).
func admitted(t *testing.T, m Mode, b Budget, first, block []Event) int {
	a, err := NewAccountant(m, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Spend(first...); err != nil {
		return 0
	}
	n := 0
	for ; n < 10000; n++ {
		if err := a.Spend(block...); err != nil {
			if !errors.Is(err, ErrBudgetExceeded) {
				t.Fatal(err)
			}
			break
		}
	}
	return n
}

func TestAccountantTable(t *testing.T) {
	b := Budget{Eps: 4.4, Delta: 1e-5}
	gauss := GaussianZcdpFor(1, 1e-5) // a Gaussian count calibrated to (1, 1e-5) on a zcdp data set
	muG := math.Sqrt(2 * gauss.Rho)   // its exact GDP μ (the continuous Gaussian of the same σ)
	const h = 1e-3
	lap1, lap03 := laplacePLD(1, h), laplacePLD(0.3, h)

	type row struct {
		name  string
		first []Event // spent once before the counted releases
		block []Event // the counted release
		exact int
	}
	lap4 := compose(lap03, 4)
	rows := []row{
		{"(a) ε = 1 Laplace counts", nil, []Event{Pure(1)},
			largest(50, func(n int) bool { return pldDelta(compose(lap1, n), 0, b.Eps) <= b.Delta })},
		{"(b) ε = 0.3 quantiles", nil, []Event{BoundedRange(0.3)},
			largest(500, func(n int) bool { return brDelta(0.3, n, b.Eps) <= b.Delta })},
		{"(c) Gaussian counts (1, 1e-5) after 4 pure ε = 0.3 counts", []Event{Pure(0.3), Pure(0.3), Pure(0.3), Pure(0.3)}, []Event{gauss},
			largest(500, func(n int) bool { return pldDelta(lap4, muG*math.Sqrt(float64(n)), b.Eps) <= b.Delta })},
		{"(d) Gaussian counts (1, 1e-5)", nil, []Event{gauss},
			largest(500, func(n int) bool { return gaussDelta(muG*math.Sqrt(float64(n)), b.Eps) <= b.Delta })},
	}
	modes := []Mode{ModeBasic, ModeZCDP, ModeGDP, ModeRDP}
	var out strings.Builder
	fmt.Fprintf(&out, "\n| workload on (ε, δ) = (4.4, 1e-5) | basic | zcdp | gdp | rdp | exact | rdp / exact |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		got := map[Mode]int{}
		fmt.Fprintf(&out, "| %s |", r.name)
		for _, m := range modes {
			got[m] = admitted(t, m, b, r.first, r.block)
			fmt.Fprintf(&out, " %d |", got[m])
		}
		fmt.Fprintf(&out, " %d | %.0f %% |\n", r.exact, 100*float64(got[ModeRDP])/float64(r.exact))
		for _, m := range modes {
			if got[m] > r.exact {
				t.Errorf("%s: %v admits %d, more than exact composition allows (%d)", r.name, m, got[m], r.exact)
			}
		}
		if got[ModeRDP] < got[ModeZCDP] {
			t.Errorf("%s: rdp admits %d, fewer than zcdp's %d", r.name, got[ModeRDP], got[ModeZCDP])
		}
	}
	// The session (c): 8 Gaussian counts and 4 pure ε = 0.3 calls,
	// the ε each accountant states at δ = 1e-5 against the exact ε.
	session := []Event{gauss, gauss, gauss, gauss, gauss, gauss, gauss, gauss, Pure(0.3), Pure(0.3), Pure(0.3), Pure(0.3)}
	exactEps := 0.0
	for lo, hi := 0.0, 20.0; hi-lo > 1e-6; {
		mid := (lo + hi) / 2
		if pldDelta(lap4, muG*math.Sqrt(8), mid) <= b.Delta {
			hi = mid
		} else {
			lo = mid
		}
		exactEps = hi
	}
	fmt.Fprintf(&out, "\nε spent at δ = 1e-5 by 8 Gaussian counts (1, 1e-5) + 4 pure ε = 0.3:")
	for _, m := range modes[1:] {
		a, err := Replay(m, b, session) // Replay does not enforce the budget
		if err != nil {
			t.Fatal(err)
		}
		s := a.Spent()
		fmt.Fprintf(&out, " %v %.3f (+%.0f %%);", m, s.Eps, 100*(s.Eps/exactEps-1))
		if s.Eps < exactEps {
			t.Errorf("%v states ε = %g below the exact %g", m, s.Eps, exactEps)
		}
	}
	fmt.Fprintf(&out, " exact %.3f\n", exactEps)
	t.Log(out.String())
}

// The PLD machinery against closed forms: one Laplace of ε is pure ε-DP
// (δ(ε) = 0) with δ(0) the total variation 1 − e^{−ε/2}; k-fold Laplace
// stays below randomized response's binomial δ (the worst ε-DP pair); the
// Gaussian δ matches the package's GDP curve.
func TestPLDReference(t *testing.T) {
	const h = 1e-3
	for _, eps := range []float64{0.3, 1} {
		d := laplacePLD(eps, h)
		sum := 0.0
		for _, x := range d.p {
			sum += x
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("Laplace PLD of %g has mass %g", eps, sum)
		}
		if v := pldDelta(d, 0, eps+h); v != 0 {
			t.Errorf("one Laplace of ε = %g: δ(ε) = %g, want 0", eps, v)
		}
		// δ(0) = TV distance of Laplace(0, 1/ε) and Laplace(1, 1/ε) = 1 − e^{−ε/2}.
		if v, want := pldDelta(d, 0, 0), -math.Expm1(-eps/2); v < want || v > want+2*h {
			t.Errorf("one Laplace of ε = %g: δ(0) = %g, want %g (rounded up by < 2h)", eps, v, want)
		}
		for k := 1; k <= 6; k++ {
			for _, e := range []float64{0.5, 1.5, 3} {
				lap := pldDelta(compose(d, k), 0, e)
				// Randomized response's k-fold δ, directly.
				p := 1 / (1 + math.Exp(-eps))
				want := 0.0
				for m := 0; m <= k; m++ {
					l := float64(k-2*m) * eps
					if l > e {
						lc, _ := math.Lgamma(float64(k + 1))
						lm, _ := math.Lgamma(float64(m + 1))
						lk, _ := math.Lgamma(float64(k - m + 1))
						want += math.Exp(lc-lm-lk+float64(k-m)*math.Log(p)+float64(m)*math.Log1p(-p)) * -math.Expm1(e-l)
					}
				}
				if lap > want*(1+1e-9)+1e-15 {
					t.Errorf("%d Laplace of ε = %g: δ(%g) = %g above randomized response's %g", k, eps, e, lap, want)
				}
			}
		}
	}
	// The Gaussian δ against the package's exact GDP curve (independent code).
	for _, mu := range []float64{0.25, 1, 3} {
		for _, e := range []float64{0.1, 1, 4.4} {
			if got, want := gaussDelta(mu, e), GDPDelta(mu, e); math.Abs(got-want) > 1e-9*want+1e-16 {
				t.Errorf("gaussDelta(%g, %g) = %g, GDPDelta %g", mu, e, got, want)
			}
		}
	}
}
