// Adaptive power method: Nguyen, Ene and Nguyen, "Adaptive Power Iteration
// for Differentially Private PCA" (arXiv 2602.11454v3), Algorithm 1, with
// the privacy analysis of Lemma 3.1. Implemented in the normalized form of
// spec power_methods.md §4 ("Normalized implementation", simpler practical
// grid θ̂_k = 2^(k−64)), with the zCDP accounting of §4 "Tighter
// accounting" and the paper accounting of §4 "Invert for a target".

package pca

import (
	"context"
	"fmt"
	"math"
	"math/big"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

const (
	// gridTop is the index of the top grid point θ̂ = 2^0 = 1. Every score
	// of a unit iterate against rows of norm ≤ 1 is ≤ 1, so the top point
	// keeps every row and the search needs no n-dependent range.
	gridTop = 64
	// defaultAPMGap is κ₀ in the default T = ⌈ln(n·ε/β)/ln(1/(1−κ₀))⌉
	// (defaultAPMIters).
	defaultAPMGap = 0.5
	// svtShare is f, the share of ρ* given to the sparse-vector steps. The
	// spec's 0.5 was chosen with the general AboveThreshold's Lap(4/ε_s)
	// query noise; with the monotone variant's Lap(2/ε_s) the threshold
	// search needs less of the budget, and 0.25 gave the lowest median
	// error over the apm-gaussian grid (docs/mechanisms.md).
	svtShare = 0.25
	// svtThresholdSensitivity and svtQuerySensitivity set the Laplace
	// scales of AboveThreshold, b = sensitivity/ε_s: Lap(2/ε_s) on the
	// threshold (spec §4 line 163) and Lap(2/ε_s) on each query, the
	// monotone-query variant of Lyu, Su and Li (VLDB 2017, Alg. 7 with
	// c = 1): one row's bucket moves every count −#{score > θ̂_k} of an
	// iteration in the same direction (see svtReaches), so the query noise
	// needs the count sensitivity 1, not 2 (the spec's Lap(4/ε_s)).
	svtThresholdSensitivity = 2
	svtQuerySensitivity     = 2
)

// gridPoint returns θ̂_k = 2^(k−64).
func gridPoint(k int) float64 { return math.Ldexp(1, k-gridTop) }

// bucket returns the smallest k in [0, 64] with score ≤ θ̂_k (64 for scores
// above 1, which only rounding can produce). It compares exponents, so the
// predicate is exact: score ≤ 2^j ⇔ bucket ≤ j + 64.
func bucket(score float64) int {
	if !(score > 0) {
		return 0
	}
	frac, exp := math.Frexp(score) // score = frac·2^exp, frac ∈ [0.5, 1)
	j := exp                       // smallest j with score ≤ 2^j
	if frac == 0.5 {
		j = exp - 1
	}
	return min(max(j+gridTop, 0), gridTop)
}

// apmPaperStepEps returns the per-iteration ε for a target (E, D) over T
// iterations under the paper's accounting, where each iteration is an
// ε-DP AboveThreshold and an (ε, δ) Gaussian step with δ = D/(T+1).
// CHOICE (spec §4): evaluate three valid composition bounds over the 2T
// mechanisms — Lemma 3.1's 2(Tε² + √(2 ln(1/δ)·T)·ε), advanced
// composition √(2k ln(1/δ))ε + kε(e^ε−1) with k = 2T, and basic 2Tε — and
// return the largest ε for which the smallest is ≤ E. It also returns
// Lemma 3.1's ε alone. The classical Gaussian step needs ε < 1, so the
// result is capped just below 1.
func apmPaperStepEps(E, D float64, T int) (eps, lemmaEps float64) {
	delta := D / float64(T+1)
	l := math.Log(1 / delta)
	t := float64(T)
	lemmaEps = (math.Sqrt(l+E) - math.Sqrt(l)) / math.Sqrt(2*t)
	k := 2 * t
	advanced := func(e float64) float64 { return math.Sqrt(2*k*l)*e + k*e*math.Expm1(e) }
	lo, hi := 0.0, E/math.Sqrt(2*k*l) // advanced(hi) ≥ E
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if advanced(mid) <= E {
			lo = mid
		} else {
			hi = mid
		}
	}
	basic := E / k
	eps = math.Max(lemmaEps, math.Max(lo, basic))
	return math.Min(eps, math.Nextafter(1, 0)), lemmaEps
}

// apmSensitivityFactor is the factor c in the Gaussian step's sensitivity
// c·θ̂: one row changes the filtered sum by at most θ̂ when it is added or
// removed, and by 2θ̂ when it is replaced (spec §4 NOTE). The counts have
// sensitivity 1 under both relations.
func apmSensitivityFactor(nb accounting.Neighbour) float64 {
	if nb == accounting.AddRemove {
		return 1
	}
	return 2
}

// defaultAPMIters is the default T = ⌈ln(n·ε/β)/ln(1/(1−κ₀))⌉, from
// public quantities only. The power step contracts tan∠(x, v1) by
// λ2/λ1 = 1 − κ₀ (the relative gap of the second moment), so T such steps
// take a random start (tan ≲ √d/β with probability 1 − β) down to
// √d/(β·(1/(1−κ₀))^T); the privacy noise leaves a floor of about
// √d/(ε·n·σ̄1²·κ) (Nguyen–Ene–Nguyen Thm 1.2, rows of norm ≤ 1, so
// σ̄1²·κ ≤ 1), and iterating past it only adds noise (each iteration costs
// ρ*/T). The paper's T = ⌈ln(n/(βδε))/κ₀⌉ (spec §4 "Unknown κ") uses the
// first-order rate κ₀ ≤ ln(1/(1−κ₀)) and contracts towards 1/(nε) of a
// δ-dependent floor, running about 3× too long at the spec's recipe
// (38 iterations at n = 1e5, ε = 1, κ₀ = 0.75, against 11 here).
func defaultAPMIters(n int, eps, beta, gap float64) float64 {
	if gap == 0 {
		gap = defaultAPMGap
	}
	rate := -math.Log1p(-gap) // ln(1/(1−κ₀)); +Inf at κ₀ = 1
	return math.Ceil(math.Log(float64(n)*eps/beta) / rate)
}

// PlanAdaptive validates opt for the adaptive power method (K must be 1)
// on d columns.
//
// T = Iters, or defaultAPMIters(PublicN, ε, β, κ₀) with κ₀ = Gap (default
// 0.5) and β = Beta (default 0.05); one of Iters and PublicN must be given.
//
// CalibZCDP: the run spends ρ* = accounting.RhoForTarget(Eps, Delta): each
// of T iterations is an ε_s-DP AboveThreshold (ε_s²/2 zCDP) and a Gaussian
// with multiplier z (1/(2z²) zCDP), ε_s = √(2fρ*/T), z = √(T/(2(1−f)ρ*)),
// f = svtShare = 0.25 (the spec's 0.5 assumed the general AboveThreshold's
// noise; docs/mechanisms.md gives the measurement behind 0.25).
//
// CalibGDP (gdp datasets): the run is charged μ* = accounting.MuForTarget(Eps,
// Delta), and T·(PureToMu(ε_s)² + 1/z²) ≤ μ*² with the same share f of μ*²
// for the sparse vector (see the case below and docs/accounting.md).
//
// CalibPaper: per-step ε from apmPaperStepEps, δ = Delta/(T+1), Gaussian std
// 2θ√(ln(2/δ))/ε (the constant of the proof of Lemma 3.1, the larger of
// the paper's two).
func PlanAdaptive(opt Options, d int) (*Plan, error) {
	opt, err := validateCommon(MethodAdaptive, opt, d)
	if err != nil {
		return nil, err
	}
	if opt.K != 1 {
		return nil, fmt.Errorf("pca adaptive: the adaptive power method finds one component; got k=%d (use method npm for k > 1)", opt.K)
	}
	if opt.Oversample != 0 {
		return nil, fmt.Errorf("pca adaptive: oversample applies to npm only; leave it 0")
	}
	if opt.AutoGap {
		return planAdaptiveAuto(opt, d)
	}
	T := opt.Iters
	if T == 0 {
		if opt.PublicN == 0 {
			return nil, fmt.Errorf("pca adaptive: set iters or give a public row count (the default T = ⌈ln(n·ε/β)/ln(1/(1−κ₀))⌉ needs n)")
		}
		v := defaultAPMIters(opt.PublicN, opt.Eps, opt.Beta, opt.Gap)
		if !(v <= maxIters) {
			return nil, fmt.Errorf("pca adaptive: the default gives %v iterations: set iters or a larger gap", v)
		}
		T = max(1, int(v))
	}
	pl := &Plan{
		Method: MethodAdaptive, D: d, K: 1, P: 1, Iters: T,
		Calibration: opt.Calibration, Neighbour: opt.Neighbour,
		Sensitivity: apmSensitivityFactor(opt.Neighbour),
	}
	switch opt.Calibration {
	case CalibZCDP:
		rho := accounting.RhoForTarget(opt.Eps, opt.Delta)
		if opt.runRho > 0 { // a candidate of gap="auto": its share of ρ*
			rho = opt.runRho
		}
		pl.Rho = rho
		run := runShare(opt, rho) // centred: the mean takes its share (planCenter)
		pl.SVTEps = math.Sqrt(2 * svtShare * run / float64(T))
		pl.NoiseMultiplier = math.Sqrt(float64(T) / (2 * (1 - svtShare) * run))
		pl.Cost = event(MethodAdaptive, accounting.Zcdp(rho).WithTarget(opt.Eps, opt.Delta))
	case CalibGDP:
		// Each iteration is one ε_s-DP AboveThreshold, which is
		// PureToMu(ε_s)-GDP (Dong–Roth–Su Prop. 2.5, docs/accounting.md), and
		// one Gaussian release of multiplier z at the sensitivity c·θ̂ of the
		// released θ̂, 1/z-GDP given the past: T and z are fixed here, before
		// the data, whatever the thresholds. By adaptive GDP composition
		// (Dong–Roth–Su Thm 3.2) the run is μ-GDP with
		// μ² = T·(PureToMu(ε_s)² + 1/z²) ≤ μ*²: the share f of μ*²/2
		// (rounded down, accounting.GaussianTarget) goes to the sparse
		// vector, ε_s = PureForMu(√(2fρ/T)) rounded down, and the rest to
		// the Gaussian releases as under CalibZCDP.
		rho, cost, ok := accounting.GaussianTarget(opt.Eps, opt.Delta, true)
		if !ok {
			return nil, fmt.Errorf("pca adaptive: could not calibrate to eps=%v, delta=%v", opt.Eps, opt.Delta)
		}
		if opt.runRho > 0 { // a candidate of gap="auto": its share of μ*²/2
			rho = opt.runRho
		}
		pl.Rho = rho
		run := runShare(opt, rho) // centred: the mean takes its share (planCenter)
		pl.SVTEps = accounting.PureForMu(math.Sqrt(2 * svtShare * run / float64(T)))
		pl.NoiseMultiplier = math.Sqrt(float64(T) / (2 * (1 - svtShare) * run))
		pl.Cost = event(MethodAdaptive, cost)
	case CalibPaper:
		eps, _ := apmPaperStepEps(opt.Eps, opt.Delta, T)
		pl.StepEps = eps
		pl.StepDelta = opt.Delta / float64(T+1)
		pl.SVTEps = eps
		pl.NoiseMultiplier = 2 * math.Sqrt(math.Log(2/pl.StepDelta)) / eps
		pl.Cost = event(MethodAdaptive, accounting.Approx(opt.Eps, opt.Delta))
	}
	if err := checkScales(MethodAdaptive, pl.NoiseMultiplier, d, pl.SVTEps); err != nil {
		return nil, err
	}
	// The threshold gets Lap(2/ε_s) once per iteration (spec §4 line 163),
	// each query Lap(2/ε_s): the monotone-query variant (svtQuerySensitivity).
	var err1, err2 error
	pl.svtThresholdScale, err1 = noise.LaplaceScaleChecked(svtThresholdSensitivity, pl.SVTEps, 1)
	pl.svtQueryScale, err2 = noise.LaplaceScaleChecked(svtQuerySensitivity, pl.SVTEps, 1)
	// The AboveThreshold coupling shifts the threshold noise by 1 and the
	// query noise by 2 (count sensitivity 1); on a lattice that is a valid
	// shift only if the step divides 1 (see svtReaches).
	if err1 != nil || err2 != nil || noise.LatticeStep(pl.svtQueryScale) > 1 || noise.LatticeStep(pl.svtThresholdScale) > 1 {
		return nil, fmt.Errorf("pca adaptive: the sparse-vector ε=%.3g per iteration is too small for the noise lattice: raise eps or lower iters", pl.SVTEps)
	}
	pl.RoundingExcess = sumExcess(apmRoundings, 1)
	// The std of iteration t is this per-unit std at θ̂_t, computed here for
	// every grid point θ̂_k = 2^(k−64) so that the run only looks it up: no
	// threshold the sparse-vector step can pick makes a sampler refuse its
	// scale after the charge.
	for k := range pl.gridStds {
		std, err := planStd(MethodAdaptive, (pl.Sensitivity+pl.RoundingExcess)*gridPoint(k)*roundingSlack, pl.NoiseMultiplier, d)
		if err != nil {
			return nil, err
		}
		pl.gridStds[k] = std
	}
	pl.NoiseStd = pl.gridStds[gridTop] // θ̂ = 1
	switch opt.Calibration {
	case CalibZCDP:
		pl.Note = fmt.Sprintf("calibrated to ε=%v, δ=%v via zCDP: ρ=%s over T=%d iterations, each a sparse-vector step with ε=%s and a Gaussian step with noise multiplier %s (%s)",
			opt.Eps, opt.Delta, fmtG(pl.Rho), T, fmtG(pl.SVTEps), fmtG(pl.NoiseMultiplier), opt.Neighbour)
	case CalibGDP:
		pl.Note = fmt.Sprintf("calibrated to ε=%v, δ=%v via exact GDP: μ=%s over T=%d iterations, each a sparse-vector step with ε=%s (priced as %s-GDP) and a Gaussian step with noise multiplier %s (%s)",
			opt.Eps, opt.Delta, fmtG(pl.Cost.Mu), T, fmtG(pl.SVTEps), fmtG(accounting.PureToMu(pl.SVTEps)), fmtG(pl.NoiseMultiplier), opt.Neighbour)
	default:
		pl.Note = fmt.Sprintf("calibrated to ε=%v, δ=%v as in Nguyen–Ene–Nguyen Lemma 3.1: T=%d iterations at ε=%s, δ=%s each, Gaussian multiplier %s (%s)",
			opt.Eps, opt.Delta, T, fmtG(pl.StepEps), fmtG(pl.StepDelta), fmtG(pl.NoiseMultiplier), opt.Neighbour)
	}
	if err := pl.planCenter(opt, pl.Rho, runShare(opt, pl.Rho)); err != nil {
		return nil, err
	}
	pl.opt = opt
	pl.seal()
	return pl, nil
}

// Adaptive runs the adaptive power method and returns the unit vector
// x_T/‖x_T‖ (d×1) and the thresholds θ̂_t.
func Adaptive(ctx context.Context, data *mat.Dense, opt Options) (*Result, error) {
	d := 0
	if data != nil {
		_, d = data.Dims()
	}
	pl, err := PlanAdaptive(opt, d)
	if err != nil {
		return nil, err
	}
	return pl.Run(ctx, data)
}

// apmAcc is a block's (or a subtree's) share of an iteration: the count of
// rows per grid bucket and the sum of their contributions c·a per bucket.
// used marks the buckets whose sums may be non-zero, so that a block of
// rows touching few buckets costs few merges; an unused bucket's sum is
// zero, and adding zero is exact, so skipping it changes no bit.
type apmAcc struct {
	hist     [gridTop + 1]int
	used     [gridTop + 1]bool
	sums     []float64 // (gridTop+1)·d
	maxScore float64   // for tests only (trace)
}

// runAdaptive makes one pass over data per iteration (apmPass).
func (pl *Plan) runAdaptive(ctx context.Context, data rows.Source) (*Result, error) {
	opt := pl.opt
	if ctx.Err() != nil {
		return nil, cancelled(MethodAdaptive, ctx, 1)
	}
	src := newSource(opt)
	d, T := pl.D, pl.Iters
	r := newClipped(data, opt.Clip, opt.Workers, 2)
	var tr *trace
	keepAll := false
	if opt.knob != nil {
		tr, keepAll = opt.knob.trace, opt.knob.keepAll
	}

	x := make([]float64, d)
	for floats.Norm(x, 2) == 0 {
		for i := range x {
			x[i] = src.stdNormal()
		}
	}
	floats.Scale(1/floats.Norm(x, 2), x)
	if tr != nil {
		tr.start = append([]float64(nil), x...)
	}

	// Spec §4 line 4: the threshold n − 6 ln(1/β)/ε is compared with Q_k;
	// we compare −#{score > θ̂_k} = Q_k − n with −6 ln(1/β)/ε instead, the
	// same test without using the private n.
	offset := 6 * math.Log(1/opt.Beta) / pl.SVTEps
	bThr, bQuery := pl.svtThresholdScale, pl.svtQueryScale
	thetas := make([]float64, 0, T)
	var last float64
	for t := 0; t < T; t++ {
		if ctx.Err() != nil {
			return nil, cancelled(MethodAdaptive, ctx, t+1)
		}
		acc, err := r.apmPass(ctx, x)
		if err != nil {
			return nil, passError(MethodAdaptive, ctx, t+1, err)
		}

		// AboveThreshold over the grid, fresh threshold noise per iteration
		// and fresh query noise per grid point.
		kStar := gridTop
		if !keepAll {
			zThr := src.laplace(bThr)
			above := 0
			for _, c := range acc.hist {
				above += c
			}
			for k := 0; k <= gridTop; k++ {
				above -= acc.hist[k] // rows with bucket > k
				if svtReaches(-above, src.laplace(bQuery), offset, zThr) {
					kStar = k
					break
				}
			}
		}
		theta := gridPoint(kStar)

		// Filtered product over exactly the rows counted at θ̂ (buckets ≤ k*).
		v := make([]float64, d)
		bucketSum(v, acc.sums, d, 0, kStar+1)
		filtered := 0
		for k := kStar + 1; k <= gridTop; k++ {
			filtered += acc.hist[k]
		}
		src.gaussianVec(v, pl.gridStds[kStar]) // the std at θ̂ (PlanAdaptive)
		thetas = append(thetas, theta)
		if tr != nil {
			tr.thetas = append(tr.thetas, theta)
			tr.maxScores = append(tr.maxScores, acc.maxScore)
			tr.filtered = append(tr.filtered, filtered)
			if t == 0 {
				tr.first = append([]float64(nil), v...)
			}
		}
		// Normalize (homogeneity: the paper's unnormalized iterate has the
		// same direction). A zero vector is possible only without noise.
		if nv := floats.Norm(v, 2); nv > 0 {
			last = nv
			floats.ScaleTo(x, 1/nv, v)
		} else {
			last = 0
		}
		if opt.Progress != nil {
			opt.Progress(t+1, T)
		}
	}
	if tr != nil {
		tr.iterations = T
	}
	comps := mat.NewDense(d, 1, append([]float64(nil), x...))
	fixSigns(comps)
	return pl.result(comps, []float64{last * opt.Clip * opt.Clip}, thetas), nil
}

// svtReaches reports whether the noisy query q + zq reaches the noisy
// threshold −offset + zThr, deciding q + zq + offset − zThr ≥ 0 exactly.
//
// Evaluating fl(q+zq) ≥ fl(−offset+zThr) in float64 instead would round
// both sides (the lattice steps of the Laplace noise lie far below the
// ulp of counts in the thousands), and rounding breaks the AboveThreshold
// proof: round(a) < round(b) does not imply round(a+1) < round(b+1), so
// the coupling that shifts the noise by the count sensitivity no longer
// maps runs to runs. The exact comparison is a function of the exact noisy
// values only. Both noises are multiples of their lattice steps, powers of
// two no larger than 1/8 (checkScales caps 4/ε_s at 2^37; PlanAdaptive
// checks it), so shifting them by the count sensitivity 1 stays on the
// lattice, as the discrete-Laplace version of the proof needs.
//
// Monotone queries (why the query noise is Lap(1/ε₂), ε₂ = ε_s/2). Within
// an iteration the iterate x is fixed (it is a function of released
// values), so each row has one bucket b(a), and the queries are
// q_k = −#{rows with b(a) > k}, k = 0..64. Between neighbours:
//   - add/remove a row of bucket b: q'_k = q_k − 1 for k < b and q'_k = q_k
//     for k ≥ b (or +1 and 0 when removing), so every q'_k − q_k has
//     one sign;
//   - replace a row of bucket b by one of bucket b': q'_k − q_k is
//     [b ≤ k < b'] or −[b' ≤ k < b], again of one sign for all k;
//   - user level: the execution core sums each user's rows into one row
//     before the run (dsl/release unitSource), so a user is one row.
//
// For such queries Lyu, Su and Li (VLDB 2017, §4, Alg. 7) prove
// AboveThreshold ε₁ + ε₂ DP with threshold noise Lap(Δ/ε₁) and query noise
// Lap(Δ/ε₂): when every q' ≥ q, shift the threshold noise by Δ and the
// stopping query's noise by Δ; when every q' ≤ q, shift only the stopping
// query's noise by Δ (the queries before it stay below the threshold
// unshifted). With Δ = 1 and ε₁ = ε₂ = ε_s/2 the scales are 2/ε_s and
// 2/ε_s (svtThresholdSensitivity, svtQuerySensitivity). The general
// variant needs 2Δ/ε₂ on the queries because q' − q may change sign
// between k's, which these counts cannot do.
func svtReaches(q int, zq, offset, zThr float64) bool {
	// 4 float64 terms plus an integer below 2^63: 2200 bits hold the sum
	// exactly whatever their exponents.
	const prec = 2200
	var sum, t big.Float
	sum.SetPrec(prec).SetInt64(int64(q))
	for _, v := range [...]float64{zq, offset, -zThr} {
		t.SetPrec(prec).SetFloat64(v)
		sum.Add(&sum, &t)
	}
	return sum.Sign() >= 0
}

// apmPass computes, in one pass over the rows, for the unit iterate x,
// every row's score ‖s·a‖·|⟨s·a, x⟩| and bucket once, and accumulates per
// bucket both the row count and the row's contribution c·sa with
// sa = fl(s·a), c = ⟨sa, x⟩ computed. Counting and filtering therefore use
// one predicate. The scale s and the norm ‖s·a‖ come from rowScale, computed
// from the row as it arrives (nothing per row outlives the pass). Dropped
// rows (s = 0) have score 0. Rows are added directly within blocks of
// rowpass.BlockRows rows and the blocks combined by the pairwise tree
// (linalg.PairwisePass; error bound: sumExcess).
//
// The row is scaled before anything else, so that no value exceeds the
// unit ball: with ⟨a, x⟩ formed first, a finite row of norm beyond
// MaxFloat64 overflowed to ±Inf (a NaN sum, and the sampler's panic after
// the charge), and the weight s·⟨s·a, x⟩ could underflow into the
// subnormals, where its absolute rounding error times ‖a‖ ≈ 1e308
// exceeded the threshold θ̂ the filter guarantees (a term of norm ~1e-15
// kept at θ̂ = 2^-53). Now the reference term is c·sa with ‖c·sa‖ =
// |c|·‖sa‖ = score (to the relative rounding roundingSlack absorbs), and
// fl(c·sa_k) is its one rounding in apmRoundings; an underflow there costs
// at most 2^-1075 absolutely, far below the slack at any θ̂ ≥ 2^-64.
func (r *clipped) apmPass(ctx context.Context, x []float64) (*apmAcc, error) {
	d := r.d
	acc, _, err := linalg.PairwisePass(ctx, r.src, r.pass,
		func() *apmAcc { return &apmAcc{sums: make([]float64, (gridTop+1)*d)} },
		func(acc *apmAcc, blk *rows.Batch) {
			sa := make([]float64, d)
			for i := range blk.N {
				a := blk.Row(i, d)
				s, norm := r.rowScaleIn(blk, i, a)
				if s == 0 {
					acc.hist[0]++
					continue
				}
				floats.ScaleTo(sa, s, a)
				dot := floats.Dot(sa, x) // ⟨s·a, x⟩, |dot| ≤ ‖sa‖ ≤ 1
				score := norm * math.Abs(dot)
				b := bucket(score)
				acc.hist[b]++
				acc.used[b] = true
				acc.maxScore = math.Max(acc.maxScore, score)
				floats.AddScaled(acc.sums[b*d:(b+1)*d], dot, sa)
			}
		},
		func(into, from *apmAcc) {
			for k := range into.hist {
				into.hist[k] += from.hist[k]
				if !from.used[k] {
					continue
				}
				if into.used[k] {
					floats.Add(into.sums[k*d:(k+1)*d], from.sums[k*d:(k+1)*d])
				} else {
					copy(into.sums[k*d:(k+1)*d], from.sums[k*d:(k+1)*d])
					into.used[k] = true
				}
			}
			into.maxScore = math.Max(into.maxScore, from.maxScore)
		},
		func(acc *apmAcc) {
			for k, u := range acc.used {
				if u {
					clear(acc.sums[k*d : (k+1)*d])
				}
			}
			acc.hist, acc.used, acc.maxScore = [gridTop + 1]int{}, [gridTop + 1]bool{}, 0
		})
	return acc, err
}

// bucketSum adds the per-bucket sums of buckets [lo, hi) into dst (zeroed,
// length d) by pairwise halving, so a bucket sum passes through at most
// ⌈log2(hi−lo)⌉ ≤ bucketDepth additions.
func bucketSum(dst, sums []float64, d, lo, hi int) {
	switch hi - lo {
	case 0:
		return
	case 1:
		copy(dst, sums[lo*d:(lo+1)*d])
		return
	}
	mid := (lo + hi) / 2
	right := make([]float64, d)
	bucketSum(dst, sums, d, lo, mid)
	bucketSum(right, sums, d, mid, hi)
	floats.Add(dst, right)
}

// bucketDepth is ⌈log2(gridTop+1)⌉: the additions bucketSum adds to a
// bucket sum's path.
const bucketDepth = 7
