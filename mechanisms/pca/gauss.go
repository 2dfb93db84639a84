// Analyze Gauss: Dwork, Talwar, Thakurta and Zhang, "Analyze Gauss: Optimal
// Bounds for Privacy-Preserving Principal Component Analysis" (STOC 2014),
// the baseline of both seeds (000 Table 1; 002 L92–96): perturb the
// second-moment matrix once with symmetric Gaussian noise and take its top-k
// eigenvectors. Spec: dppca.md §8 "Baseline Analyze Gauss".

package pca

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// gaussSensitivity is the ℓ2 sensitivity of v(C) = (C_ii, √2·C_ij for
// i < j), the coordinates that get independent noise (frobeniusGaussian),
// for C = Σ aaᵀ over rows of norm ≤ 1; ‖v(D)‖ = ‖D‖_F. Add/remove changes
// C by aaᵀ, ‖aaᵀ‖_F = ‖a‖² ≤ 1. Replace-one changes it by D = aaᵀ − bbᵀ,
// ‖D‖²_F = ‖a‖⁴ + ‖b‖⁴ − 2⟨a,b⟩² ≤ 2 (tight at a = e_1, b = e_2); the
// triangle inequality alone would give 2.
//
// Until issue 12 the noise went on the upper triangle u(C) = (C_ii, C_ij),
// whose sensitivity is the same (‖u(D)‖² = (‖D‖²_F + Σ D_ii²)/2 ≤ 1 or 2),
// so the off-diagonal entries, which set the spectral norm of the noise,
// got √2 times the noise they need.
func gaussSensitivity(nb accounting.Neighbour) float64 {
	if nb == accounting.AddRemove {
		return 1
	}
	return math.Sqrt2
}

// PlanAnalyzeGauss validates opt for Analyze Gauss on d columns. It is one
// Gaussian release of d(d+1)/2 coordinates.
//
// CalibZCDP: σ = Δ·√(1/(2ρ*)), ρ* = accounting.RhoForTarget(Eps, Delta).
// CalibGDP: σ = Δ/μ*, μ* = accounting.MuForTarget(Eps, Delta) (through
// accounting.GaussianTarget, as the tabular calls), at cost GdpFor.
// CalibPaper: σ = Δ·√(2·ln(1.25/δ))/ε, the classical Gaussian mechanism,
// valid only for ε < 1 (larger ε is refused).
func PlanAnalyzeGauss(opt Options, d int) (*Plan, error) {
	opt, err := validateCommon(MethodGauss, opt, d)
	if err != nil {
		return nil, err
	}
	if opt.Oversample != 0 {
		return nil, fmt.Errorf("pca gauss: oversample applies to npm only; leave it 0")
	}
	if opt.Iters > 1 {
		return nil, fmt.Errorf("pca gauss: Analyze Gauss is a single release; leave iters 0")
	}
	if d > MaxGaussDim {
		return nil, fmt.Errorf("pca gauss: d=%d columns: Analyze Gauss forms d×d matrices and accepts d ≤ %d; use method npm", d, MaxGaussDim)
	}
	pl := &Plan{
		Method: MethodGauss, D: d, K: opt.K, P: opt.K, Iters: 1,
		Calibration: opt.Calibration, Neighbour: opt.Neighbour,
		Sensitivity: gaussSensitivity(opt.Neighbour),
	}
	m := d * (d + 1) / 2
	switch opt.Calibration {
	case CalibZCDP, CalibGDP:
		// One Gaussian release on the samplers, σ from noise.GaussianScaleChecked
		// (planStd) with the lattice slack: a Gaussian-marked ρ*-zCDP event
		// (which the gdp accountant composes as √(2ρ*)), or on gdp datasets the
		// μ*-GDP event with ρ = μ*²/2 rounded down.
		rho, cost, ok := accounting.GaussianTarget(opt.Eps, opt.Delta, opt.Calibration == CalibGDP)
		if !ok {
			return nil, fmt.Errorf("pca gauss: could not calibrate to eps=%v, delta=%v", opt.Eps, opt.Delta)
		}
		pl.Rho = rho
		pl.NoiseMultiplier = math.Sqrt(1 / (2 * runShare(opt, rho)))
		pl.Cost = event(MethodGauss, cost)
	case CalibPaper:
		if opt.Eps >= 1 {
			return nil, fmt.Errorf("pca gauss: paper calibration uses the classical Gaussian mechanism, proven only for eps < 1: use calibration zcdp")
		}
		pl.NoiseMultiplier = math.Sqrt(2*math.Log(1.25/opt.Delta)) / opt.Eps
		pl.Cost = event(MethodGauss, accounting.Approx(opt.Eps, opt.Delta))
	}
	if err := checkScales(MethodGauss, pl.NoiseMultiplier, m, 0); err != nil {
		return nil, err
	}
	// One more rounding than the Gram entries: √2·C_ij (frobeniusGaussian).
	pl.RoundingExcess = sumExcess(gaussRoundings+1, 1)
	if pl.NoiseStd, err = planStd(MethodGauss, (pl.Sensitivity+pl.RoundingExcess)*roundingSlack, pl.NoiseMultiplier, m); err != nil {
		return nil, err
	}
	switch opt.Calibration {
	case CalibZCDP:
		pl.Note = fmt.Sprintf("calibrated to ε=%v, δ=%v via zCDP: ρ=%s, noise multiplier %s, std %s per entry of the %d×%d covariance (%s)",
			opt.Eps, opt.Delta, fmtG(pl.Rho), fmtG(pl.NoiseMultiplier), fmtG(pl.NoiseStd), d, d, opt.Neighbour)
	case CalibGDP:
		pl.Note = fmt.Sprintf("calibrated to ε=%v, δ=%v via exact GDP: μ=%s, noise multiplier %s, std %s per entry of the %d×%d covariance (%s)",
			opt.Eps, opt.Delta, fmtG(pl.Cost.Mu), fmtG(pl.NoiseMultiplier), fmtG(pl.NoiseStd), d, d, opt.Neighbour)
	default:
		pl.Note = fmt.Sprintf("calibrated to ε=%v, δ=%v with the classical Gaussian mechanism: std %s per entry (%s)",
			opt.Eps, opt.Delta, fmtG(pl.NoiseStd), opt.Neighbour)
	}
	if err := pl.planCenter(opt, pl.Rho, runShare(opt, pl.Rho)); err != nil {
		return nil, err
	}
	pl.opt = opt
	pl.seal()
	return pl, nil
}

// AnalyzeGauss releases C + Z, Z symmetric Gaussian, and returns its top-K
// eigenvectors, where C = Σ aaᵀ over the clipped, scaled rows.
func AnalyzeGauss(ctx context.Context, data *mat.Dense, opt Options) (*Result, error) {
	d := 0
	if data != nil {
		_, d = data.Dims()
	}
	pl, err := PlanAnalyzeGauss(opt, d)
	if err != nil {
		return nil, err
	}
	return pl.Run(ctx, data)
}

// runGauss makes a single pass over data, for C.
func (pl *Plan) runGauss(ctx context.Context, data rows.Source) (*Result, error) {
	opt := pl.opt
	if ctx.Err() != nil {
		return nil, cancelled(MethodGauss, ctx, 1)
	}
	g, err := newClipped(data, opt.Clip, opt.Workers, 1).gram(ctx)
	if err != nil {
		return nil, passError(MethodGauss, ctx, 1, err)
	}
	return pl.releaseGram(g)
}

// GramTermError bounds, in Frobenius norm, how far each row's term of a
// matrix given to RunGram may be from the ideal x̃x̃ᵀ of that row scaled by
// 1/clip and clipped to ‖x̃‖ ≤ 1: a database engine's term is x̃x̃ᵀ put on
// a fixed-point grid after its own floating-point scaling, off by at most
// sqlplan.MomentsExcess(d)/2 < 2⁻²⁰ for d ≤ MaxGaussDim
// (dsl/pgsource's TestNPMMomentsTermWithinGramBudget). The noisy power
// method's charge covers it (npmGramExcess).
const GramTermError = 0x1p-20

// RunGram runs the plan on a second-moment matrix that was summed
// elsewhere: g = Σ_i T_i, T_i within GramTermError of x̃_i x̃_iᵀ over the
// rows scaled by 1/clip and clipped to norm ≤ 1, each entry the exact sum
// rounded once to float64, as a database engine computes it in one
// statement (dsl/sqlplan.PrintMoments). Analyze Gauss adds its noise to g
// (the sums' rounding is within its RoundingExcess: docs/mechanisms.md,
// "Analyze Gauss in the engine"); the noisy power method iterates
// Y = g·X + G in Go, the same iterations as its row path when that forms
// C (gramPays), and its charge covers g's rounding (npmGramExcess). The
// caller answers for g. A centred Analyze Gauss plan's rows are shifted
// by its private mean c (CenterOfSum) before they are clipped, and c is
// nil for an uncentred plan. A centred noisy power method, and the
// adaptive method, whose passes filter rows by their own scores, which C
// does not give, are refused.
func (pl *Plan) RunGram(ctx context.Context, g *mat.SymDense, c *CenterRelease) (*Result, error) {
	if err := pl.check(); err != nil {
		return nil, err
	}
	if pl.Method != MethodGauss && (pl.Method != MethodNPM || pl.opt.Center) {
		return nil, fmt.Errorf("pca %s: RunGram runs Analyze Gauss and uncentred noisy power methods only", pl.Method)
	}
	if (pl.CenterStd != 0) != (c != nil) || (c != nil && len(c.mean) != pl.D) {
		return nil, fmt.Errorf("pca %s: RunGram needs the private mean (CenterOfSum) for a centred plan, and none for an uncentred one", pl.Method)
	}
	if g == nil || g.SymmetricDim() != pl.D {
		return nil, fmt.Errorf("pca %s: RunGram needs a %d×%d matrix", pl.Method, pl.D, pl.D)
	}
	if pl.Method == MethodNPM {
		return pl.iterateNPM(ctx, func(context.Context) (*mat.SymDense, error) { return g, nil }, nil)
	}
	if ctx.Err() != nil {
		return nil, cancelled(MethodGauss, ctx, 1)
	}
	res, err := pl.releaseGram(g)
	if err != nil {
		return nil, err
	}
	c.set(res)
	return res, nil
}

// releaseGram perturbs the second-moment matrix g and takes its top-K
// eigenvectors.
func (pl *Plan) releaseGram(g *mat.SymDense) (*Result, error) {
	d, opt := pl.D, pl.opt
	c := mat.DenseCopyOf(g)
	newSource(opt).frobeniusGaussian(c, pl.NoiseStd)
	if opt.knob != nil && opt.knob.trace != nil {
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				opt.knob.trace.first = append(opt.knob.trace.first, c.At(i, j))
			}
		}
	}
	comps, top, err := linalg.TopEigen(mat.NewSymDense(d, c.RawMatrix().Data), pl.K)
	if err != nil {
		return nil, fmt.Errorf("pca gauss: %w", err)
	}
	// The trace of the released matrix is the private estimate of the
	// total variance (post-processing of the same release): the
	// denominator of the explained-variance ratios.
	trace := 0.0
	for i := range d {
		trace += c.At(i, i)
	}
	clip2 := opt.Clip * opt.Clip
	for j := range top {
		top[j] *= clip2
	}
	res := pl.result(comps, top, nil)
	res.TotalVariance = trace * clip2
	res.ExplainedVarianceRatio = varianceRatios(top, res.TotalVariance)
	return res, nil
}
