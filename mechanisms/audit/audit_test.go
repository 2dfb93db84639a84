package audit

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/privnotes/privnotes/internal/testtier"
)

// long reports whether the larger runs are requested (PRIVNOTES_LONG=1).
func long() bool { return os.Getenv("PRIVNOTES_LONG") == "1" }

// trialSeed gives each (seed, side, trial) its own noise stream, so trials
// are independent and the audit is reproducible.
func trialSeed(seed uint64, neighbour bool, trial int) uint64 {
	side := uint64(0)
	if neighbour {
		side = 1
	}
	return seed<<40 ^ uint64(trial)<<1 | side
}

// trialRand is a PCG stream per trial.
func trialRand(seed uint64, neighbour bool, trial int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, trialSeed(0, neighbour, trial)))
}

// query is the audited query: f(D) = 0, f(D′) = 1 (sensitivity 1).
func query(neighbour bool) float64 {
	if neighbour {
		return 1
	}
	return 0
}

// The reference mechanisms below use continuous math/rand/v2 noise, whose
// (ε, δ) is known in closed form; they test the harness independently of
// the project's samplers. TestAuditsProjectSamplers audits those.

// gaussianMech releases f + N(0, σ²).
func gaussianMech(seed uint64, sigma float64) Mechanism {
	return func(neighbour bool, trial int) float64 {
		return query(neighbour) + sigma*trialRand(seed, neighbour, trial).NormFloat64()
	}
}

// laplaceMech releases f + Lap(b).
func laplaceMech(seed uint64, b float64) Mechanism {
	return func(neighbour bool, trial int) float64 {
		r := trialRand(seed, neighbour, trial)
		e := b * r.ExpFloat64()
		if r.Uint64()&1 == 0 {
			e = -e
		}
		return query(neighbour) + e
	}
}

// gaussianDelta is the exact δ(ε) of the Gaussian mechanism with
// sensitivity/σ = μ (Balle–Wang 2018, Thm 8):
// Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).
func gaussianDelta(mu, eps float64) float64 {
	phi := distuv.UnitNormal.CDF
	return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
}

// gaussianMu returns the μ at which the Gaussian mechanism is exactly
// (eps, delta)-DP (δ(ε) increases in μ).
func gaussianMu(eps, delta float64) float64 {
	lo, hi := 1e-6, 100.0
	for range 200 {
		mid := (lo + hi) / 2
		if gaussianDelta(mid, eps) > delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo
}

func TestClopperPearson(t *testing.T) {
	// Reference values: 1 − 0.05^{1/10}; the exact two-sided 95% interval
	// for 5/10 is [0.18709, 0.81291] (each side at 0.025).
	cases := []struct {
		name      string
		got, want float64
	}{
		{"upper 0/10", cpUpper(0, 10, 0.05), 1 - math.Pow(0.05, 0.1)},
		{"upper 5/10", cpUpper(5, 10, 0.025), 0.81291},
		{"lower 5/10", cpLower(5, 10, 0.025), 0.18709},
		{"lower 10/10", cpLower(10, 10, 0.05), math.Pow(0.05, 0.1)},
		{"upper 10/10", cpUpper(10, 10, 0.05), 1},
		{"lower 0/10", cpLower(0, 10, 0.05), 0},
	}
	for _, c := range cases {
		if math.Abs(c.got-c.want) > 1e-5 {
			t.Errorf("%s = %.6f, want %.6f", c.name, c.got, c.want)
		}
	}
	// Coverage: the one-sided bounds at 0.05 hold in ≥ 95% of binomial
	// draws (Clopper–Pearson is conservative), for small and tail p.
	// 4000 draws: a 95% coverage shows as ≥ 94% except with probability
	// < 1e-3.
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range []float64{0.001, 0.05, 0.5} {
		const m, reps = 500, 4000
		upOK, lowOK := 0, 0
		for range reps {
			x := 0
			for range m {
				if r.Float64() < p {
					x++
				}
			}
			if cpUpper(x, m, 0.05) >= p {
				upOK++
			}
			if cpLower(x, m, 0.05) <= p {
				lowOK++
			}
		}
		if upOK < reps*94/100 || lowOK < reps*94/100 {
			t.Errorf("p = %v: coverage upper %d/%d, lower %d/%d; want ≥ 95%%", p, upOK, reps, lowOK, reps)
		}
	}
}

// auditCase is one mechanism with its true ε at the configured δ.
type auditCase struct {
	name    string
	mech    func(seed uint64) Mechanism
	trueEps float64
	delta   float64
}

// gaussianEps is the exact ε at δ of the Gaussian mechanism with
// sensitivity/σ = μ (δ(ε) decreases in ε).
func gaussianEps(mu, delta float64) float64 {
	lo, hi := 0.0, 100.0
	for range 200 {
		mid := (lo + hi) / 2
		if gaussianDelta(mu, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func gaussianCase(eps, delta, noiseFactor float64) auditCase {
	sigma := noiseFactor / gaussianMu(eps, delta)
	trueEps := eps
	if noiseFactor != 1 {
		trueEps = gaussianEps(1/sigma, delta) // the mis-calibrated mechanism's ε
	}
	return auditCase{"gaussian", func(seed uint64) Mechanism { return gaussianMech(seed, sigma) }, trueEps, delta}
}

func laplaceCase(eps, noiseFactor float64) auditCase {
	b := noiseFactor / eps
	return auditCase{"laplace", func(seed uint64) Mechanism { return laplaceMech(seed, b) }, 1 / b, 0}
}

// TestTightOnCorrectMechanisms: on exactly calibrated mechanisms the bound
// never exceeds the true ε (validity) and reaches a documented fraction of it
// (power). Over 9 seeds, all bounds must be ≤ the true ε (each fails with
// probability ≤ α = 0.05, in practice far less since the bound has slack)
// and the median must exceed the fraction: 0.3·ε for the Gaussian
// (δ = 1e-5 and Trials = 50k per side; the optimal tail test has
// ln(TPR/FPR) ≈ 0.8 at FPR = 1e-3, less the Clopper–Pearson slack), and
// 0.85·ε for the Laplace (its likelihood ratio reaches e^ε on a set of
// probability ½, so few trials give a tight bound).
func TestTightOnCorrectMechanisms(t *testing.T) {
	testtier.Long(t)
	trials, gaussFrac := 50000, 0.3
	if long() {
		trials, gaussFrac = 1000000, 0.6
	}
	cases := []struct {
		c      auditCase
		trials int
		frac   float64
	}{
		{gaussianCase(1, 1e-5, 1), trials, gaussFrac},
		{laplaceCase(1, 1), trials / 5, 0.85},
		{laplaceCase(0.25, 1), trials / 2, 0.7},
	}
	for _, tc := range cases {
		t.Run(tc.c.name, func(t *testing.T) {
			cfg := Config{Trials: tc.trials, Alpha: 0.05, Delta: tc.c.delta}
			var lbs []float64
			for seed := range uint64(9) {
				res, err := Run(cfg, tc.c.mech(seed))
				if err != nil {
					t.Fatal(err)
				}
				if err := res.Check(tc.c.trueEps); err != nil {
					t.Errorf("seed %d: a correct mechanism was flagged: %v", seed, err)
				}
				lbs = append(lbs, res.EpsLower)
				if seed == 0 {
					t.Logf("true ε = %.4g: %v", tc.c.trueEps, res)
				}
			}
			slices.Sort(lbs)
			med := lbs[len(lbs)/2]
			t.Logf("lower bounds over 9 seeds: %.3f; median/true = %.3f", lbs, med/tc.c.trueEps)
			if med < tc.frac*tc.c.trueEps {
				t.Errorf("median lower bound %.4g < %.2g × true ε %.4g: the audit is too weak", med, tc.frac, tc.c.trueEps)
			}
		})
	}
}

// TestCatchesBrokenMechanisms: a mechanism whose noise is halved while it
// still claims the original ε must be flagged (EpsLower > claimed), for
// every one of 5 seeds. The halved Gaussian (true ε 2.16 at δ = 1e-5) needs
// 200k runs per side: its best tail test has ln(TPR/FPR) ≈ 1.5 at
// FPR ≈ 3e-3, and the confidence bounds cost ≈ 0.2 of that; at 50k runs the
// bound hovers around the claimed 1.0.
func TestCatchesBrokenMechanisms(t *testing.T) {
	testtier.Long(t)
	trials := 200000
	if long() {
		trials = 2000000
	}
	cases := []struct {
		c       auditCase
		claimed float64
		trials  int
	}{
		{gaussianCase(1, 1e-5, 0.5), 1, trials},
		{laplaceCase(1, 0.5), 1, trials / 20},
		// A subtler bug: Laplace noise at 80% of its scale (true ε = 1.25).
		{laplaceCase(1, 0.8), 1, trials / 4},
	}
	for _, tc := range cases {
		t.Run(tc.c.name, func(t *testing.T) {
			cfg := Config{Trials: tc.trials, Alpha: 0.05, Delta: tc.c.delta}
			for seed := range uint64(5) {
				res, err := Run(cfg, tc.c.mech(100+seed))
				if err != nil {
					t.Fatal(err)
				}
				if seed == 0 {
					t.Logf("claimed ε = %v, true ε = %.4g: %v", tc.claimed, tc.c.trueEps, res)
				}
				if res.Check(tc.claimed) == nil {
					t.Errorf("seed %d: broken mechanism (true ε %.4g) passed the audit of ε = %v: %v", seed, tc.c.trueEps, tc.claimed, res)
				}
				if res.EpsLower > tc.c.trueEps {
					t.Errorf("seed %d: bound %.4g exceeds even the true ε %.4g", seed, res.EpsLower, tc.c.trueEps)
				}
			}
		})
	}
}

// Two identical distributions: no evidence of any privacy loss.
func TestNoLeakGivesZero(t *testing.T) {
	same := func(neighbour bool, trial int) float64 {
		return trialRand(3, neighbour, trial).NormFloat64()
	}
	res, err := Run(Config{Trials: 20000, Alpha: 0.05}, same)
	if err != nil {
		t.Fatal(err)
	}
	// Valid at level 0.05 means EpsLower = 0 with probability ≥ 95%; a
	// positive value here would need a chance deviation on a region
	// selected on independent runs.
	if res.EpsLower > 0.05 {
		t.Errorf("identical distributions gave ε ≥ %v", res.EpsLower)
	}
}

// A deterministic mechanism that reveals the neighbour is caught at the
// audit's resolution.
func TestPerfectSeparationReachesResolution(t *testing.T) {
	cfg := Config{Trials: 2000, Alpha: 0.05, Delta: 1e-6}
	res, err := Run(cfg, func(neighbour bool, _ int) float64 {
		if neighbour {
			return 1
		}
		return 0
	})
	if err != nil {
		t.Fatal(err)
	}
	resol, _ := Resolution(cfg)
	// m = 1000 evaluation runs: FPR ≤ 1 − 0.025^{1/1000} ≈ 3.7e-3, so ≈ 5.6.
	if math.Abs(res.EpsLower-resol) > 1e-12 || resol < 5.5 || resol > 5.7 {
		t.Errorf("EpsLower = %v, Resolution = %v; want both ≈ 5.6", res.EpsLower, resol)
	}
	if res.FPR != 0 || res.FNR != 0 {
		t.Errorf("FPR %v, FNR %v on perfectly separated runs", res.FPR, res.FNR)
	}
	bigger, _ := Resolution(Config{Trials: 200000, Alpha: 0.05, Delta: 1e-6})
	if !(bigger > resol+4) { // ln(100) ≈ 4.6 more
		t.Errorf("Resolution grows too slowly with trials: %v → %v", resol, bigger)
	}
}

func TestDeterministicAcrossWorkers(t *testing.T) {
	mech := gaussianMech(5, 2)
	a, err := Run(Config{Trials: 4000, Alpha: 0.05, Delta: 1e-5, Workers: 1}, mech)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(Config{Trials: 4000, Alpha: 0.05, Delta: 1e-5, Workers: 3}, mech)
	if a != b {
		t.Errorf("results differ with the worker count:\n%v\n%v", a, b)
	}
}

// The region must be found in whichever tail and for whichever side holds
// the evidence: mirror the Laplace mechanism and swap the neighbours.
func TestBothTailsAndDirections(t *testing.T) {
	base := laplaceMech(8, 1)
	variants := map[string]Mechanism{
		"plain":    base,
		"mirrored": func(nb bool, i int) float64 { return -base(nb, i) },
		"swapped":  func(nb bool, i int) float64 { return base(!nb, i) },
	}
	for name, m := range variants {
		res, err := Run(Config{Trials: 10000, Alpha: 0.05}, m)
		if err != nil {
			t.Fatal(err)
		}
		if res.EpsLower < 0.8 || res.EpsLower > 1 {
			t.Errorf("%s: EpsLower = %v, want in [0.8, 1] (true ε = 1)", name, res.EpsLower)
		}
	}
}

func TestBadInput(t *testing.T) {
	ok := gaussianMech(1, 1)
	cases := []struct {
		name string
		cfg  Config
		mech Mechanism
		want string
	}{
		{"few trials", Config{Trials: 10, Alpha: 0.05}, ok, "Trials = 10"},
		{"alpha 0", Config{Trials: 100, Alpha: 0}, ok, "Alpha"},
		{"alpha 1", Config{Trials: 100, Alpha: 1}, ok, "Alpha"},
		{"delta", Config{Trials: 100, Alpha: 0.05, Delta: 1}, ok, "Delta"},
		{"workers", Config{Trials: 100, Alpha: 0.05, Workers: -1}, ok, "Workers"},
		{"nil", Config{Trials: 100, Alpha: 0.05}, nil, "nil mechanism"},
		{"NaN", Config{Trials: 100, Alpha: 0.05}, func(nb bool, i int) float64 {
			if nb && i == 17 {
				return math.NaN()
			}
			return 0
		}, "trial 17 on D′ is NaN"},
	}
	for _, tc := range cases {
		_, err := Run(tc.cfg, tc.mech)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if err := (Result{}).Check(-1); err == nil {
		t.Error("Check accepted a negative claimed ε")
	}
}

func TestProjectOnto(t *testing.T) {
	p := ProjectOnto([]float64{1, 0, -2})
	if got := p([]float64{3, 5, 1}); got != 1 {
		t.Errorf("⟨(3,5,1),(1,0,−2)⟩ = %v, want 1", got)
	}
	m := Vector(func(nb bool, _ int) []float64 {
		if nb {
			return []float64{1, 1, 1}
		}
		return []float64{0, 0, 0}
	}, p)
	if m(true, 0) != -1 || m(false, 0) != 0 {
		t.Error("Vector did not apply the statistic")
	}
	defer func() {
		if recover() == nil {
			t.Error("length mismatch did not panic")
		}
	}()
	p([]float64{1})
}

// TestAuditsProjectSamplers audits the samplers of mechanisms/noise as a
// mechanism uses them (seeded per trial, scale from LaplaceScale /
// GaussianScale, AddLaplace / AddGaussian on f): the bound must not exceed
// the claimed ε. Trials are fewer than above because the exact samplers are
// slower; the claims are chosen so that a leak as large as the claimed ε
// would still be visible (Laplace ε = 0.25 is audited to ≈ 0.19 above).
func TestAuditsProjectSamplers(t *testing.T) {
	testtier.Long(t)
	const delta = 1e-5
	mu := gaussianMu(1, delta)
	sigma := noise.GaussianScale(1, 1/mu, 1)
	b := noise.LaplaceScale(1, 0.25, 1)
	cases := []struct {
		name    string
		claimed float64
		delta   float64
		trials  int
		mech    func(seed uint64) Mechanism
	}{
		{"laplace ε=0.25", 0.25, 0, 20000, func(seed uint64) Mechanism {
			return func(nb bool, trial int) float64 {
				x := []float64{query(nb)}
				noise.NewSeeded(trialSeed(seed, nb, trial)).AddLaplace(x, b)
				return x[0]
			}
		}},
		// The scalar samplers at a power-of-two scale; f = 1 lies on the
		// lattice, so f + Laplace(4) is exactly 0.25-DP. (These caught a
		// seeded-mode bug during development: a fresh NewSeeded sampler read
		// an all-zero first buffer, and the audit gave ε ≥ 1.26 here.)
		{"scalar laplace b=4", 0.25, 0, 20000, func(seed uint64) Mechanism {
			return func(nb bool, trial int) float64 {
				return query(nb) + noise.NewSeeded(trialSeed(seed, nb, trial)).Laplace(4)
			}
		}},
		{"scalar gaussian σ=4", gaussianEps(0.25, delta), delta, 40000, func(seed uint64) Mechanism {
			return func(nb bool, trial int) float64 {
				return query(nb) + noise.NewSeeded(trialSeed(seed, nb, trial)).Gaussian(4)
			}
		}},
		{"gaussian ε=1", 1, delta, 40000, func(seed uint64) Mechanism {
			return func(nb bool, trial int) float64 {
				x := []float64{query(nb)}
				noise.NewSeeded(trialSeed(seed, nb, trial)).AddGaussian(x, sigma)
				return x[0]
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(3) {
				res, err := Run(Config{Trials: tc.trials, Alpha: 0.05, Delta: tc.delta}, tc.mech(300+seed))
				if err != nil {
					t.Fatal(err)
				}
				if seed == 0 {
					t.Logf("claimed ε = %v: %v", tc.claimed, res)
				}
				if err := res.Check(tc.claimed); err != nil {
					t.Errorf("seed %d: the audit refutes mechanisms/noise used as documented: %v", seed, err)
				}
			}
		})
	}
}

func BenchmarkRun(b *testing.B) {
	mech := gaussianMech(1, 4)
	for b.Loop() {
		if _, err := Run(Config{Trials: 100000, Alpha: 0.05, Delta: 1e-5}, mech); err != nil {
			b.Fatal(err)
		}
	}
}
