// Private power method under entry-level differential privacy: Hardt and
// Price, "The Noisy Power Method: A Meta Algorithm with Applications"
// (NeurIPS 2014), Figure 3 (PPM) with the ‖X_{ℓ−1}‖_∞ noise scaling of
// Claim 4.2 and Theorems 1.3/1.4, Corollary 4.3 (low-rank approximation,
// lra.go) and the Laplace (ε, 0) variant of Lemma 4.5/Corollary 4.7
// (EntryOptions.Laplace). Spec: power_methods.md §0 NOTE, §2, §6
// ("PPM-entry scope").

package pca

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Method names of the entry-level variants. They take a symmetric matrix,
// not rows, so they are not part of Methods, PlanMethod or Run.
//
// They stay on an in-memory *mat.SymDense rather than a rows.Source: their
// private units are the matrix's entries, not rows of data, and the
// matrix is the d×d operator itself (at most MaxGaussDim-sized, public
// shape), multiplied whole in every step; there is no row count to hide
// and nothing that grows with a number of records.
const (
	MethodPPMEntry = "ppm-entry"
	MethodLRA      = "lra"
)

// EntryOptions configures PPMEntry and LowRank. The private units are the
// entries of a symmetric d×d matrix A: two matrices are neighbours when they
// differ in one entry (i, j) and its mirror (j, i), each by at most Change
// (default 1) after clipping to Bound.
//
// This is NOT a guarantee about the rows of a data matrix. For PCA of M
// under row-level DP use NoisyPower (npm), whose noise is scaled to the
// spectral sensitivity of MᵀM: the ‖X‖_∞ scaling used here would be unsound
// for a row change, which moves a whole row and column of MᵀM (spec §0
// NOTE).
type EntryOptions struct {
	// K is the number of components (default 1).
	K int
	// Oversample adds columns to the iterate: p = K + Oversample ≤ d
	// (PPMEntry only; LowRank always uses p = 2K).
	Oversample int
	// Iters is L, the number of power steps (LowRank makes L+1 releases).
	// 0 picks ⌈2·ln d/γ₀⌉ with γ₀ = Gap (default 0.1). It must not depend on
	// the private matrix.
	Iters int
	// Gap is γ₀ for the default Iters, in (0, 1] (0: 0.1).
	Gap float64
	// Eps and Delta are the target privacy parameters of the whole run.
	Eps, Delta float64
	// Calibration selects the accounting (default CalibZCDP).
	Calibration Calibration
	// Bound is a public bound on |A_ij| (required). Entries are clipped to
	// [−Bound, Bound] and NaN entries read as 0; both rules are 1-Lipschitz
	// on neighbouring entries, so they keep the guarantee. Bound enters only
	// the floating-point rounding charge, which grows with it.
	Bound float64
	// Change is the most one entry (and its mirror) may differ between
	// neighbours, after clipping to Bound; 0 means 1, the paper's Def. 4.1.
	// A caller whose neighbours replace an entry by any value in
	// [−Bound, Bound] sets Change = 2·Bound.
	Change float64
	// Laplace selects the pure (ε, 0) variant (Lemma 4.5/Corollary 4.7 with
	// Laplace noise): Delta must be 0 and Calibration is unused. Each of the
	// R releases gets ε/R (basic composition) and discrete Laplace noise of
	// scale ℓ1-sensitivity/(ε/R), where the ℓ1 sensitivity of A·X under a
	// symmetric entry change is 2·Change·p·‖X‖_∞ (rows i and j of A·X each
	// move by at most Change·‖X_{j,:}‖_1 ≤ Change·p·‖X‖_∞). The paper's
	// λ = 10·p·L·√d/ε is the spectral model's (‖DX‖_1 ≤ √d per column) with
	// slack; the entry model needs no √d and no factor 10.
	Laplace bool
	// Noise is the noise source; nil means noise.New(), the cryptographic
	// sampler. Seeded samplers are for tests and public benchmarks only.
	Noise *noise.Sampler

	knob *testKnob
}

// EntryPlan is the data-free part of a PPMEntry or LowRank run: validated
// parameters, the noise multiplier and the exact privacy cost. Build it
// with PlanPPMEntry or PlanLowRank and charge Cost before Run.
type EntryPlan struct {
	Method string
	// D is the matrix dimension, K the number of components, P the columns
	// of the iterate.
	D, K, P int
	// Iters is L; Releases is the number of noisy products (L, or L+1 for
	// LowRank), the count the calibration splits the budget over.
	Iters, Releases int
	// Cost is what the run spends.
	Cost        accounting.Event
	Calibration Calibration
	// Rho is the zCDP budget under CalibZCDP (0 under CalibPaper).
	Rho float64
	// Sensitivity is the Frobenius sensitivity of A·X per unit of ‖X‖_∞:
	// √2·√p·Change (the √2 because a symmetric neighbour changes two
	// entries); with Laplace, the ℓ1 sensitivity 2·p·Change.
	Sensitivity float64
	// RoundingExcess is the extra sensitivity per unit of ‖X‖_∞ charged for
	// the rounding of the d-term dot products of A·X (see entryExcess), in
	// ℓ2 (Gaussian) or ℓ1 (Laplace).
	RoundingExcess float64
	// Laplace marks the pure (ε, 0) variant; StepEps is then the ε of each
	// release, and the scale of release ℓ is noise.LaplaceScale((Sensitivity+
	// RoundingExcess)·‖X_{ℓ−1}‖_∞·(1+1e-9), StepEps, d·p).
	Laplace bool
	StepEps float64
	Change  float64
	// NoiseMultiplier is z = std/sensitivity of each release. The std of
	// release ℓ is noise.GaussianScale((Sensitivity+RoundingExcess)·
	// ‖X_{ℓ−1}‖_∞·(1+1e-9), z, d·p); it depends only on earlier releases.
	NoiseMultiplier float64
	Bound           float64
	Note            string

	opt    EntryOptions
	sealed *EntryPlan
}

// EntryResult is a release of PPMEntry or LowRank. Every field is a
// differentially private output (or post-processing of one) or a public
// parameter.
type EntryResult struct {
	// Basis is X_L, the last orthonormal iterate (d×p).
	Basis *mat.Dense
	// Components holds K orthonormal columns (d×K), leading first, each with
	// its largest-magnitude entry positive.
	Components *mat.Dense
	// Values estimate the top-K eigenvalues (PPMEntry: singular values of the
	// last noisy product, i.e. |λ|; LowRank: eigenvalues of the symmetrised
	// X_LᵀY_{L+1}).
	Values []float64
	// LowRank is B = X_L·Y_{L+1}ᵀ (rank ≤ 2K), LowRank only.
	LowRank *mat.Dense
	// MaxAbs[ℓ] is ‖X_ℓ‖_∞ for the iterate each release multiplied, and
	// NoiseStds[ℓ] the std of that release (the Laplace scale b with
	// Laplace, whose std is √2·b).
	MaxAbs, NoiseStds []float64
	Method            string
	Cost              accounting.Event
	Iters, P          int
	NoiseMultiplier   float64
	Calibration       string
	Note              string
}

// entryExcess bounds, per unit of ‖X‖_∞, how far the computed products
// fl(A·X) and fl(A'·X) of neighbours can differ beyond the exact A·X − A'·X.
// Each entry is a d-term dot product, so whatever the summation order (BLAS
// may block or fuse) it is within γ_d·Σ_k |A_ik||X_kj| ≤ γ_d·d·Bound·‖X‖_∞ of
// exact, with γ_d = d·u/(1 − d·u), u = 2^-53. Two products differ by twice
// that per entry, and over d·p entries by 2·γ_d·d·Bound·√(d·p)·‖X‖_∞ in ℓ2.
func entryExcess(d, p int, bound float64) float64 {
	return entryExcessPerEntry(d, bound) * math.Sqrt(float64(d)*float64(p))
}

// entryExcessL1 is entryExcess in ℓ1: the per-entry bound times d·p.
func entryExcessL1(d, p int, bound float64) float64 {
	return entryExcessPerEntry(d, bound) * float64(d) * float64(p)
}

func entryExcessPerEntry(d int, bound float64) float64 {
	du := float64(d) * 0x1p-53
	gamma := du / (1 - du)
	return 2 * gamma * float64(d) * bound
}

// PlanPPMEntry validates opt for PPM-entry on a d×d symmetric matrix and
// returns the plan. It reads no data.
//
// CalibZCDP: ρ* = accounting.RhoForTarget(Eps, Delta) split evenly over
// the L releases, z = √(L/(2ρ*)); cost accounting.Zcdp(ρ*).
// CalibPaper: z = √(4L·ln(1/δ))/ε, i.e. Figure 3's σ_N = ε⁻¹√(4pL·ln(1/δ))
// per unit of ‖X‖_∞ times the √2 of symmetric neighbours (spec §2 CHOICE);
// cost accounting.Approx(ε, δ), refused for ε > 2.34·ln(1/δ) where the
// paper's σ_N no longer implies (ε, δ).
func PlanPPMEntry(opt EntryOptions, d int) (*EntryPlan, error) {
	return planEntry(MethodPPMEntry, opt, d)
}

func planEntry(method string, opt EntryOptions, d int) (*EntryPlan, error) {
	fail := func(format string, a ...any) (*EntryPlan, error) {
		return nil, fmt.Errorf("pca %s: "+format, append([]any{method}, a...)...)
	}
	if d < 1 {
		return fail("the matrix needs at least one row, got d=%d", d)
	}
	if opt.K == 0 {
		opt.K = 1
	}
	if opt.K < 0 || opt.K > d {
		return fail("k=%d components requested but d=%d: use 1 ≤ k ≤ d", opt.K, d)
	}
	if opt.Oversample < 0 {
		return fail("oversample=%d must be ≥ 0", opt.Oversample)
	}
	p := opt.K + opt.Oversample
	if method == MethodLRA {
		if opt.Oversample != 0 {
			return fail("oversample=%d: the low-rank approximation always iterates p = 2k columns; leave oversample at 0", opt.Oversample)
		}
		p = 2 * opt.K
	}
	if p > d {
		return fail("p=%d columns exceed d=%d: lower k (lra needs 2k ≤ d) or oversample", p, d)
	}
	if opt.Laplace {
		if err := checkPureTarget(opt.Eps, opt.Delta); err != nil {
			return fail("%v", err)
		}
		if opt.Calibration != CalibZCDP {
			return fail("the Laplace variant is calibrated by basic composition of pure-ε releases; leave the calibration at its default")
		}
	} else if err := checkTarget(opt.Eps, opt.Delta); err != nil {
		return fail("%v", err)
	}
	if opt.Calibration != CalibZCDP && opt.Calibration != CalibPaper {
		return fail("invalid calibration %d: use CalibZCDP or CalibPaper", int(opt.Calibration))
	}
	if opt.Change == 0 {
		opt.Change = 1
	}
	if !(opt.Change > 0) || math.IsInf(opt.Change, 0) {
		return fail("change=%v: the most one entry may change between neighbours must be a finite number > 0", opt.Change)
	}
	if !(opt.Bound > 0) || math.IsInf(opt.Bound, 0) {
		return fail("bound=%v: set Bound to a public, finite bound > 0 on the magnitude of the matrix entries", opt.Bound)
	}
	if opt.Gap < 0 || opt.Gap > 1 || math.IsNaN(opt.Gap) {
		return fail("gap=%v: the assumed relative eigengap must be in (0, 1] (0 for the default)", opt.Gap)
	}
	if opt.Iters < 0 || opt.Iters > maxIters {
		return fail("iters=%d: use 0 for the default or 1..%d", opt.Iters, maxIters)
	}
	L, err := powerIters(opt.Iters, opt.Gap, d)
	if err != nil {
		return fail("%v", err)
	}
	releases := L
	if method == MethodLRA {
		releases = L + 1
	}
	pl := &EntryPlan{
		Method: method, D: d, K: opt.K, P: p, Iters: L, Releases: releases,
		Calibration:    opt.Calibration,
		Sensitivity:    math.Sqrt2 * math.Sqrt(float64(p)) * opt.Change,
		RoundingExcess: entryExcess(d, p, opt.Bound),
		Bound:          opt.Bound,
		Change:         opt.Change,
	}
	m := d * p
	if opt.Laplace {
		return pl.planLaplace(opt)
	}
	rho, mult, cost, err := splitCalibration(opt.Calibration, opt.Eps, opt.Delta, releases)
	if err != nil {
		return fail("%v", err)
	}
	pl.Rho, pl.NoiseMultiplier, pl.Cost = rho, mult, event(method, cost)
	switch opt.Calibration {
	case CalibZCDP:
		pl.Note = fmt.Sprintf("entry-level DP (one symmetric entry pair changes by ≤ %v), calibrated to ε=%v, δ=%v via zCDP: ρ=%s, noise multiplier %s per release (%d releases, p=%d, sensitivity √2·√p·%v·‖X‖_∞)",
			opt.Change, opt.Eps, opt.Delta, fmtG(rho), fmtG(pl.NoiseMultiplier), releases, p, opt.Change)
	case CalibPaper:
		pl.Note = fmt.Sprintf("entry-level DP (one symmetric entry pair changes by ≤ %v), calibrated as in Hardt–Price Fig. 3: σ=√2·%v·‖X‖_∞·ε⁻¹√(4pL·ln(1/δ)) per entry (%d releases, p=%d)",
			opt.Change, opt.Change, releases, p)
	}
	// The smallest possible ‖X‖_∞ of an orthonormal d×p matrix is 1/√d, so
	// this checks the whole range of scales a run can need.
	if err := checkScales(method, pl.NoiseMultiplier, m, 0); err != nil {
		return nil, err
	}
	// ‖X‖_∞ ≤ 1, so this is the largest std a release can need; a huge
	// Bound makes the rounding charge, and with it the noise, unbounded.
	if top := (pl.Sensitivity + pl.RoundingExcess) * roundingSlack * pl.NoiseMultiplier; !(top < 0x1p800) {
		return fail("bound=%v makes the floating-point rounding charge too large to represent the noise: use a smaller public bound on the entries", opt.Bound)
	}
	// The std of a release scales with ‖X_{ℓ−1}‖_∞ ∈ [1/√d, 1]: both ends
	// must be valid sampler scales, so that no iterate can make the
	// calibration panic after the charge.
	for _, inf := range []float64{1 / math.Sqrt(float64(d)), 1} {
		if _, err := planStd(method, (pl.Sensitivity+pl.RoundingExcess)*inf*roundingSlack, pl.NoiseMultiplier, m); err != nil {
			return nil, err
		}
	}
	pl.opt = opt
	c := *pl
	pl.sealed = &c
	return pl, nil
}

func (pl *EntryPlan) public() EntryPlan {
	c := *pl
	c.opt, c.sealed = EntryOptions{}, nil
	return c
}

// PPMEntry runs the private power method of Figure 3 on the symmetric
// matrix a under entry-level DP and returns X_L and the top-K components
// (leading left singular vectors of the last noisy product Y_L). See
// EntryOptions for the neighbouring relation; it is not row-level DP.
func PPMEntry(ctx context.Context, a *mat.SymDense, opt EntryOptions) (*EntryResult, error) {
	d := 0
	if a != nil {
		d = a.SymmetricDim()
	}
	pl, err := PlanPPMEntry(opt, d)
	if err != nil {
		return nil, err
	}
	return pl.Run(ctx, a)
}

// Run executes the plan on the symmetric matrix a (D×D). Charge pl.Cost
// first; a plan whose fields were changed is refused.
func (pl *EntryPlan) Run(ctx context.Context, a *mat.SymDense) (*EntryResult, error) {
	if pl == nil || pl.sealed == nil {
		return nil, errors.New("pca: EntryPlan.Run needs a plan from PlanPPMEntry or PlanLowRank")
	}
	if pl.public() != pl.sealed.public() {
		return nil, fmt.Errorf("pca %s: the plan's fields were changed after planning, so the run would not be the one its Cost describes: make a new plan", pl.Method)
	}
	if a == nil {
		return nil, fmt.Errorf("pca %s: no matrix", pl.Method)
	}
	if n := a.SymmetricDim(); n != pl.D {
		return nil, fmt.Errorf("pca %s: the matrix is %d×%d but the plan was made for d=%d", pl.Method, n, n, pl.D)
	}
	it, err := pl.iterate(ctx, a)
	if err != nil {
		return nil, err
	}
	if pl.Method == MethodLRA {
		return pl.lowRankResult(it)
	}
	comps, vals, ok := topLeftSingular(it.y, pl.K)
	if !ok {
		return nil, fmt.Errorf("pca %s: %w", pl.Method, errNoConvergence)
	}
	return pl.result(it, comps, vals, nil), nil
}

// entryRun is the state after the last release: y = Y_R (the last noisy
// product) and xPrev = X_{R−1}, the iterate it multiplied; x = X_R.
type entryRun struct {
	xPrev, y, x       *mat.Dense
	maxAbs, noiseStds []float64
}

// iterate makes pl.Releases noisy products Y_ℓ = A·X_{ℓ−1} + G_ℓ with
// G_ℓ ~ N(0, σ_ℓ²) entrywise, σ_ℓ ∝ ‖X_{ℓ−1}‖_∞, and X_ℓ = QR(Y_ℓ).
func (pl *EntryPlan) iterate(ctx context.Context, a *mat.SymDense) (*entryRun, error) {
	opt := pl.opt
	if ctx.Err() != nil {
		return nil, cancelled(pl.Method, ctx, 1)
	}
	s := opt.Noise
	if s == nil {
		s = noise.New()
	}
	src := source{s: s, scale: 1}
	if opt.knob != nil {
		src.scale, src.tr = opt.knob.noiseScale, opt.knob.trace
	}
	d, p := pl.D, pl.P
	x := randomOrthonormal(src, d, p)
	if src.tr != nil {
		src.tr.start = append([]float64(nil), x.RawMatrix().Data...)
	}
	am := clipEntries(a, opt.Bound)
	run := &entryRun{}
	for l := 1; l <= pl.Releases; l++ {
		if ctx.Err() != nil {
			return nil, cancelled(pl.Method, ctx, l)
		}
		inf := maxAbs(x)
		y := mat.NewDense(d, p, nil)
		y.Mul(am, x)
		var std float64
		if pl.Laplace {
			std = noise.LaplaceScale((pl.Sensitivity+pl.RoundingExcess)*inf*roundingSlack, pl.StepEps, d*p)
			src.laplaceMatrix(y, std)
		} else {
			std = noise.GaussianScale((pl.Sensitivity+pl.RoundingExcess)*inf*roundingSlack, pl.NoiseMultiplier, d*p)
			src.gaussianMatrix(y, std)
		}
		if src.tr != nil && l == 1 {
			src.tr.first = append([]float64(nil), y.RawMatrix().Data...)
		}
		run.maxAbs = append(run.maxAbs, inf)
		run.noiseStds = append(run.noiseStds, std)
		run.xPrev, run.y = x, y
		x = cloneDense(y)
		orthonormalize(x)
	}
	run.x = x
	return run, nil
}

// clipEntries returns a copy of a with entries clipped to [−bound, bound]
// and NaN read as 0 (public rules, see EntryOptions.Bound).
func clipEntries(a *mat.SymDense, bound float64) *mat.SymDense {
	d := a.SymmetricDim()
	out := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := a.At(i, j)
			switch {
			case math.IsNaN(v):
				v = 0
			case v > bound:
				v = bound
			case v < -bound:
				v = -bound
			}
			out.SetSym(i, j, v)
		}
	}
	return out
}

// maxAbs returns ‖x‖_∞ = max_ij |x_ij|, computed exactly.
func maxAbs(x *mat.Dense) float64 {
	m := 0.0
	r, c := x.Dims()
	for i := 0; i < r; i++ {
		for _, v := range x.RawRowView(i)[:c] {
			m = math.Max(m, math.Abs(v))
		}
	}
	return m
}

func (pl *EntryPlan) result(it *entryRun, comps *mat.Dense, vals []float64, b *mat.Dense) *EntryResult {
	return &EntryResult{
		Basis: it.x, Components: comps, Values: vals, LowRank: b,
		MaxAbs: it.maxAbs, NoiseStds: it.noiseStds,
		Method: pl.Method, Cost: pl.Cost, Iters: pl.Iters, P: pl.P,
		NoiseMultiplier: pl.NoiseMultiplier, Calibration: pl.calibrationName(), Note: pl.Note,
	}
}
