package dppca

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// sinTo returns sin(w, v1) for a d×1 result against the truth u.
func sinTo(u mat.Matrix, res *Result) float64 { return sqrt(pca.SinThetaSq(u, res.Components)) }

// firstRows returns the first n rows of x as a view.
func firstRows(x *mat.Dense, n int) *mat.Dense {
	_, d := x.Dims()
	return x.Slice(0, n, 0, d).(*mat.Dense)
}

// TestPrivacyRate is spec §8 trend 1: in the privacy-dominated regime the
// error of DP-PCA falls like 1/(εn). Σ = diag(1, 0.5, …), δ = 1e-7,
// T = 10, median sin over 5 seeds.
//
// Rate: d = 5, n = 1e6, ε = 0.2 against ε = 0.4: 1/(εn) predicts a 2×
// larger error; we assert ≥ 1.5× (the finite-T contraction floor of the
// learning rate, ≈ 0.02 here without noise, takes part of the error; at
// ε = 0.4 against 0.8 it took so much that the ratio fell to 0.95 once the
// halves spent the whole budget each).
// Level: d = 10, ε = 0.8, n = 1e6, where the spec's pilot (the paper's
// split) gives 0.11 and these seeds gave a median of 0.0715 with the
// whole-budget halves (0.113 with the paper's split); we assert the median
// ≤ 0.09, which the paper's split fails. PRIVNOTES_LONG=1 adds d = 10 at n = 2e6, 4e6
// and 8e6 (pilot 0.07, 0.036, 0.023; asserted ≤ 0.13, 0.07, 0.045).
func TestPrivacyRate(t *testing.T) {
	testtier.Long(t)
	type cfg struct {
		d, n int
		eps  float64
	}
	run := func(cs []cfg) [][]float64 {
		nmax := 0
		for _, c := range cs {
			nmax = max(nmax, c.n)
		}
		sins := make([][]float64, len(cs))
		for seed := uint64(1); seed <= 5; seed++ {
			data, err := synth.Gaussian(seed, nmax, cs[0].d, []float64{1, 0.5})
			if err != nil {
				t.Fatal(err)
			}
			for k, c := range cs {
				// The synthetic rows are i.i.d. with mean 0 (public facts),
				// so the shuffle and the pairing are unnecessary here.
				opt := Options{Eps: c.eps, Delta: 1e-7, Centred: true, KeepOrder: true, Gap: 0.5, PublicN: c.n, Noise: noise.NewSeeded(seed)}
				res, err := Run(context.Background(), firstRows(data.X, c.n), opt)
				if err != nil {
					t.Fatal(err)
				}
				sins[k] = append(sins[k], sinTo(data.U, res))
			}
		}
		for k, c := range cs {
			t.Logf("d=%d n=%d ε=%v: median sin %.4f over %.4f", c.d, c.n, c.eps, median(sins[k]), sins[k])
		}
		return sins
	}
	rate := run([]cfg{{5, 1000000, 0.2}, {5, 1000000, 0.4}})
	if r := median(rate[0]) / median(rate[1]); r < 1.5 {
		t.Errorf("d=5: halving ε raised the median sin by %.2f×, want ≥ 1.5× (1/(εn) predicts 2×)", r)
	}
	cs, bounds := []cfg{{10, 1000000, 0.8}}, []float64{0.09}
	if long() {
		cs = append(cs, cfg{10, 2000000, 0.8}, cfg{10, 4000000, 0.8}, cfg{10, 8000000, 0.8})
		bounds = append(bounds, 0.13, 0.07, 0.045)
	}
	level := run(cs)
	for k, c := range cs {
		if m := median(level[k]); m > bounds[k] {
			t.Errorf("d=10 n=%d: median sin %.4f > %.3g", c.n, m, bounds[k])
		}
	}
}

// TestDefaultsPairsAndShuffle runs DP-PCA with every default (shuffle,
// centring by pair differences) on data with a large unknown mean.
func TestDefaultsPairsAndShuffle(t *testing.T) {
	testtier.Long(t)
	const n, d = 2000000, 10
	data, _ := synth.Gaussian(11, n, d, []float64{1, 0.5})
	for i := range n {
		floats.AddConst(5, data.X.RawRowView(i))
	}
	res, err := Run(context.Background(), data.X, Options{Eps: 0.8, Delta: 1e-7, Gap: 0.5, PublicN: n, Noise: noise.NewSeeded(1)})
	if err != nil {
		t.Fatal(err)
	}
	if s := sinTo(data.U, res); s > 0.3 || res.Records != n/2 {
		t.Errorf("pair-centred DP-PCA: sin %.3f (want ≤ 0.3), %d records (want %d)", s, res.Records, n/2)
	}
}

// TestExample41 is spec §8 trend 3 on Example 4.1 data (x = ±v + N(0, σ²I)):
// DP-PCA's error shrinks with σ while Eq. 7's clipped minibatch Oja
// (β = 3) plateaus at its clipping noise. n = 1e6 (2e6 under
// PRIVNOTES_LONG), d = 10, ε = 0.8, δ = 1e-7, median over 3 seeds (5).
// Asserted: DP-PCA at σ = 0.001 at least 10× below σ = 0.1; Oja at
// σ = 0.001 no more than 3× below σ = 0.01; DP-PCA beats Oja at σ = 0.001.
func TestExample41(t *testing.T) {
	testtier.Long(t)
	const d = 10
	n, seeds := 1000000, uint64(3)
	if long() {
		n, seeds = 2000000, 5
	}
	sigmas := []float64{0.1, 0.01, 0.001}
	dp := make([][]float64, len(sigmas))
	oja := make([][]float64, len(sigmas))
	for k, sigma := range sigmas {
		for seed := uint64(1); seed <= seeds; seed++ {
			data, err := synth.Example41(seed, n, d, sigma)
			if err != nil {
				t.Fatal(err)
			}
			opt := Options{Eps: 0.8, Delta: 1e-7, Centred: true, KeepOrder: true, Gap: 1, PublicN: n, Noise: noise.NewSeeded(seed)}
			res, err := Run(context.Background(), data.X, opt)
			if err != nil {
				t.Fatal(err)
			}
			dp[k] = append(dp[k], sinTo(data.U, res))
			opt.Beta, opt.Noise = 3, noise.NewSeeded(seed+100)
			res, err = PrivateOja(context.Background(), data.X, opt)
			if err != nil {
				t.Fatal(err)
			}
			oja[k] = append(oja[k], sinTo(data.U, res))
		}
		t.Logf("σ=%v: DP-PCA median sin %.2e, Eq. 7 %.2e", sigma, median(dp[k]), median(oja[k]))
	}
	if a, b := median(dp[0]), median(dp[2]); b > a/10 {
		t.Errorf("DP-PCA: sin %.2e at σ=0.001 vs %.2e at σ=0.1; want ≥ 10× smaller", b, a)
	}
	if a, b := median(oja[1]), median(oja[2]); b < a/3 {
		t.Errorf("Eq. 7: sin %.2e at σ=0.001 vs %.2e at σ=0.01; its clipping noise should make it plateau", b, a)
	}
	if a, b := median(dp[2]), median(oja[2]); a >= b {
		t.Errorf("σ=0.001: DP-PCA %.2e does not beat Eq. 7 %.2e", a, b)
	}
}

// TestZeroSpread covers Λ̂ = 0 (spec §4): Example 4.1 with σ = 0 makes all
// gradients equal, Algorithm 4 returns the bin [0, 0], the floor Λ_min
// keeps Algorithm 5 defined, and DP-PCA recovers v exactly. A few rows with
// NaN or ±Inf exercise the non-finite rule.
func TestZeroSpread(t *testing.T) {
	const n, d = 500000, 5
	data, _ := synth.Example41(1, n, d, 0)
	data.X.Set(10, 2, math.NaN())
	data.X.Set(20, 0, math.Inf(-1))
	data.X.Set(n-1, 1, math.Inf(1))
	res, err := Run(context.Background(), data.X, Options{Eps: 0.8, Delta: 1e-7, Centred: true, Gap: 1, Noise: noise.NewSeeded(2)})
	if err != nil {
		t.Fatal(err)
	}
	if s := sinTo(data.U, res); s > 1e-4 {
		t.Errorf("σ=0: sin %.3g, want ≈ 0", s)
	}
	for i, l := range res.Eigenvalues {
		if l != 0 {
			t.Errorf("step %d: Λ̂ = %v, want the bin [0, 0]", i+1, l)
		}
	}
	if res.Skipped != 0 {
		t.Errorf("%d steps skipped", res.Skipped)
	}
}

// TestBottomSkips covers ⊥ (spec §4): with groups of two pairs nothing
// reaches the histogram threshold, every step is skipped and the release
// is the public random start.
func TestBottomSkips(t *testing.T) {
	const n, d, T = 2000, 3, 5
	data, _ := synth.Gaussian(4, n, d, []float64{1, 0.5})
	res, err := Run(context.Background(), data.X, Options{Eps: 0.5, Delta: 1e-7, Centred: true, Steps: T, Groups: 50, Gap: 0.5, Noise: noise.NewSeeded(3)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != T {
		t.Errorf("skipped %d of %d steps", res.Skipped, T)
	}
	for _, l := range res.Eigenvalues {
		if !math.IsNaN(l) {
			t.Errorf("Λ̂ = %v for a ⊥ step, want NaN", l)
		}
	}
	if nrm := mat.Norm(res.Components, 2); math.Abs(nrm-1) > 1e-12 {
		t.Errorf("release norm %v", nrm)
	}
}

// TestDeterministic: a seeded run is a fixed function of its seed (for a
// fixed worker count), for DP-PCA and private Oja.
func TestDeterministic(t *testing.T) {
	const n, d = 300000, 4
	data, _ := synth.Gaussian(5, n, d, []float64{1, 0.3})
	for _, run := range []func(*noise.Sampler) (*Result, error){
		func(s *noise.Sampler) (*Result, error) {
			return Run(context.Background(), data.X, Options{Eps: 3, Delta: 1e-6, Calibration: CalibAnalytic, Workers: 2, Noise: s})
		},
		func(s *noise.Sampler) (*Result, error) {
			return PrivateOja(context.Background(), data.X, Options{Eps: 0.5, Delta: 1e-6, Beta: 5, Gap: 0.7, Workers: 2, Noise: s})
		},
	} {
		a, err := run(noise.NewSeeded(9))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := run(noise.NewSeeded(9))
		c, _ := run(noise.NewSeeded(10))
		if !mat.Equal(a.Components, b.Components) {
			t.Errorf("%s: same seed, different releases", a.Method)
		}
		if mat.Equal(a.Components, c.Components) {
			t.Errorf("%s: different seeds, same release", a.Method)
		}
		if s := sinTo(data.U, a); s > 0.2 {
			t.Errorf("%s: sin %.3f on an easy problem", a.Method, s)
		}
	}
}

// TestOjaReference: Algorithm 1 and its non-private minibatch form find
// v1; pair differences centre data with an unknown mean, a public mean
// works too, and a false "centred" declaration fails (why spec §0 matters).
func TestOjaReference(t *testing.T) {
	const n, d = 400000, 10
	data, _ := synth.Gaussian(6, n, d, []float64{1, 0.5})
	mean := make([]float64, d)
	for j := range mean {
		mean[j] = float64(3 + j)
	}
	for i := range n {
		floats.Add(data.X.RawRowView(i), mean)
	}
	cases := []struct {
		name string
		opt  Options
		max  float64
		min  float64
	}{
		{"Alg 1, pairs", Options{Gap: 0.5}, 0.05, 0},
		{"Alg 1, public mean", Options{Gap: 0.5, Mean: mean}, 0.05, 0},
		{"minibatch T=10, pairs", Options{Gap: 0.5, Steps: 10}, 0.15, 0}, // finite-T floor, spec §8 trend 2
		{"Alg 1, falsely centred", Options{Gap: 0.5, Centred: true}, 1, 0.5},
	}
	for _, tc := range cases {
		tc.opt.Noise = noise.NewSeeded(1)
		res, err := Oja(context.Background(), data.X, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if s := sinTo(data.U, res); s > tc.max || s < tc.min {
			t.Errorf("%s: sin %.4f, want in [%v, %v]", tc.name, s, tc.min, tc.max)
		}
	}
}

// TestErrorSource splits DP-PCA's error at d = 10, n = 1e6, ε = 0.4,
// δ = 1e-7 (with the whole-budget halves, about the noise of the paper's
// split at the dppca-gaussian bench point ε = 0.8) into privacy noise and
// optimisation: the same runs with every noise scale set to 0 (test knob)
// leave only the finite-T contraction from the random start and the
// sampling error. Measured over 21 other seeds: noise-free median sin
// 0.016–0.025, with privacy 0.13–0.14, so at this n the error is privacy
// noise. On these 5 seeds the medians are 0.04 and 0.128 (one near-
// orthogonal start costs the noise-free run most); asserted with slack:
// noise-free median ≤ 0.07 and the private median at least 2× larger.
func TestErrorSource(t *testing.T) {
	testtier.Long(t)
	const n, d = 1000000, 10
	var priv, free []float64
	for seed := uint64(21); seed <= 25; seed++ {
		data, err := synth.Gaussian(seed, n, d, []float64{1, 0.5})
		if err != nil {
			t.Fatal(err)
		}
		for _, knob := range []*testKnob{nil, {noiseScale: 0}} {
			opt := Options{Eps: 0.4, Delta: 1e-7, Centred: true, KeepOrder: true, Gap: 0.5, PublicN: n,
				Noise: noise.NewSeeded(seed), knob: knob}
			res, err := Run(context.Background(), data.X, opt)
			if err != nil {
				t.Fatal(err)
			}
			if knob == nil {
				priv = append(priv, sinTo(data.U, res))
			} else {
				free = append(free, sinTo(data.U, res))
			}
		}
	}
	mp, mf := median(priv), median(free)
	t.Logf("median sin: private %.4f %.4f, noise-free %.4f %.4f", mp, priv, mf, free)
	if mf > 0.07 {
		t.Errorf("noise-free median sin %.4f > 0.07: the optimisation (T=10, η_t = ln n/(gap·(1+t))) no longer converges", mf)
	}
	if mp < 2*mf {
		t.Errorf("private median %.4f < 2× noise-free %.4f: at n=1e6 the privacy noise should dominate", mp, mf)
	}
}
