package pca

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// symFromBasis returns A = Q diag(lambda) Qᵀ for orthonormal q (d×d).
func symFromBasis(q *mat.Dense, lambda []float64) *mat.SymDense {
	d, _ := q.Dims()
	a := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			s := 0.0
			for k, l := range lambda {
				s += q.At(i, k) * l * q.At(j, k)
			}
			a.SetSym(i, j, s)
		}
	}
	return a
}

// spectrum returns top followed by d−len(top) eigenvalues uniform in
// [0, bulk), from rng.
func spectrum(rng *rand.Rand, d int, top []float64, bulk float64) []float64 {
	out := append([]float64(nil), top...)
	for len(out) < d {
		out = append(out, bulk*rng.Float64())
	}
	return out
}

func identity(d int) *mat.Dense {
	q := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		q.Set(i, i, 1)
	}
	return q
}

// With the noise removed (test-only knob), PPM-entry is exact subspace
// iteration from the same public start (spec §5 check 4).
func TestPPMEntryZeroNoiseIsSubspaceIteration(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	d, k, p, L := 30, 2, 3, 40
	q := randomOrtho(rng, d, d)
	a := symFromBasis(q, spectrum(rng, d, []float64{10, 8}, 2))
	opt := EntryOptions{K: k, Oversample: p - k, Iters: L, Eps: 1, Delta: 1e-6, Bound: 100, Noise: noise.NewSeeded(7), knob: &testKnob{noiseScale: 0}}
	res, err := PPMEntry(context.Background(), a, opt)
	if err != nil {
		t.Fatal(err)
	}
	x := randomOrthonormal(source{s: noise.NewSeeded(7), scale: 1}, d, p)
	for l := 0; l < L; l++ {
		var y mat.Dense
		y.Mul(a, x)
		x = cloneDense(&y)
		orthonormalize(x)
	}
	if !mat.EqualApprox(x, res.Basis, 1e-12) {
		t.Errorf("zero-noise PPM-entry differs from subspace iteration")
	}
	truth := mat.DenseCopyOf(q.Slice(0, d, 0, k))
	// (λ3/λ2)^L = (2/8)^40: converged to rounding level.
	if e := SinThetaSq(truth, res.Components); e > 1e-12 {
		t.Errorf("zero-noise sin²θ = %g, want ≤ 1e-12 (rounding level)", e)
	}
	for l, s := range res.NoiseStds {
		want := noise.GaussianScale((math.Sqrt2*math.Sqrt(float64(p))+entryExcess(d, p, 100))*res.MaxAbs[l]*roundingSlack, res.NoiseMultiplier, d*p)
		if s != want {
			t.Fatalf("release %d: noise std %g, want %g from ‖X‖_∞ = %g", l, s, want, res.MaxAbs[l])
		}
		if res.MaxAbs[l] < 1/math.Sqrt(float64(d)) || res.MaxAbs[l] > 1 {
			t.Fatalf("‖X_%d‖_∞ = %g outside [1/√d, 1]", l, res.MaxAbs[l])
		}
	}
}

func TestPlanPPMEntry(t *testing.T) {
	base := EntryOptions{K: 2, Oversample: 2, Iters: 10, Eps: 1, Delta: 1e-6, Bound: 1}
	pl, err := PlanPPMEntry(base, 50)
	if err != nil {
		t.Fatal(err)
	}
	rho := accounting.RhoForTarget(1, 1e-6)
	if pl.Cost.Kind != accounting.ZCDP || pl.Cost.Rho != rho || pl.Cost.Mechanism != "pca/ppm-entry" {
		t.Errorf("zcdp cost %+v, want ρ=%g labelled pca/ppm-entry", pl.Cost, rho)
	}
	if z := math.Sqrt(10 / (2 * rho)); pl.NoiseMultiplier != z || pl.Releases != 10 || pl.P != 4 {
		t.Errorf("multiplier %g releases %d p %d, want %g, 10, 4", pl.NoiseMultiplier, pl.Releases, pl.P, z)
	}
	if pl.Sensitivity != math.Sqrt2*2 {
		t.Errorf("sensitivity per unit ‖X‖_∞ %g, want √2·√p = %g", pl.Sensitivity, math.Sqrt2*2)
	}
	if pl.RoundingExcess <= 0 || pl.RoundingExcess > 1e-9*pl.Sensitivity {
		t.Errorf("rounding excess %g: want a tiny positive charge", pl.RoundingExcess)
	}
	paper := base
	paper.Calibration = CalibPaper
	pp, err := PlanPPMEntry(paper, 50)
	if err != nil {
		t.Fatal(err)
	}
	// σ_N·√2 per unit ‖X‖_∞ = √2·√p · √(4L ln(1/δ))/ε.
	if z := math.Sqrt(4 * 10 * math.Log(1e6)); math.Abs(pp.NoiseMultiplier-z) > 1e-12*z || pp.Cost != event(MethodPPMEntry, accounting.Approx(1, 1e-6)) {
		t.Errorf("paper plan: multiplier %g cost %+v, want %g and Approx(1, 1e-6)", pp.NoiseMultiplier, pp.Cost, z)
	}
	lra, err := PlanLowRank(EntryOptions{K: 3, Iters: 10, Eps: 1, Delta: 1e-6, Bound: 1}, 50)
	if err != nil {
		t.Fatal(err)
	}
	if lra.P != 6 || lra.Releases != 11 || lra.NoiseMultiplier != math.Sqrt(11/(2*rho)) {
		t.Errorf("lra plan p=%d releases=%d z=%g: want p=2k=6 and L+1=11 releases", lra.P, lra.Releases, lra.NoiseMultiplier)
	}
	def, err := PlanPPMEntry(EntryOptions{Eps: 1, Delta: 1e-6, Bound: 1}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := int(math.Ceil(2 * math.Log(100) / 0.1)); def.Iters != want || def.K != 1 || def.P != 1 {
		t.Errorf("defaults L=%d k=%d p=%d, want L=%d, k=p=1", def.Iters, def.K, def.P, want)
	}

	bad := []struct {
		name string
		lra  bool
		opt  EntryOptions
		d    int
		want string
	}{
		{"no bound", false, EntryOptions{Eps: 1, Delta: 1e-6}, 10, "bound"},
		{"huge bound", false, EntryOptions{Eps: 1, Delta: 1e-6, Bound: 1e300}, 10, "bound"},
		{"inf bound", false, EntryOptions{Eps: 1, Delta: 1e-6, Bound: math.Inf(1)}, 10, "bound"},
		{"k > d", false, EntryOptions{K: 11, Eps: 1, Delta: 1e-6, Bound: 1}, 10, "k=11"},
		{"p > d", false, EntryOptions{K: 5, Oversample: 6, Eps: 1, Delta: 1e-6, Bound: 1}, 10, "p=11"},
		{"lra 2k > d", true, EntryOptions{K: 6, Eps: 1, Delta: 1e-6, Bound: 1}, 10, "2k"},
		{"lra oversample", true, EntryOptions{K: 2, Oversample: 1, Eps: 1, Delta: 1e-6, Bound: 1}, 10, "oversample"},
		{"no eps", false, EntryOptions{Delta: 1e-6, Bound: 1}, 10, "eps"},
		{"paper large eps", false, EntryOptions{Eps: 100, Delta: 1e-6, Bound: 1, Calibration: CalibPaper}, 10, "zcdp"},
		{"negative iters", false, EntryOptions{Iters: -1, Eps: 1, Delta: 1e-6, Bound: 1}, 10, "iters"},
		{"empty", false, EntryOptions{Eps: 1, Delta: 1e-6, Bound: 1}, 0, "d=0"},
	}
	for _, c := range bad {
		var err error
		if c.lra {
			_, err = PlanLowRank(c.opt, c.d)
		} else {
			_, err = PlanPPMEntry(c.opt, c.d)
		}
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func TestPPMEntryRunChecks(t *testing.T) {
	a := symFromBasis(identity(8), []float64{3, 2, 1, 1, 1, 1, 1, 1})
	opt := EntryOptions{Iters: 3, Eps: 1, Delta: 1e-6, Bound: 5, Noise: noise.NewSeeded(1)}
	pl, err := PlanPPMEntry(opt, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Run(context.Background(), mat.NewSymDense(9, nil)); err == nil || !strings.Contains(err.Error(), "d=8") {
		t.Errorf("wrong size: error %v", err)
	}
	if _, err := pl.Run(context.Background(), nil); err == nil {
		t.Error("nil matrix accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pl.Run(ctx, a); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: error %v, want context.Canceled", err)
	}
	pl.NoiseMultiplier /= 2
	if _, err := pl.Run(context.Background(), a); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("tampered plan: error %v", err)
	}
	// Non-finite entries follow the public rules instead of failing.
	b := mat.NewSymDense(8, nil)
	b.CopySym(a)
	b.SetSym(0, 1, math.NaN())
	b.SetSym(2, 2, math.Inf(1))
	if _, err := PPMEntry(context.Background(), b, opt); err != nil {
		t.Errorf("non-finite entries: %v", err)
	}
}

// Spec §5 check 7 (Thm 1.3 vs 1.4): PPM-entry's noise scales with
// ‖X_{ℓ−1}‖_∞. For A = QΛQᵀ with Haar Q (coherence μ(A) = O(log d)) the
// iterates stay incoherent, max_ℓ‖X_ℓ‖_∞ ~ √(log d/d) (Thm 4.9), while for
// Q = I they converge to standard basis vectors, ‖X‖_∞ → 1. At the same ε
// and spectrum the error (sin θ ∝ σ_N·max‖X‖_∞) is therefore smaller for
// the incoherent matrix by about the ratio of the ‖X‖_∞, squared for sin².
//
// Measured (9 seeds, d = 200, k = 2, p = 4, L = 12, ε = 1, δ = 1e-6,
// λ = (4000, 3200), bulk U[0, 1)): median max‖X‖_∞ 0.273 (Haar) vs 0.987
// (identity), √(ln d/d) = 0.163; median sin² 0.0036 vs 0.055, ratio 15
// against the predicted (0.987/0.273)² = 13. The tolerances below are a
// factor ≥ 1.5 from these medians.
func TestPPMEntryIncoherence(t *testing.T) {
	const d, k, p, L, seeds = 200, 2, 4, 12, 9
	run := func(haar bool) (sin2, inf float64) {
		var errs, infs []float64
		for seed := uint64(1); seed <= seeds; seed++ {
			rng := rand.New(rand.NewPCG(seed, 11))
			q := identity(d)
			if haar {
				q = randomOrtho(rng, d, d)
			}
			a := symFromBasis(q, spectrum(rng, d, []float64{4000, 3200}, 1))
			res, err := PPMEntry(context.Background(), a, EntryOptions{K: k, Oversample: p - k, Iters: L, Eps: 1, Delta: 1e-6, Bound: 1e4, Noise: noise.NewSeeded(seed)})
			if err != nil {
				t.Fatal(err)
			}
			errs = append(errs, SinThetaSq(mat.DenseCopyOf(q.Slice(0, d, 0, k)), res.Components))
			// MaxAbs[0] is the random start; the theorem is about the
			// iterates that follow.
			infs = append(infs, slices.Max(res.MaxAbs[1:]))
		}
		return median(errs), median(infs)
	}
	hErr, hInf := run(true)
	iErr, iInf := run(false)
	scale := math.Sqrt(math.Log(d) / d)
	t.Logf("median max‖X‖_∞: Haar %.3g (%.2f·√(ln d/d)), identity %.3g; median sin²θ: Haar %.3g, identity %.3g (ratio %.3g, predicted %.3g)",
		hInf, hInf/scale, iInf, hErr, iErr, iErr/hErr, (iInf/hInf)*(iInf/hInf))
	if hInf > 2.5*scale {
		t.Errorf("Haar: median max‖X‖_∞ = %.3g, want ≤ 2.5·√(ln d/d) = %.3g", hInf, 2.5*scale)
	}
	if iInf < 0.9 {
		t.Errorf("identity: median max‖X‖_∞ = %.3g, want ≥ 0.9 (iterates near e_1, e_2)", iInf)
	}
	if !(iErr > 5*hErr) {
		t.Errorf("median sin²θ: incoherent %.3g not clearly below coherent %.3g (want a ratio > 5)", hErr, iErr)
	}
	if pred := (iInf / hInf) * (iInf / hInf); iErr/hErr < pred/3 || iErr/hErr > 3*pred {
		t.Errorf("error ratio %.3g not within a factor 3 of the ‖X‖_∞ prediction %.3g", iErr/hErr, pred)
	}
	if hErr > 0.02 || iErr > 0.5 {
		t.Errorf("errors saturated (Haar %.3g, identity %.3g): the comparison needs unsaturated runs", hErr, iErr)
	}
}
