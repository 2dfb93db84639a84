package jlclass

import (
	"math"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// closedForm returns P[c] = exp(ε′Q_c/(2G))/Σ, computed in float64 from
// the maximum down (the test's reference, not the sampler).
func closedForm(tot []int64, epsPrime float64) []float64 {
	top := tot[0]
	for _, v := range tot {
		top = max(top, v)
	}
	p := make([]float64, len(tot))
	var z float64
	for c, v := range tot {
		p[c] = math.Exp(-epsPrime * float64(top-v) / (2 * ScoreScale))
		z += p[c]
	}
	for c := range p {
		p[c] /= z
	}
	return p
}

// checkFrequencies draws the sampler N times and compares every
// candidate's frequency with its closed-form probability. Tolerance: 5
// binomial standard deviations plus 1e-4 per cell (a correct sampler
// fails a cell with probability below 1e-6; the seeds are fixed, so the
// outcome is reproducible), and Pearson's χ² below the 99.99% point of its
// distribution (approximated by df + 6·√(2·df)).
func checkFrequencies(t *testing.T, tot []int64, eps float64, seed uint64, draws int) {
	t.Helper()
	p := closedForm(tot, EffectiveEps(eps))
	src := noise.NewSeeded(seed)
	count := make([]int, len(tot))
	for range draws {
		count[sampleEM(tot, eps, 1, src)]++
	}
	var chi2 float64
	df := 0
	for c := range tot {
		f := float64(count[c]) / float64(draws)
		sd := math.Sqrt(p[c] * (1 - p[c]) / float64(draws))
		if math.Abs(f-p[c]) > 5*sd+1e-4 {
			t.Errorf("candidate %d: frequency %.5f, closed form %.5f (±%.5f)", c, f, p[c], 5*sd)
		}
		if e := p[c] * float64(draws); e >= 5 {
			chi2 += (float64(count[c]) - e) * (float64(count[c]) - e) / e
			df++
		}
	}
	df--
	if df > 0 && chi2 > float64(df)+6*math.Sqrt(2*float64(df)) {
		t.Errorf("χ² = %.1f over %d degrees of freedom", chi2, df)
	}
}

// The sampler draws the exponential mechanism's distribution exactly: on
// fixed integer totals its frequencies match the closed form.
func TestSamplerClosedForm(t *testing.T) {
	const G = ScoreScale
	for _, c := range []struct {
		name string
		tot  []int64
		eps  float64
	}{
		{"three levels", []int64{0, G, 2 * G}, 2},
		{"fractional gaps", []int64{5 * G / 2, G / 3, 7 * G / 5, 0, 3 * G}, 1.3},
		{"large exponents", []int64{0, 40 * G, 41 * G, 41 * G}, 1},
		{"one candidate", []int64{17}, 8},
		{"ties", []int64{G, G, G, G}, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) { checkFrequencies(t, c.tot, c.eps, 7, 200000) })
	}
}

// ε′ is ε rounded down to at most 32 significant bits.
func TestEffectiveEps(t *testing.T) {
	for _, eps := range []float64{1e-6, 1e-3, 0.015625, 0.3, 1, 2, math.Pi, 8, 1e3, 1e6} {
		got := EffectiveEps(eps)
		tol := 0x1p-31
		if eps < 0x1p-6 {
			tol = 0x1p-17
		}
		if !(got <= eps) || (eps-got)/eps > tol {
			t.Errorf("EffectiveEps(%v) = %v: want ≤ ε within a relative %g", eps, got, tol)
		}
		a, s := emEps(eps)
		if den := uint64(ScoreScale) << (s + 1); den >= 1<<55 || a >= 1<<32 {
			t.Errorf("ε=%v: a=%d, s=%d: den=%d must stay below 2^55 and a below 2^32", eps, a, s, den)
		}
	}
	if EffectiveEps(2) != 2 || EffectiveEps(0.5) != 0.5 {
		t.Error("dyadic ε must be kept exactly")
	}
}

// acceptExp is Bernoulli(exp(−a·Δ/den)) exactly, whole part included.
func TestAcceptExp(t *testing.T) {
	src := noise.NewSeeded(3)
	const draws = 200000
	for _, c := range []struct{ a, delta, den uint64 }{{3, 1, 2}, {1, 0, 5}, {7, 3, 8}, {1, 5, 2}} {
		want := math.Exp(-float64(c.a*c.delta) / float64(c.den))
		hits := 0
		for range draws {
			if acceptExp(c.a, c.delta, c.den, src) {
				hits++
			}
		}
		f := float64(hits) / draws
		if sd := math.Sqrt(want * (1 - want) / draws); math.Abs(f-want) > 5*sd+1e-4 {
			t.Errorf("exp(−%d·%d/%d): frequency %.5f, want %.5f", c.a, c.delta, c.den, f, want)
		}
	}
}

// uniformIndex is uniform.
func TestUniformIndex(t *testing.T) {
	src := noise.NewSeeded(5)
	const k, draws = 5, 100000
	count := make([]int, k)
	for range draws {
		count[uniformIndex(k, src)]++
	}
	p := 1.0 / k
	sd := math.Sqrt(p * (1 - p) / draws)
	for c, n := range count {
		if f := float64(n) / draws; math.Abs(f-p) > 5*sd {
			t.Errorf("index %d: frequency %.4f, want %.4f", c, f, p)
		}
	}
}
