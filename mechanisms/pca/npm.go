// Private noisy power method: Hardt and Price, "The Noisy Power Method: A
// Meta Algorithm with Applications" (NeurIPS 2014), Figure 1 (NPM) and
// Figure 3 with the spectral Gaussian noise of Lemma 4.5 (PPM-spec-G).
// Spec: power_methods.md §1–2, §6 (default L), §7 (cost).

package pca

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// defaultNPMGap is γ₀ in the default L = ⌈2·ln d/γ₀⌉ (spec §6).
const defaultNPMGap = 0.1

// npmSensitivity is the Frobenius sensitivity of C·X for X with p
// orthonormal columns, when C = Σ aaᵀ over rows of norm ≤ 1.
//
// A neighbouring data set changes C by D = aaᵀ (add/remove) or aaᵀ − bbᵀ
// (replace-one). In both cases ‖D‖₂ ≤ 1 (a difference of two PSD matrices
// with norms ≤ 1 has eigenvalues in [−1, 1]) and rank D ≤ 1 or 2, so DX has
// at most rank(D) non-zero singular values, each ≤ ‖D‖₂‖X‖₂ ≤ 1, and also
// ‖DX‖_F ≤ ‖D‖₂‖X‖_F ≤ √p. Hence Δ_F = 1 under add/remove and min(√2, √p)
// under replace-one. This is tighter than the spec's general spectral-model
// bound √p (§2 NOTE), which it implies.
func npmSensitivity(nb accounting.Neighbour, p int) float64 {
	if nb == accounting.AddRemove {
		return 1
	}
	return math.Min(math.Sqrt2, math.Sqrt(float64(p)))
}

// PlanNoisyPower validates opt for the noisy power method on d columns and
// returns the plan. Defaults: p = K + Oversample, L = ⌈2·ln d/γ₀⌉ with
// γ₀ = Gap (default 0.1).
//
// CalibZCDP: ρ* = accounting.RhoForTarget(Eps, Delta) split evenly over the
// L releases; each adds N(0, σ²) per entry with σ = Δ_F·√(L/(2ρ*)) (via
// noise.GaussianScale) and Δ_F from npmSensitivity.
//
// CalibGDP: the same with μ*²/2 in place of ρ* (μ* = accounting.MuForTarget,
// rounded down; splitCalibration), at cost GdpFor(Eps, Delta).
//
// CalibPaper: σ_N = ε⁻¹·√(4·p·L·ln(1/δ)) (Figure 3 with Lemma 4.5's
// spectral noise). Under zCDP this costs ρ ≤ ε²/(8 ln(1/δ)) since Δ_F ≤ √p,
// which converts to at most (ε, δ) only when ε ≤ 2.34·ln(1/δ) (spec §2
// NOTE); larger ε is refused.
func PlanNoisyPower(opt Options, d int) (*Plan, error) {
	opt, err := validateCommon(MethodNPM, opt, d)
	if err != nil {
		return nil, err
	}
	p := opt.K + opt.Oversample // ≤ d (validateCommon)
	if d*p > MaxIterateEntries {
		return nil, fmt.Errorf("pca npm: the d×p = %d×%d iterate exceeds %d entries: lower k or oversample", d, p, MaxIterateEntries)
	}
	L, err := powerIters(opt.Iters, opt.Gap, d)
	if err != nil {
		return nil, fmt.Errorf("pca npm: %v", err)
	}
	pl := &Plan{
		Method: MethodNPM, D: d, K: opt.K, P: p, Iters: L,
		Calibration: opt.Calibration, Neighbour: opt.Neighbour,
		Sensitivity:    npmSensitivity(opt.Neighbour, p),
		RoundingExcess: sumExcess(npmRoundings(d), math.Sqrt(float64(p))),
	}
	m := d * p
	rho, mult, cost, err := splitCalibration(opt.Calibration, opt.Eps, opt.Delta, L)
	if err != nil {
		return nil, fmt.Errorf("pca npm: %v", err)
	}
	if opt.Center { // the mean takes its share of ρ (planCenter); Calibration is not CalibPaper
		mult = math.Sqrt(float64(L) / (2 * runShare(opt, rho)))
	}
	pl.Rho, pl.NoiseMultiplier, pl.Cost = rho, mult, event(MethodNPM, cost)
	if err := checkScales(MethodNPM, pl.NoiseMultiplier, m, 0); err != nil {
		return nil, err
	}
	switch opt.Calibration {
	case CalibZCDP, CalibGDP:
		if pl.NoiseStd, err = planStd(MethodNPM, (pl.Sensitivity+pl.RoundingExcess)*roundingSlack, pl.NoiseMultiplier, m); err != nil {
			return nil, err
		}
		via := "zCDP: ρ=" + fmtG(rho)
		if opt.Calibration == CalibGDP {
			via = "exact GDP: μ=" + fmtG(pl.Cost.Mu)
		}
		pl.Note = fmt.Sprintf("calibrated to ε=%v, δ=%v via %s, noise multiplier %s per iteration (L=%d, p=%d, sensitivity %s, %s)",
			opt.Eps, opt.Delta, via, fmtG(pl.NoiseMultiplier), L, p, fmtG(pl.Sensitivity), opt.Neighbour)
	case CalibPaper:
		// The paper scales to Δ_F = √p, which bounds npmSensitivity.
		if pl.NoiseStd, err = planStd(MethodNPM, (math.Sqrt(float64(p))+pl.RoundingExcess)*roundingSlack, pl.NoiseMultiplier, m); err != nil {
			return nil, err
		}
		pl.Note = fmt.Sprintf("calibrated to ε=%v, δ=%v as in Hardt–Price Fig. 3: σ=ε⁻¹√(4pL·ln(1/δ))=%s per entry (L=%d, p=%d)",
			opt.Eps, opt.Delta, fmtG(pl.NoiseStd), L, p)
	}
	if err := pl.planCenter(opt, rho, runShare(opt, rho)); err != nil {
		return nil, err
	}
	pl.opt = opt
	pl.seal()
	return pl, nil
}

// npmGramExcess is the ℓ2 distance, beyond Δ_F, between the computed
// products Y = fl(fl(Ĉ)·X) of two neighbouring data sets when Ĉ = Σ_i T_i
// is summed elsewhere (RunGram): each row's term T_i within GramTermError
// =: E of the ideal x̃x̃ᵀ (‖x̃‖ ≤ 1), the sums exact, each entry then
// rounded once to float64.
//
// The exact products differ by (T_a − T_b)·X: the ideal terms' difference
// times X is within Δ_F (npmSensitivity), and each term's own error adds
// ‖(T − x̃x̃ᵀ)X‖_F ≤ E·‖X‖₂, with ‖X‖₂ within roundingSlack of 1: 2E for
// the two rows of a replace-one pair. Every term T_i,jk·X_kl of an entry
// of Y passes through at most d + 1 roundings (the conversion of Ĉ_jk and
// the d-term product), with majorant |T_i||X|, ‖|T_i||X|‖_F ≤ ‖T_i‖_F·‖X‖_F
// ≤ (1 + E)·√p: linalg.Excess(d+1, (1+E)·√p). The plan charges
// sumExcess(npmRoundings(d), √p), the row path's, whose d + 3 + sumRoundings
// roundings leave room for the 2E many times over at every shape
// (TestNPMGramExcessCharged): an engine's Gram needs no new charge.
func npmGramExcess(d, p int) float64 {
	return 2*GramTermError*roundingSlack + sumExcess(d+1, (1+GramTermError)*math.Sqrt(float64(p)))
}

// npmPaperEpsLimit is the largest ε for which the paper's noise
// σ = √p·√(4L·ln(1/δ))/ε delivers (ε, δ)-DP: it is ρ-zCDP with
// ρ = ε²/(8·ln(1/δ)), whose classic conversion ρ + 2√(ρ·ln(1/δ)) =
// ε²/(8·ln(1/δ)) + ε/√2 is at most ε iff ε ≤ 8(1 − 1/√2)·ln(1/δ) =
// 4(2 − √2)·ln(1/δ) ≈ 2.34·ln(1/δ) (spec §2 NOTE).
func npmPaperEpsLimit(delta float64) float64 {
	return 4 * (2 - math.Sqrt2) * math.Log(1/delta)
}

// powerIters returns the iteration count L of a noisy power method: iters
// if set, otherwise the default ⌈2·ln d/gap⌉ (at least 1) with
// defaultNPMGap for a zero gap. The error carries no method prefix.
func powerIters(iters int, gap float64, d int) (int, error) {
	if iters != 0 {
		return iters, nil
	}
	g := gap
	if g == 0 {
		g = defaultNPMGap
	}
	// Compare as a float: a tiny gap gives +Inf, whose conversion to int
	// is undefined.
	v := math.Ceil(2 * math.Log(float64(d)) / g)
	if !(v <= maxIters) {
		return 0, fmt.Errorf("gap=%v gives %.3g default iterations, more than %d: set iters or a larger gap", gap, v, maxIters)
	}
	return max(1, int(v)), nil
}

// splitCalibration calibrates releases Gaussian releases of one noise
// multiplier each (per unit of sensitivity) to the target (eps, delta).
// CalibZCDP: ρ* = accounting.RhoForTarget(eps, delta) split evenly, so the
// multiplier is √(releases/(2ρ*)), at cost accounting.GaussianZcdp(ρ*) labelled
// with the target. CalibGDP: the same split of μ*²/2 (rounded down, so that
// the releases' √(releases·1/multiplier²) never exceeds μ*), at cost
// accounting.GdpFor(eps, delta); both through accounting.GaussianTarget,
// the tabular calls' helper. CalibPaper: Hardt–Price Figure 3's √(4·releases·ln(1/δ))/ε,
// at cost accounting.Approx(eps, delta), refused above npmPaperEpsLimit.
// rho is 0 under CalibPaper. The error carries no method prefix.
func splitCalibration(c Calibration, eps, delta float64, releases int) (rho, multiplier float64, cost accounting.Event, err error) {
	switch c {
	case CalibZCDP, CalibGDP:
		// Every release is a Gaussian on the samplers with σ from
		// noise.GaussianScale at this multiplier (npm, ppm-entry): a
		// composition of Gaussian releases, marked so (or, under CalibGDP,
		// charged as the μ*-GDP event that dominates it).
		rho, cost, ok := accounting.GaussianTarget(eps, delta, c == CalibGDP)
		if !ok {
			return 0, 0, cost, fmt.Errorf("could not calibrate to eps=%v, delta=%v", eps, delta)
		}
		return rho, math.Sqrt(float64(releases) / (2 * rho)), cost, nil
	case CalibPaper:
		if limit := npmPaperEpsLimit(delta); eps > limit {
			return 0, 0, cost, fmt.Errorf("paper calibration is only valid for eps ≤ 2.34·ln(1/delta) = %.3g: use calibration zcdp", limit)
		}
		return 0, math.Sqrt(4*float64(releases)*math.Log(1/delta)) / eps, accounting.Approx(eps, delta), nil
	}
	return 0, 0, cost, fmt.Errorf("invalid calibration %d: use CalibZCDP or CalibPaper", int(c))
}

// gramPays reports whether forming C = MᵀM once beats L single-pass
// products C·X. Measured with BenchmarkGram and BenchmarkIteration
// (n=200000, d=100, 2 cores): the pass runs 2·n·d·p multiply-adds per
// iteration at ~0.9 G/s, while the Dsyrk-based Gram does n·d²/2 at about
// half that speed, so forming C costs about as much as d/(2p) iterations.
// C is never formed beyond d = 4096 (128 MiB per worker).
func gramPays(d, p, L int) bool {
	return d <= 4096 && d < 2*p*L
}

// NoisyPower runs the private noisy power method (Hardt–Price Figure 3,
// spectral Gaussian noise) on the rows of data and returns the top-K
// subspace: the leading K left singular vectors of the last noisy product
// Y_L = C·X_{L−1} + G_L, which span X_L when p = K.
func NoisyPower(ctx context.Context, data *mat.Dense, opt Options) (*Result, error) {
	d := 0
	if data != nil {
		_, d = data.Dims()
	}
	pl, err := PlanNoisyPower(opt, d)
	if err != nil {
		return nil, err
	}
	return pl.Run(ctx, data)
}

// runNPM makes one pass over data per iteration (C·X from the rows), or a
// single pass when forming C pays (gramPays).
func (pl *Plan) runNPM(ctx context.Context, data rows.Source) (*Result, error) {
	r := newClipped(data, pl.opt.Clip, pl.opt.Workers, 2)
	if gramPays(pl.D, pl.P, pl.Iters) {
		return pl.iterateNPM(ctx, r.gram, nil)
	}
	return pl.iterateNPM(ctx, nil, r.covTimes)
}

// iterateNPM runs the L noisy iterations. Each product C·X is gram's
// matrix times X when gram is set (called once, after the public start is
// drawn, as the pass of iteration 1), else times(X), a pass over the rows.
// Both are in the units of the rows scaled by 1/clip, clipped to norm ≤ 1.
func (pl *Plan) iterateNPM(ctx context.Context, gram func(context.Context) (*mat.SymDense, error), times func(context.Context, *mat.Dense) (*mat.Dense, error)) (*Result, error) {
	opt := pl.opt
	if err := ctx.Err(); err != nil {
		return nil, cancelled(MethodNPM, ctx, 1)
	}
	src := newSource(opt)
	d, p, L := pl.D, pl.P, pl.Iters

	x := randomOrthonormal(src, d, p)
	if opt.knob != nil && opt.knob.trace != nil {
		opt.knob.trace.start = append([]float64(nil), x.RawMatrix().Data...)
	}
	var c *mat.SymDense
	if gram != nil {
		var err error
		if c, err = gram(ctx); err != nil {
			return nil, passError(MethodNPM, ctx, 1, err)
		}
	}
	if opt.knob != nil && opt.knob.trace != nil {
		opt.knob.trace.gram = c != nil
	}
	var y *mat.Dense
	for l := 1; l <= L; l++ {
		if ctx.Err() != nil {
			return nil, cancelled(MethodNPM, ctx, l)
		}
		if c != nil {
			y = mat.NewDense(d, p, nil)
			y.Mul(c, x)
		} else {
			var err error
			if y, err = times(ctx, x); err != nil {
				return nil, passError(MethodNPM, ctx, l, err)
			}
		}
		src.gaussianMatrix(y, pl.NoiseStd)
		if l == 1 && opt.knob != nil && opt.knob.trace != nil {
			opt.knob.trace.first = append([]float64(nil), y.RawMatrix().Data...)
		}
		if l < L {
			x = y
			orthonormalize(x)
		}
		if opt.Progress != nil {
			opt.Progress(l, L)
		}
	}
	comps, vals, ok := topLeftSingular(y, pl.K)
	if !ok {
		return nil, fmt.Errorf("pca npm: %w", errNoConvergence)
	}
	clip2 := opt.Clip * opt.Clip
	for i := range vals {
		vals[i] *= clip2
	}
	if opt.knob != nil && opt.knob.trace != nil {
		opt.knob.trace.iterations = L
	}
	return pl.result(comps, vals, nil), nil
}

// randomOrthonormal returns a Haar-distributed d×p orthonormal matrix: the
// sign-fixed Q factor of a standard Gaussian matrix. It uses only public
// randomness.
func randomOrthonormal(src source, d, p int) *mat.Dense {
	for {
		g := mat.NewDense(d, p, nil)
		raw := g.RawMatrix().Data
		for i := range raw {
			raw[i] = src.stdNormal()
		}
		rd := orthonormalize(g)
		if minPositive(rd) {
			return g
		}
	}
}

func minPositive(v []float64) bool {
	for _, x := range v {
		if !(x > 0) {
			return false
		}
	}
	return true
}

// result assembles the public part of a run.
func (pl *Plan) result(comps *mat.Dense, vals, thresholds []float64) *Result {
	return &Result{
		Components:      comps,
		Values:          vals,
		Thresholds:      thresholds,
		Method:          pl.Method,
		Cost:            pl.Cost,
		NoiseStd:        pl.NoiseStd,
		NoiseMultiplier: pl.NoiseMultiplier,
		Iters:           pl.Iters,
		P:               pl.P,
		Calibration:     pl.Calibration.String(),
		Neighbour:       pl.Neighbour.String(),
		Note:            pl.Note,
	}
}
