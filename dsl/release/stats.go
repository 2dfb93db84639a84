package release

// private_count: the discrete Laplace mechanism (Dwork, McSherry, Nissim and
// Smith 2006) on the integer lattice when delta is 0, and the discrete
// Gaussian mechanism in zCDP (Canonne, Kamath and Steinke 2020; Bun and
// Steinke 2016, Prop. 1.6) when delta > 0, via mechanisms/noise.
// private_mean: the Gaussian mechanism on a clipped sum divided by a noisy
// count, both in zCDP (Bun and Steinke 2016, Prop. 1.6 and Lemma 2.3).

import (
	"context"
	"fmt"
	"math"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// countSensitivity is the ℓ1 sensitivity of a count of privacy units. Under
// add-remove it is 1; under replace-one the count does not change, but the
// runtime still adds noise of sensitivity 1 so that the count of units is
// never released exactly (the DSL promises never to reveal n).
const countSensitivity = 1

// meanCountShare is the share of private_mean's zCDP budget spent on the
// noisy count; the rest goes to the clipped sum, whose noise dominates the
// error of the mean.
const meanCountShare = 0.2

func planCount(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateCount.Name
	if optStr(a, "by") != "" {
		return planGroups(env, src, a, fn, tabular.GroupCount)
	}
	if err := noGrouping(fn, a); err != nil {
		return nil, err
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	unit := "rows"
	if src.Schema.Unit == "user" {
		unit = "users"
	}
	pass, err := tabCountPass(src)
	if err != nil {
		return nil, err
	}
	if delta > 0 {
		return planGaussianCount(env, src, a, unit, eps, delta, pass)
	}
	b := noise.LaplaceScale(countSensitivity, eps, 1)
	ev := accounting.Pure(eps)
	ev.Mechanism = "count/laplace"
	post := countRule(a)
	note := fmt.Sprintf("counts %s; pure ε-DP with ε=%v; n + discrete Laplace noise on the integers, rounded%s", unit, eps, post.note())
	if src.Schema.Accountant == accounting.ModeZCDP.String() {
		note += fmt.Sprintf(". Under this dataset's zcdp accountant a pure ε costs ρ=ε²/2=%.4g; give delta (for example delta=1e-6) for the Gaussian count, whose cost composes far better with other calls", accounting.PureToRho(eps))
	}
	p := &Plan{Func: fn, Method: "count/laplace", Cost: ev, Eps: eps, Delta: delta,
		Noise:  fmt.Sprintf("discrete Laplace, scale b=%.4g (sensitivity 1)", b),
		Note:   note,
		Params: publicParams(a, map[string]any{"unit": unit, ErrorParam: noiseModel(false, b, true, 0)})}
	countMemory(p, src)
	p.tab = pass
	p.run = func(ctx context.Context, d *Data) (any, error) {
		n, err := tabUnitCount(ctx, d, pass)
		if err != nil {
			return nil, err
		}
		v := []float64{tabular.LaplaceCount(n, b, env.sampler())}
		post.apply(v)
		return &Count{Value: v[0]}, nil
	}
	return p, nil
}

// countMemory is a count's: one pass; on user-level data a subset marks
// the users it has seen (a byte each).
func countMemory(p *Plan, src Ref) {
	p.setStreamMemory(src, 0, 1, fmt.Sprintf("a pass over rows of width %d", readWidth(src)), "Count a subset with fewer columns")
}

// planGaussianCount is private_count with delta > 0: the discrete Gaussian
// mechanism calibrated in zCDP to (ε, δ) (ρ = RhoForTarget(ε, δ)), so that
// its cost composes with the session's other Gaussian releases instead of
// costing ρ = ε²/2 as a pure-ε count does.
func planGaussianCount(env *Local, src Ref, a *Args, unit string, eps, delta float64, pass *tabPass) (*Plan, error) {
	fn := catalog.PrivateCount.Name
	rho, ev, ok := tabular.GaussianTarget(eps, delta, gaussianCalibration(src))
	if !ok {
		return nil, Errorf(NameArgumentError, "%s: could not calibrate to eps=%v, delta=%v", fn, eps, delta)
	}
	z := 1 / math.Sqrt(2*rho)
	if z > 0x1p37 {
		return nil, Errorf(NameArgumentError, "%s: eps=%v is too small to represent the Noise: raise eps", fn, eps)
	}
	// ℓ2 sensitivity 1 under add-remove; under replace-one the count does
	// not move, but it is noised as if it did so that n is never released.
	sigma := noise.GaussianScale(countSensitivity, z, 1)
	ev.Mechanism = "count/gaussian"
	post := countRule(a)
	p := &Plan{Func: fn, Method: "count/gaussian", Cost: ev, Eps: eps, Delta: delta,
		Noise: fmt.Sprintf("discrete Gaussian, std %.4g (sensitivity 1)", sigma),
		Note: fmt.Sprintf("counts %s; calibrated to ε=%v, δ=%v %s; n + discrete Gaussian noise, rounded (delta=0 gives the pure ε Laplace count)%s",
			unit, eps, delta, calibrationWords(ev), post.note()),
		Params: publicParams(a, map[string]any{"unit": unit, ErrorParam: noiseModel(true, sigma, true, 0)})}
	countMemory(p, src)
	p.tab = pass
	p.run = func(ctx context.Context, d *Data) (any, error) {
		n, err := tabUnitCount(ctx, d, pass)
		if err != nil {
			return nil, err
		}
		v := []float64{tabular.GaussianCount(n, sigma, env.sampler())}
		post.apply(v)
		return &Count{Value: v[0]}, nil
	}
	return p, nil
}

func planMean(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateMean.Name
	switch {
	case optStr(a, "by") != "":
		return planGroups(env, src, a, fn, tabular.GroupMean)
	case optStr(a, "col") != "":
		if err := noGrouping(fn, a); err != nil {
			return nil, err
		}
		return planColumnMean(env, src, a)
	}
	if err := noGrouping(fn, a); err != nil {
		return nil, err
	}
	sc := src.Schema
	eps, delta := a.Float("eps"), a.Float("delta")
	if delta == 0 {
		return nil, Errorf(NameArgumentError, "%s: the row-vector form (columns=, rows clipped to a norm) uses the Gaussian mechanism and needs delta > 0 (for example delta=1e-6, or leave delta out inside a budget block with a δ: the call takes the block's); for a pure-ε mean of one bounded column give col= without delta", fn)
	}
	idx, err := columnIndex(sc, a.Strs("columns"))
	if err != nil {
		return nil, argErr(fn, err)
	}
	clip, err := clipOf(fn, a, sc)
	if err != nil {
		return nil, err
	}
	nb, err := accounting.ParseNeighbour(sc.Neighbour)
	if err != nil {
		nb = accounting.ReplaceOne
	}
	rho, ev, ok := tabular.GaussianTarget(eps, delta, gaussianCalibration(src))
	if !ok {
		return nil, Errorf(NameArgumentError, "%s: could not calibrate to eps=%v, delta=%v", fn, eps, delta)
	}
	rhoSum, rhoCount := (1-meanCountShare)*rho, meanCountShare*rho
	// One unit moves the clipped sum by 2·clip when replaced, clip when
	// added or removed.
	sens := clip
	if nb == accounting.ReplaceOne {
		sens = 2 * clip
	}
	zSum, zCount := 1/math.Sqrt(2*rhoSum), 1/math.Sqrt(2*rhoCount)
	if zSum*math.Sqrt(float64(len(idx))) > 0x1p37 || zCount > 0x1p37 {
		return nil, Errorf(NameArgumentError, "%s: eps=%v is too small to represent the Noise: raise eps", fn, eps)
	}
	// The clipped sum's floating-point error has a public bound, charged
	// as extra sensitivity (tabular.RowSumExcess), with the PCA methods'
	// slack for the products forming the scale.
	sens = (sens + tabular.RowSumExcess(len(idx), clip)) * (1 + 1e-9)
	sigmaSum := noise.GaussianScale(sens, zSum, len(idx))
	sigmaCount := noise.GaussianScale(countSensitivity, zCount, 1)
	ev.Mechanism = "mean/gaussian"
	cols := make([]string, len(idx))
	for i, j := range idx {
		cols[i] = sc.Columns[j]
	}
	p := &Plan{Func: fn, Method: "mean/gaussian", Cost: ev, Eps: eps, Delta: delta, Columns: cols,
		Noise: fmt.Sprintf("Gaussian std %.4g per coordinate of the clipped sum (sensitivity %.4g), std %.4g on the count", sigmaSum, sens, sigmaCount),
		Note: fmt.Sprintf("calibrated to ε=%v, δ=%v %s, %.0f%% to the sum of rows clipped to norm %.4g, %.0f%% to the count of units (%s); mean = noisy sum / max(noisy count, 1)",
			eps, delta, calibrationWords(ev), 100*(1-meanCountShare), clip, 100*meanCountShare, nb),
		Params: publicParams(a, map[string]any{"clip": clip, "columns": cols})}
	if sc.Center != "public-mean" {
		// Each coordinate of a row clipped to norm clip lies in
		// [−clip, clip], and so does the mean.
		// The interval is for the exact sum: the computed one is within
		// half the charged excess of it.
		p.Params[ErrorParam] = ratioModel(true, sigmaSum, sigmaCount, tabular.RowSumExcess(len(idx), clip)/2, -clip, clip)
	}
	p.setWindowedMemory(env, src, mul(i64(sc.D), 8, 4), userVectorBytes(src, sc.D),
		fmt.Sprintf("a pass over rows of width %d", readWidth(src)), "Average fewer columns")
	// On a live table the clipped rows are summed by one statement in the
	// engine (engineRowSum); its rounding is within the excess charged
	// above (sqlplan.RowSumExcess, TestRowSumExcessCharged).
	p.rowSum = &sqlplan.Moments{Columns: cols, Bounds: sc.Bounds, Clip: clip}
	p.run = func(ctx context.Context, d *Data) (any, error) {
		var sum []float64
		var r int
		if d.Rows == nil && d.SQL != nil {
			sum, r, err = engineRowSum(ctx, d, *p.rowSum)
		} else {
			var units rows.Source
			if units, err = unitSource(ctx, d, p.userWindow); err != nil {
				return nil, err
			}
			sum, r, err = tabular.ClippedRowSum(ctx, units, idx, clip)
		}
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := env.sampler()
		s.AddGaussian(sum, sigmaSum)
		cnt := []float64{float64(r)}
		s.AddGaussian(cnt, sigmaCount)
		den := math.Max(cnt[0], 1)
		mean := make([]float64, len(idx))
		for j := range mean {
			mean[j] = sum[j] / den
			if sc.Center == "public-mean" && len(sc.Mean) == sc.D {
				mean[j] += sc.Mean[idx[j]] // the public mean removed at registration
			}
		}
		out := &Mean{Values: mean}
		if sc.Center != "public-mean" {
			out.Sums, out.Counts = sum, cnt
		}
		return out, nil
	}
	return p, nil
}

// gaussianCalibration is the calibration of the dataset's Gaussian calls:
// exact GDP (σ = Δ/μ*(ε, δ)) under the gdp accountant, which composes μ²
// exactly, zCDP (σ = Δ/√(2ρ*(ε, δ))) under every other. The accountant is
// public and fixed at registration, so the choice reveals nothing.
func gaussianCalibration(src Ref) tabular.Calibration {
	if src.Schema.Accountant == accounting.ModeGDP.String() {
		return tabular.CalibrateGDP
	}
	return tabular.CalibrateZCDP
}

// calibrationWords describes a Gaussian call's calibration for its plan
// note, e.g. "via zCDP: ρ=0.0219" or "via exact GDP: μ=0.2092".
func calibrationWords(ev accounting.Event) string {
	if ev.Kind == accounting.GDP {
		return fmt.Sprintf("via exact GDP: μ=%.4g", ev.Mu)
	}
	return fmt.Sprintf("via zCDP: ρ=%.4g", ev.Rho)
}
