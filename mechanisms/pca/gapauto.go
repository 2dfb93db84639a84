// Adaptive power method without a known gap: Nguyen, Ene and Nguyen,
// "Adaptive Power Iteration for Differentially Private PCA" (arXiv
// 2602.11454v3), the remark after Theorem 1.1 [000:L39]: guess κ up to a
// constant factor, run Algorithm 1 for each guess, and pick one run with
// the exponential mechanism. Spec power_methods.md §4 "Unknown κ". The
// paper gives no score and no budget split; both are ours (CHOICE), argued
// below and in docs/mechanisms.md.

package pca

import (
	"context"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/floats"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// AutoGaps is the public grid of κ guesses of gap="auto". The default
// iteration count contracts tan∠(x, v1) by 1 − κ per step, so what a guess
// sets is the rate ln(1/(1−κ)): 1.39, 0.69, 0.29, 0.13, each about half
// the one before, from a gap as large as the APM Gaussian recipe's (3/4)
// down to one below the spiked recipe's (2/7). The grid does not depend on
// the data.
var AutoGaps = []float64{0.75, 0.5, 0.25, 0.125}

const (
	// selectShare is the share of ρ* spent on the selection. The rest is
	// split equally over the len(AutoGaps) runs.
	selectShare = 0.1
	// scoreBits is the fixed-point resolution of a row's residual: each
	// row contributes ⌈2^scoreBits·r⌉ ∈ [0, 2^scoreBits] to an integer sum.
	scoreBits = 20
	// budgetMargin shrinks every share by a relative 1e-12 so that the
	// rounded shares add up to at most ρ*.
	budgetMargin = 1 - 1e-12
)

// Candidate is one planned run of gap="auto": its κ guess, its number of
// iterations, and the scales of its steps (see Plan).
type Candidate struct {
	Gap             float64
	Iters           int
	Rho             float64
	SVTEps          float64
	NoiseMultiplier float64
}

// autoIters returns the iteration count of the candidate κ: the default
// T = ⌈ln(n·ε/β)/ln(1/(1−κ))⌉ with the public row count, or, when the
// analyst fixed iters, that count read as the T of the default κ₀ = 0.5
// and rescaled by the rates, ⌈iters·ln(1/(1−κ₀))/ln(1/(1−κ))⌉ (so κ₀
// itself gets exactly iters). Both use public facts only.
func autoIters(opt Options, gap float64) (float64, error) {
	if opt.Iters > 0 {
		ratio := -math.Log1p(-defaultAPMGap) / -math.Log1p(-gap)
		return math.Ceil(float64(opt.Iters) * ratio), nil
	}
	if opt.PublicN > 0 {
		return defaultAPMIters(opt.PublicN, opt.Eps, opt.Beta, gap), nil
	}
	return 0, fmt.Errorf("pca adaptive: gap=\"auto\" needs iters (read as the T of κ₀ = 0.5, rescaled for every guess) or a public row count")
}

// planAdaptiveAuto plans gap="auto" (opt validated, K = 1).
//
// Budget (CalibZCDP: charged as one event of ρ* = RhoForTarget(Eps, Delta)
// before any data is read):
//   - each of the m = len(AutoGaps) candidate runs is the adaptive method
//     planned at ρ_run = (1 − selectShare)·ρ*/m (its T iterations split
//     ρ_run as PlanAdaptive says);
//   - the selection is the exponential mechanism at ε_sel = √(8·selectShare·ρ*),
//     which is ε_sel-bounded-range and hence ε_sel²/8 = selectShare·ρ*
//     zCDP (tabular.Selector).
//
// Composition: the runs and the selection read the same rows, each with
// fresh randomness, and the selection's score uses the runs' outputs,
// which are DP releases, as public inputs: adaptive composition of zCDP
// mechanisms (Bun and Steinke 2016, Lemma 2.3) gives
// m·ρ_run + ε_sel²/8 = ρ*. Releasing only the selected run is
// post-processing of the whole tuple, so the unreleased runs cost nothing
// more and nothing less. The conversion of ρ* is exactly (Eps, Delta).
//
// CalibGDP (gdp datasets), in the same proportions: the call is charged
// one μ*-GDP event, μ* = accounting.MuForTarget(Eps, Delta), through
// accounting.GaussianTarget (ρ = μ*²/2 rounded down is the μ² budget in
// ρ units). Each run is the adaptive method under CalibGDP planned at
// ρ_run = (1 − selectShare)·ρ/m, so μ_run² = T·(PureToMu(ε_s)² + 1/z²)
// ≤ 2ρ_run (PlanAdaptive); the selection, ε_sel-DP, is PureToMu(ε_sel)-GDP
// (Dong–Roth–Su Prop. 2.5) with ε_sel = PureForMu(√(2·selectShare·ρ)),
// rounded down. The runs and the selection compose adaptively as above
// (Dong–Roth–Su Thm 3.2: the mechanisms' μ are fixed here, before the
// data): μ² = Σ_runs μ_run² + PureToMu(ε_sel)² ≤ 2ρ ≤ μ*².
//
// CalibPaper is refused: its (ε, δ) accounting would need its own split
// of ε and δ over the runs, which this version does not make.
func planAdaptiveAuto(opt Options, d int) (*Plan, error) {
	var rho, selEps float64
	var cost accounting.Event
	switch opt.Calibration {
	case CalibZCDP:
		rho = accounting.RhoForTarget(opt.Eps, opt.Delta)
		selEps = math.Sqrt(8*selectShare*rho) * budgetMargin
		cost = accounting.Zcdp(rho).WithTarget(opt.Eps, opt.Delta)
	case CalibGDP:
		var ok bool
		rho, cost, ok = accounting.GaussianTarget(opt.Eps, opt.Delta, true)
		if !ok {
			return nil, fmt.Errorf("pca adaptive: gap=\"auto\": could not calibrate to eps=%v, delta=%v", opt.Eps, opt.Delta)
		}
		selEps = accounting.PureForMu(math.Sqrt(2*selectShare*rho) * budgetMargin)
	default:
		return nil, fmt.Errorf("pca adaptive: gap=\"auto\" is calibrated via zCDP (or exact GDP on gdp datasets) only: use calibration \"zcdp\", or leave gap out for calibration \"paper\"")
	}
	m := len(AutoGaps)
	runRho := (1 - selectShare) * rho / float64(m) * budgetMargin
	sel, err := tabular.NewSelector(selEps)
	if err != nil {
		return nil, fmt.Errorf("pca adaptive: gap=\"auto\": %w", err)
	}
	pl := &Plan{
		Method: MethodAdaptive, D: d, K: 1, P: 1,
		Calibration: opt.Calibration, Neighbour: opt.Neighbour,
		Sensitivity: apmSensitivityFactor(opt.Neighbour),
		Rho:         rho, SelectEps: sel.Eps,
		Cost: event(MethodAdaptive, cost),
	}
	var gaps, iters []string
	for _, g := range AutoGaps {
		v, err := autoIters(opt, g)
		if err != nil {
			return nil, err
		}
		if !(v <= maxIters) {
			return nil, fmt.Errorf("pca adaptive: gap=\"auto\": the guess κ=%v gives %v iterations, above %d: give a smaller iters", g, v, maxIters)
		}
		c := opt
		c.AutoGap, c.Gap, c.Iters, c.runRho, c.Progress = false, g, max(1, int(v)), runRho, nil
		cp, err := PlanAdaptive(c, d)
		if err != nil {
			return nil, fmt.Errorf("pca adaptive: gap=\"auto\", guess κ=%v: %w", g, err)
		}
		pl.cands = append(pl.cands, cp)
		pl.Candidates = append(pl.Candidates, Candidate{Gap: g, Iters: cp.Iters, Rho: cp.Rho, SVTEps: cp.SVTEps, NoiseMultiplier: cp.NoiseMultiplier})
		pl.Iters += cp.Iters
		gaps = append(gaps, fmtG(g))
		iters = append(iters, fmt.Sprint(cp.Iters))
	}
	// Progress counts the iterations of all runs, in order: candidate j
	// reports t as offset_j + t of the total (known only now).
	if parent := opt.Progress; parent != nil {
		offset, total := 0, pl.Iters
		for _, cp := range pl.cands {
			off := offset
			cp.opt.Progress = func(t, _ int) { parent(off+t, total) }
			offset += cp.Iters
		}
	}
	// The plan's per-step scales are the κ₀ = 0.5 candidate's (index 1);
	// every candidate's are in Candidates.
	ref := pl.cands[1]
	pl.SVTEps, pl.NoiseMultiplier, pl.NoiseStd, pl.RoundingExcess = ref.SVTEps, ref.NoiseMultiplier, ref.NoiseStd, ref.RoundingExcess
	if opt.Calibration == CalibGDP {
		pl.Note = fmt.Sprintf("gap=auto: calibrated to ε=%v, δ=%v via exact GDP, μ=%s: %d runs of the adaptive method for κ ∈ {%s} with T = {%s} iterations, μ≤%s each, then the exponential mechanism (ε=%s, priced as %s-GDP) on the residual score selects one run (%s)",
			opt.Eps, opt.Delta, fmtG(cost.Mu), m, strings.Join(gaps, ", "), strings.Join(iters, ", "), fmtG(math.Sqrt(2*runRho)), fmtG(sel.Eps), fmtG(accounting.PureToMu(sel.Eps)), opt.Neighbour)
	} else {
		pl.Note = fmt.Sprintf("gap=auto: calibrated to ε=%v, δ=%v via zCDP, ρ=%s: %d runs of the adaptive method for κ ∈ {%s} with T = {%s} iterations, ρ=%s each, then the exponential mechanism (ε=%s, %s zCDP) on the residual score selects one run (%s)",
			opt.Eps, opt.Delta, fmtG(rho), m, strings.Join(gaps, ", "), strings.Join(iters, ", "), fmtG(runRho), fmtG(sel.Eps), fmtG(sel.Eps*sel.Eps/8), opt.Neighbour)
	}
	pl.opt = opt
	pl.seal()
	return pl, nil
}

// runAdaptiveAuto runs every candidate, scores them in one more pass and
// releases the run the exponential mechanism selects. After the charge it
// fails only as a single adaptive run does (cancellation, the data
// layer's errors).
func (pl *Plan) runAdaptiveAuto(ctx context.Context, data rows.Source) (*Result, error) {
	results := make([]*Result, len(pl.cands))
	xs := make([][]float64, len(pl.cands))
	for j, cp := range pl.cands {
		res, err := cp.runAdaptive(ctx, data)
		if err != nil {
			return nil, err
		}
		results[j], xs[j] = res, res.Components.RawMatrix().Data
	}
	j, err := pl.selectRun(ctx, data, xs)
	if err != nil {
		return nil, err
	}
	res := results[j]
	res.Cost, res.Gap, res.Note = pl.Cost, pl.Candidates[j].Gap, pl.Note+fmt.Sprintf("; selected κ=%v (T=%d)", pl.Candidates[j].Gap, pl.Candidates[j].Iters)
	return res, nil
}

// selectRun scores the candidates' directions xs on data and draws one
// index with the exponential mechanism at SelectEps.
func (pl *Plan) selectRun(ctx context.Context, data rows.Source, xs [][]float64) (int, error) {
	opt := pl.opt
	shift := scoreBits
	if opt.knob != nil && opt.knob.lossShift > 0 {
		shift = opt.knob.lossShift
	}
	losses, bound, err := residualLosses(ctx, newClipped(data, opt.Clip, opt.Workers, 1), xs, shift)
	if err != nil {
		return 0, passError(MethodAdaptive, ctx, pl.Iters+1, err)
	}
	sel, err := tabular.NewSelector(pl.SelectEps)
	if err != nil { // planning checked SelectEps
		return 0, fmt.Errorf("pca adaptive: gap=\"auto\": %w", err)
	}
	s := newSource(opt).s
	// The weights are computed up to the bound whatever the losses: the
	// selection's work depends on the row count, as every pass's does, and
	// not on the scores (docs/threat-model.md, side channels).
	j, steps := sel.SelectWithin(losses, bound, func() bool { return s.Bernoulli(1, 2) })
	if selectWorkHook != nil {
		selectWorkHook(steps)
	}
	if opt.knob != nil && opt.knob.trace != nil {
		opt.knob.trace.losses, opt.knob.trace.selected = losses, j
	}
	return j, nil
}

// selectWorkHook, when set (by tests only: no cell reaches this
// package), receives the number of weight steps of each gap="auto"
// selection.
var selectWorkHook func(steps int64)

// residualLosses returns, for each unit vector x_j (d entries, a DP
// release, so public here), the loss
//
//	L_j = ⌊Σ_i q_i(x_j) / 2^shift⌋,  q_i(x) = ⌈2^scoreBits·clamp(‖a_i‖² − ⟨a_i, x⟩², 0, 1)⌉,
//
// with shift = scoreBits (tests pass a smaller shift for a broken twin),
//
// over the clipped rows a_i = s·row (‖a_i‖ ≤ 1). It is the residual energy
// Σ‖a_i − ⟨a_i, x⟩x‖² of projecting the rows on x, in units of one row's
// largest residual: smaller is better, and for the rows' second-moment
// matrix C it is tr C − xᵀCx up to the quantization, so the best loss is
// the largest captured variance.
//
// Sensitivity 1, from public facts only (the clip, which makes every
// residual ≤ ‖a_i‖² ≤ 1): q_i is a function of row i and the public x,
// in [0, 2^scoreBits] whatever the floating-point rounding (the clamp
// bounds it, and the ceiling of a value in [0, 2^scoreBits] stays there). The sum is
// of integers, exact and independent of the order; with n ≤ MaxRows = 2^30
// it is below 2^50. Adding or removing a row moves the sum by one q_i,
// replacing one by q'_i − q_i: by at most 2^scoreBits either way. The
// floor is monotone and ⌊(Q + 2^s)/2^s⌋ = ⌊Q/2^s⌋ + 1 (s = scoreBits), so L_j moves by
// at most 1 under both relations, as tabular.Selector needs. A
// non-finite row is scaled to 0 (its q is 0), a user is one summed row
// (the execution core), so the same holds at user level.
//
// It also returns a bound on every loss from the row count n alone,
// ⌊n·2^scoreBits/2^shift⌋ (every q_i ≤ 2^scoreBits), for the selection's
// fixed work. n is private, but only as private as every pass's running
// time already makes it; the bound does not depend on the rows' values.
func residualLosses(ctx context.Context, r *clipped, xs [][]float64, shift int) ([]int64, int64, error) {
	m, d := len(xs), r.d
	const unit = 1 << scoreBits
	sums, n, err := linalg.PairwisePass(ctx, r.src, r.pass,
		func() []int64 { return make([]int64, m) },
		func(acc []int64, blk *rows.Batch) {
			sa := make([]float64, d)
			for i := range blk.N {
				a := blk.Row(i, d)
				s, norm := r.rowScaleIn(blk, i, a)
				if s == 0 {
					continue
				}
				floats.ScaleTo(sa, s, a)
				for j, x := range xs {
					dot := floats.Dot(sa, x)
					res := min(max(norm*norm-dot*dot, 0), 1)
					acc[j] += int64(math.Ceil(unit * res))
				}
			}
		},
		func(into, from []int64) {
			for j := range into {
				into[j] += from[j]
			}
		},
		func(acc []int64) { clear(acc) })
	if err != nil {
		return nil, 0, err
	}
	out := make([]int64, m)
	for j, q := range sums {
		out[j] = q >> shift
	}
	return out, int64(n) << scoreBits >> shift, nil
}
