package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// refZCDPEps is the ε at δ of a ρ-zCDP mechanism by the conversion of
// Canonne, Kamath and Steinke (2020, Prop. 12 on the Rényi curve αρ),
// written from its formula, independently of mechanisms/accounting:
// ε = min over α > 1 of αρ + (ln(1/δ) + α·ln(1 − 1/α) − ln(α − 1))/(α − 1).
// Minimised over u = ln(α − 1) by a scan and a golden-section refinement.
func refZCDPEps(rho, delta float64) float64 {
	f := func(u float64) float64 {
		a := math.Exp(u) + 1
		return a*rho + (math.Log(1/delta)+a*math.Log(1-1/a)-math.Log(a-1))/(a-1)
	}
	best, bu := math.Inf(1), 0.0
	for u := -20.0; u <= 30; u += 0.05 {
		if v := f(u); v < best {
			best, bu = v, u
		}
	}
	lo, hi := bu-0.05, bu+0.05
	g := (math.Sqrt(5) - 1) / 2
	for range 200 {
		m1, m2 := hi-g*(hi-lo), lo+g*(hi-lo)
		if f(m1) < f(m2) {
			hi = m2
		} else {
			lo = m1
		}
	}
	return math.Min(best, f((lo+hi)/2))
}

// refRhoForTarget is the largest ρ whose refZCDPEps at δ is ≤ ε, by
// bisection.
func refRhoForTarget(eps, delta float64) float64 {
	lo, hi := 0.0, eps
	for range 200 {
		mid := (lo + hi) / 2
		if refZCDPEps(mid, delta) <= eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// The adaptive method's sparse-vector step (power_methods.md §4, lines
// 163 and 166 of Algorithm 1): each iteration draws one threshold noise
// Lap(2/ε_s) and, for every grid point it tries, a fresh query noise
// Lap(2/ε_s) (the monotone-query variant of Lyu, Su and Li; the spec's
// general AboveThreshold has Lap(4/ε_s)), with ε_s = √(2fρ*/T), f = 1/4,
// under the zCDP calibration (§4 "Tighter accounting"). The test observes every Laplace draw of real
// runs (the trace sees the scale the sampler was asked for and the value
// it returned) and checks, against ε_s computed here from the target:
//
//   - the number and order of the draws: per iteration one threshold draw,
//     then one query draw per grid point up to the chosen one (k* + 1,
//     read from the released threshold θ̂ = 2^(k*−64)), so no draw is
//     skipped or shared;
//   - their scales: 2/ε_s and 2/ε_s (monotone queries), up to the lattice's rounding up
//     (relative < 1e-9); a smaller scale fails;
//   - their values: |z|/b is Exp(1)-distributed for Laplace noise of scale
//     b, so the median of |z|/b over all threshold draws (and over all
//     query draws) must be ln 2 ≈ 0.693. With N draws the median's standard
//     error is about 1/√N (the Exp(1) density at its median is 1/2); the
//     tolerance is 4 standard errors, so noise drawn at half the scale
//     (median 0.35) or none (median 0) fails.
func TestAdaptiveSVTNoiseScales(t *testing.T) {
	const d, T, eps, delta = 4, 60, 1.0, 1e-6
	rng := rand.New(rand.NewPCG(11, 12))
	data, _ := spikedRows(rng, 3000, d, []float64{6})
	rho := refRhoForTarget(eps, delta)
	epsS := math.Sqrt(2 * 0.25 * rho / T)
	var thrZ, qZ []float64
	for seed := uint64(1); seed <= 8; seed++ {
		tr := &trace{}
		opt := withKnob(Options{Eps: eps, Delta: delta, Iters: T, Clip: 3, Noise: noise.NewSeeded(seed)}, testKnob{noiseScale: 1, trace: tr})
		res, err := Adaptive(context.Background(), data, opt)
		if err != nil {
			t.Fatal(err)
		}
		draws := tr.laplace
		for it, theta := range res.Thresholds {
			kStar := int(math.Round(math.Log2(theta))) + gridTop
			if len(draws) < kStar+2 {
				t.Fatalf("seed %d, iteration %d: %d Laplace draws left, the sparse-vector step at k* = %d needs %d", seed, it, len(draws), kStar, kStar+2)
			}
			for j, dr := range draws[:kStar+2] {
				want, kind := 2/epsS, "query"
				if j == 0 {
					want, kind = 2/epsS, "threshold"
				}
				if !(dr.scale >= want && dr.scale <= want*(1+1e-9)) {
					t.Fatalf("seed %d, iteration %d: %s noise of scale %v, want Lap(%v) (ε_s = %v)", seed, it, kind, dr.scale, want, epsS)
				}
				if j == 0 {
					thrZ = append(thrZ, math.Abs(dr.value)/want)
				} else {
					qZ = append(qZ, math.Abs(dr.value)/want)
				}
			}
			draws = draws[kStar+2:]
		}
		if len(draws) != 0 {
			t.Fatalf("seed %d: %d Laplace draws beyond the sparse-vector steps", seed, len(draws))
		}
	}
	for _, c := range []struct {
		name string
		z    []float64
	}{{"threshold", thrZ}, {"query", qZ}} {
		m, se := median(c.z), 1/math.Sqrt(float64(len(c.z)))
		if math.Abs(m-math.Ln2) > 4*se {
			t.Errorf("%s noise: median |z|/b = %.3f over %d draws, want ln 2 = 0.693 ± %.3f", c.name, m, len(c.z), 4*se)
		}
		t.Logf("%s noise: median |z|/b = %.3f over %d draws (ln 2 = 0.693)", c.name, m, len(c.z))
	}
}

// Under the paper calibration the sparse-vector step uses the per-step ε
// of Lemma 3.1's inversion; the two scales must still be exactly 2/ε and
// 2/ε of that ε (the plan's SVTEps, checked against the spec's formula
// elsewhere), drawn once and once per grid point.
func TestAdaptiveSVTNoiseScalesPaper(t *testing.T) {
	const d, T = 4, 20
	rng := rand.New(rand.NewPCG(13, 14))
	data, _ := spikedRows(rng, 2000, d, []float64{6})
	tr := &trace{}
	opt := withKnob(Options{Eps: 2, Delta: 1e-6, Iters: T, Clip: 3, Calibration: CalibPaper, Noise: noise.NewSeeded(3)}, testKnob{noiseScale: 1, trace: tr})
	pl, err := PlanAdaptive(opt, d)
	if err != nil {
		t.Fatal(err)
	}
	// Lemma 3.1's own ε, (√(ln(1/δ')+E) − √ln(1/δ'))/√(2T) with
	// δ' = D/(T+1), is a valid per-step ε; the plan may take a larger valid
	// one, never a smaller.
	l := math.Log(float64(T+1) / 1e-6)
	if lemma := (math.Sqrt(l+2) - math.Sqrt(l)) / math.Sqrt(2*T); pl.SVTEps < lemma*(1-1e-12) {
		t.Fatalf("per-step ε %v below Lemma 3.1's %v", pl.SVTEps, lemma)
	}
	res, err := pl.Run(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	draws := tr.laplace
	for it, theta := range res.Thresholds {
		kStar := int(math.Round(math.Log2(theta))) + gridTop
		for j, dr := range draws[:kStar+2] {
			want := 2 / pl.SVTEps
			if j == 0 {
				want = 2 / pl.SVTEps
			}
			if !(dr.scale >= want && dr.scale <= want*(1+1e-9)) {
				t.Fatalf("iteration %d, draw %d: scale %v, want %v", it, j, dr.scale, want)
			}
		}
		draws = draws[kStar+2:]
	}
	if len(draws) != 0 {
		t.Fatalf("%d Laplace draws beyond the sparse-vector steps", len(draws))
	}
}

// ExamplePlanNoisyPower prints ρ = 0.02436 for (ε, δ) = (1, 1e-6): the ρ
// whose tight conversion is exactly ε = 1, checked with the independent
// CKS conversion (and the classic one, which it must beat:
// (√(ln 1e6 + 1) − √(ln 1e6))² ≈ 0.0175).
func TestExamplePlanNoisyPowerRho(t *testing.T) {
	pl, err := PlanNoisyPower(Options{K: 2, Eps: 1, Delta: 1e-6, Clip: 6, Iters: 20}, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Within 1e-9 (the accountant's own tolerance for a numerically
	// inverted target; the reference is accurate to ~1e-15).
	if e := refZCDPEps(pl.Rho, 1e-6); e > 1+1e-9 || e < 1-1e-6 {
		t.Errorf("ρ = %v converts to ε = %v at δ = 1e-6, want 1", pl.Rho, e)
	}
	if math.Abs(pl.Rho-0.02436) > 5e-6 {
		t.Errorf("ρ = %v, the example prints 0.02436", pl.Rho)
	}
	l := math.Log(1e6)
	if classic := math.Pow(math.Sqrt(l+1)-math.Sqrt(l), 2); !(pl.Rho > classic) {
		t.Errorf("ρ = %v does not beat the classic %v", pl.Rho, classic)
	}
	// npm's std: √(L/(2ρ)) per unit of the replace-one sensitivity √2
	// (k = p = 2: ‖(aaᵀ − bbᵀ)X‖_F ≤ √2), plus < 0.1% rounding charge.
	if want := math.Sqrt(20/(2*pl.Rho)) * math.Sqrt2; pl.NoiseStd < want || pl.NoiseStd > want*1.001 {
		t.Errorf("npm std %v, want √(L/2ρ)·√2 = %v", pl.NoiseStd, want)
	}
}
