package tabular

import (
	"math"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// dgTail is the exact tail of the discrete Gaussian of integer scale s:
// tail(m) = P(Z ≥ m), by summation over |z| ≤ 60·s (the mass beyond is
// below e^(−1800)).
type dgTail struct {
	s    float64
	lim  int64
	cum  []float64 // cum[i] = Σ_{z ≥ i − lim} p(z)
	norm float64
}

func newDGTail(s uint64) *dgTail {
	lim := int64(60 * s)
	d := &dgTail{s: float64(s), lim: lim, cum: make([]float64, 2*lim+2)}
	for z := lim; z >= -lim; z-- {
		w := math.Exp(-float64(z) * float64(z) / (2 * d.s * d.s))
		d.cum[z+lim] = d.cum[z+lim+1] + w
	}
	d.norm = d.cum[0]
	return d
}

func (d *dgTail) tail(m int64) float64 {
	switch {
	case m <= -d.lim:
		return 1
	case m > d.lim:
		return 0
	}
	return d.cum[m+d.lim] / d.norm
}

func (d *dgTail) pmf(z int64) float64 {
	if z < -d.lim || z > d.lim {
		return 0
	}
	return (d.cum[z+d.lim] - d.cum[z+d.lim+1]) / d.norm
}

// The Gaussian thresholding's claim, brute-forced at small resolutions
// (U = 1, 2, 8 units per row: scales of a few to a hundred integers,
// where every probability is an exact finite sum): (1) a partition that
// one row makes is released with probability at most δ_t/Δ₀; (2) the
// noise alone is (ε, δ_g)-DP for a shift of U in Δ₀ coordinates (the
// hockey-stick divergence summed over the integer lattice, Δ₀ = 1 and 2);
// (3) the whole selection, on every neighbouring pair of count vectors
// over Δ₀ partitions (counts 0 to beyond the threshold, a partition
// appearing, vanishing or moving by one, in either direction), releases
// subsets whose probabilities satisfy P(S) ≤ e^ε·P′(S) + δ in total.
func TestGaussianSelectionBruteForce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		eps, delta float64
		touched    int
		units      uint64
	}{
		{1, 1e-3, 1, 1},
		{1, 1e-3, 2, 1},
		{0.5, 1e-2, 2, 2},
		{2, 1e-4, 1, 8},
		{0.3, 0.05, 2, 8},
		{1, 1e-6, 1, 2},
	} {
		g, err := PlanGaussianSelection(c.eps, c.delta, c.touched, c.units)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if g.NoiseDelta+g.TailDelta > c.delta {
			t.Errorf("%+v: δ parts %v + %v exceed δ", c, g.NoiseDelta, g.TailDelta)
		}
		d := newDGTail(g.Scale)
		u := int64(g.Units)
		// (1) one row makes the partition.
		if p := d.tail(g.Threshold - u); p > g.TailDelta/float64(c.touched) {
			t.Errorf("%+v: a one-row partition is released with probability %v > δ_t/Δ₀ = %v", c, p, g.TailDelta/float64(c.touched))
		}
		// (2) the noise's hockey-stick divergence at ε for a shift of
		// U units in each of Δ₀ coordinates.
		e := math.Exp(c.eps)
		var hs float64
		switch c.touched {
		case 1:
			for z := -d.lim; z <= d.lim+u; z++ {
				hs += max(0, d.pmf(z)-e*d.pmf(z-u))
			}
		case 2:
			for z1 := -d.lim; z1 <= d.lim+u; z1++ {
				p1, q1 := d.pmf(z1), d.pmf(z1-u)
				if p1 == 0 && q1 == 0 {
					continue
				}
				for z2 := -d.lim; z2 <= d.lim+u; z2++ {
					hs += max(0, p1*d.pmf(z2)-e*q1*d.pmf(z2-u))
				}
			}
		}
		if hs > g.NoiseDelta {
			t.Errorf("%+v: the noise's δ(ε) = %v > δ_g = %v", c, hs, g.NoiseDelta)
		}
		// (3) the whole selection over Δ₀ partitions: counts n_i in D
		// and n_i + s_i in D′, s_i ∈ {−1, 0, 1}, every count ≥ 0.
		rel := func(n int64) float64 {
			if n <= 0 {
				return 0 // a partition with no row is no candidate
			}
			return d.tail(g.Threshold - u*n)
		}
		top := g.Threshold/u + 3
		worst := 0.0
		var counts func(i int, n, m []int64)
		counts = func(i int, n, m []int64) {
			if i == c.touched {
				dl := 0.0
				for s := 0; s < 1<<c.touched; s++ { // the released subset
					p, q := 1.0, 1.0
					for j := range n {
						pj, qj := rel(n[j]), rel(m[j])
						if s>>j&1 == 0 {
							pj, qj = 1-pj, 1-qj
						}
						p, q = p*pj, q*qj
					}
					dl += max(0, p-e*q)
				}
				worst = max(worst, dl)
				return
			}
			for a := int64(0); a <= top; a++ {
				for _, sh := range []int64{-1, 0, 1} {
					if a+sh < 0 {
						continue
					}
					counts(i+1, append(n, a), append(m, a+sh))
				}
			}
		}
		counts(0, nil, nil)
		if worst > c.delta {
			t.Errorf("%+v: the selection's δ(ε) = %v > δ", c, worst)
		}
		t.Logf("%+v: σ=%d units, τ=%d units, one-row release %.3g, noise δ(ε) %.3g, selection δ(ε) %.3g", c, g.Scale, g.Threshold, d.tail(g.Threshold-u), hs, worst)
	}
}

// The plan in rows: σ = √Δ₀/μ with μ = MuForTarget(ε, δ/2) (to 3/U
// relative: the lattice's GDP slack) and
// τ = 1 + σ·Φ̄⁻¹(δ/(2Δ₀)), each to 1/U; bad arguments are refused.
func TestGaussianSelectionPlan(t *testing.T) {
	t.Parallel()
	const u = 1 << 20
	for _, c := range []struct {
		eps, delta float64
		touched    int
	}{
		{1, 1e-6, 1},
		{0.5, 1e-6, 2},
		{1, 1e-9, 10},
	} {
		g, err := PlanGaussianSelection(c.eps, c.delta, c.touched, u)
		if err != nil {
			t.Fatal(err)
		}
		sigma := math.Sqrt(float64(c.touched)) / accounting.MuForTarget(c.eps, c.delta/2)
		z := math.Sqrt2 * math.Erfcinv(c.delta/float64(c.touched))
		if got := g.ScaleRows(); math.Abs(got-sigma) > 3*sigma/u {
			t.Errorf("%+v: σ %v rows, want %v", c, got, sigma)
		}
		if got := g.ThresholdRows(); math.Abs(got-(1+sigma*z)) > 1e-5*(1+sigma*z) {
			t.Errorf("%+v: τ %v rows, want %v", c, got, 1+sigma*z)
		}
		if p := math.Erfc(float64(g.Threshold-u-1)/float64(g.Scale)/math.Sqrt2) / 2; p > g.TailDelta/float64(c.touched) {
			t.Errorf("%+v: the tail bound %v exceeds δ_t/Δ₀", c, p)
		}
	}
	for _, c := range []struct {
		eps, delta float64
		touched    int
	}{{0, 1e-6, 1}, {math.NaN(), 1e-6, 1}, {1, 0, 1}, {1, 1, 1}, {1, 1e-6, 0}, {1e-300, 1e-12, 1}} {
		if _, err := PlanGaussianSelection(c.eps, c.delta, c.touched, u); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, p := range []float64{0.5, 0.1, 1e-6, 1e-12, 1e-100} {
		x := NormalTailQuantile(p)
		if q := math.Erfc(x/math.Sqrt2) / 2; q > p || q < p*(1-1e-6) {
			t.Errorf("NormalTailQuantile(%v) = %v: tail %v", p, x, q)
		}
	}
}

// Laplace or Gaussian thresholding at the same (ε, δ): the fraction of
// partitions of n rows each keeps, over 20000 seeded draws, against the
// rule the planner applies (the smaller threshold τ in rows, the count
// kept half the time). With Δ₀ = 1 the Laplace threshold is the lower
// one and keeps more partitions near it; from Δ₀ = 4 on (max_groups ≥ 4,
// or 2 under replace-one) the Gaussian does: its scale grows as √Δ₀, the
// Laplace scale as Δ₀. (The Gaussian here has δ/2 for the selection, as
// in a query whose aggregates take the other half.)
func TestSelectionKeepsMore(t *testing.T) {
	t.Parallel()
	const u = 1 << 20
	const eps, delta = 0.5, 1e-6
	for _, c := range []struct {
		touched      int
		gaussianWins bool
	}{{1, false}, {2, false}, {4, true}, {8, true}, {20, true}} {
		g, err := PlanGaussianSelection(eps, delta/2, c.touched, u)
		if err != nil {
			t.Fatal(err)
		}
		lapTau := LaplaceSelectionThreshold(eps, delta, c.touched)
		if got := g.ThresholdRows() < lapTau; got != c.gaussianWins {
			t.Errorf("Δ₀=%d: Gaussian τ %.2f, Laplace τ %.2f: Gaussian chosen %v, want %v", c.touched, g.ThresholdRows(), lapTau, got, c.gaussianWins)
		}
		lapScale := uint64(math.Ceil(u * float64(c.touched) / eps))
		lapThr := int64(u + math.Ceil(float64(lapScale)*math.Log(float64(c.touched)/delta)))
		s := noise.NewSeeded(uint64(c.touched))
		const draws = 20000
		// At the larger of the two thresholds (rounded up) the mechanism
		// with the smaller one keeps most partitions, the other about half.
		n := int64(math.Ceil(max(g.ThresholdRows(), lapTau)))
		var keptG, keptL int
		for range draws {
			if n*u+s.DiscreteGaussianInt(g.Scale) >= g.Threshold {
				keptG++
			}
			if n*u+s.DiscreteLaplaceInt(lapScale) >= lapThr {
				keptL++
			}
		}
		t.Logf("Δ₀=%d, n=%d rows: Gaussian τ=%.1f keeps %.3f, Laplace τ=%.1f keeps %.3f", c.touched, n, g.ThresholdRows(), float64(keptG)/draws, lapTau, float64(keptL)/draws)
		if (keptG > keptL) != c.gaussianWins {
			t.Errorf("Δ₀=%d, n=%d: Gaussian keeps %d, Laplace %d of %d: the rule chose the other", c.touched, n, keptG, keptL, draws)
		}
	}
}
