package release

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/dppca"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// autoMaxGaussD is the largest dimension for which method="auto" picks
// Analyze Gauss (see docs/dsl.md): one noisy d×d covariance beats L noisy
// d×k products while d is small; beyond it the power method's noise, which
// grows with d·k per iteration rather than d², wins.
const autoMaxGaussD = 100

// autoMethod is the documented rule of method="auto": public facts only.
func autoMethod(d, k int) string {
	if d <= autoMaxGaussD {
		return pca.MethodGauss
	}
	return pca.MethodNPM
}

// PCAMethods returns the private_pca methods this build wires.
func PCAMethods() []string {
	ms := make([]string, 0, len(pcaAvailable))
	for m := range pcaAvailable {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	return ms
}

// pcaAvailable lists the private_pca methods this build wires.
var pcaAvailable = map[string]bool{"auto": true, "npm": true, "adaptive": true, "gauss": true, "dppca": true, "oja": true, "oja-shuffle": true, "federated": true, pca.MethodPPMEntry: true}

// pcaCenters lists the methods that run centred (center=true): their row
// passes read a rows.Source, which the private mean shifts (pca.Options.Center).
var pcaCenters = map[string]bool{pca.MethodGauss: true, pca.MethodNPM: true, pca.MethodAdaptive: true}

// ojaGap is the public eigengap hint private Oja's learning rate uses (rows
// are scaled into the unit ball, so eigenvalues lie in [0, 1]).
const ojaGap = 0.1

func argErr(fn string, err error) *Error {
	return Errorf(NameArgumentError, "%s: %v", fn, err)
}

// neighbourOf is the neighbouring relation a call is calibrated under: the
// one the data owner registered, which binds. The keyword may restate it
// and nothing more: on replace-one data a call calibrated under add-remove
// would get half the sensitivity for the same charge, and add-remove data
// under replace-one would let mechanisms whose minibatches or averages
// need n run although neighbours differ in n. Public synthetic data have
// no owner to bind them: there the keyword chooses.
func neighbourOf(fn string, a *Args, src Ref) (accounting.Neighbour, error) {
	sc := src.Schema
	reg, err := accounting.ParseNeighbour(sc.Neighbour)
	if err != nil {
		return 0, Errorf(NameDatasetError, "%s: dataset %q has an unknown neighbouring relation %q in the registry: run `privnotes ledger verify`", fn, src.Name, sc.Neighbour)
	}
	s := a.Str("neighbour")
	if s == "" {
		return reg, nil
	}
	nb, err := accounting.ParseNeighbour(s)
	if err != nil {
		return 0, argErr(fn, err)
	}
	if nb != reg && !src.Synthetic() {
		return 0, Errorf(NameArgumentError, "%s: neighbour=%q: dataset %q was registered with %s neighbours by its data owner, and every call on it is calibrated under that relation; drop the keyword (or give neighbour=%q)", fn, s, src.Name, reg, reg.String())
	}
	return nb, nil
}

// clipOf is the call's clip norm: the keyword, else the registered one.
// Every mechanism takes clips in [pca.MinClip, pca.MaxClip]: within it no
// noise scale under- or overflows for any row count up to the row limit.
func clipOf(fn string, a *Args, sc ledger.Schema) (float64, error) {
	c := a.Float("clip")
	if c == 0 {
		c = sc.Clip
	}
	if c == 0 { // registered without --clip (for counts, histograms, sums, quantiles only): refused at plan time, before any charge
		return 0, Errorf(NameArgumentError, "%s: dataset %q was registered without --clip, a public L2 norm to clip its rows to, which this method needs; give clip=NORM (chosen without looking at the data), or ask its data owner to register it again with --clip NORM", fn, sc.Name)
	}
	if !(c >= pca.MinClip && c <= pca.MaxClip) {
		return 0, Errorf(NameArgumentError, "%s: clip=%v must be a number in [%g, %g]", fn, c, float64(pca.MinClip), float64(pca.MaxClip))
	}
	return c, nil
}

// publicUnits is the number of privacy units (rows, or users) of a source
// whose count is public: declared by the data owner at registration
// (--public-n), or synthetic data. A mechanism whose release depends on n
// beyond its noisy sums (minibatch sizes, averages over users) needs it:
// the number of rows or users of a dataset is private under both
// neighbouring relations (a filtered subset's size is a count query), and
// such a release would reveal it. Without a public n the call is refused
// before anything is charged.
func publicUnits(fn, method string, src Ref) (int, error) {
	if n := src.Schema.PublicN; n > 0 {
		return n, nil
	}
	units := "rows"
	if src.Schema.Unit == "user" {
		units = "users"
	}
	return 0, Errorf(NameArgumentError, "%s: %s depends on the number of %s, which dataset %q keeps private; the data owner can declare it public (privnotes dataset add --public-n), or use a method that does not need it (npm, gauss, adaptive, federated)", fn, method, units, src.Name)
}

func publicParams(a *Args, extra map[string]any) map[string]any {
	p := map[string]any{}
	for k, v := range a.Vals {
		p[k] = v
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// gapAuto reads the gap keyword: "auto" (the adaptive method selects the
// gap privately) or "" (the default κ₀). It is refused for any other
// method before anything is charged.
func gapAuto(fn string, a *Args, method string) (bool, error) {
	g, _ := a.Vals["gap"].(string) // absent from calls built without the table
	if g == "" {
		return false, nil
	}
	if g != "auto" {
		return false, Errorf(NameArgumentError, "%s: gap=%q: use gap=\"auto\" (or leave gap out for κ₀ = 0.5)", fn, g)
	}
	if method != pca.MethodAdaptive {
		return false, Errorf(NameArgumentError, "%s: gap=\"auto\" applies to method \"adaptive\" only (this call runs %q)", fn, method)
	}
	return true, nil
}

// planPCA validates a private_pca call and plans it. It reads no data.
func planPCA(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivatePCA.Name
	sc := src.Schema
	center, share := a.Bool("center"), a.Float("center_share")
	if !center && share != 0 {
		return nil, Errorf(NameArgumentError, "%s: center_share=%v applies with center=true only", fn, share)
	}
	if sc.IsMatrix() {
		if center {
			return nil, Errorf(NameArgumentError, "%s: center=true centres the rows of a row dataset; dataset %q is a matrix dataset (entry-level DP), which has no rows to centre", fn, src.Name)
		}
		return planEntry(env, fn, src, a)
	}
	d, k := sc.D, a.Int("k")
	method := a.Str("method")
	if !pcaAvailable[method] {
		return nil, Errorf(NameNotAvailable, "method %q is not available in this build", method)
	}
	chosen := method
	if method == "auto" {
		chosen = autoMethod(d, k)
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	nb, err := neighbourOf(fn, a, src)
	if err != nil {
		return nil, err
	}
	clip, err := clipOf(fn, a, sc)
	if err != nil {
		return nil, err
	}
	p := &Plan{Func: fn, Eps: eps, Delta: delta, Columns: sc.Columns,
		Params: publicParams(a, map[string]any{"method": chosen, "requested_method": method, "clip": clip, "neighbour": nb.String()})}
	if method == "auto" {
		p.Note = fmt.Sprintf("method auto chose %s (d=%d ≤ %d → gauss, else npm). ", chosen, d, autoMaxGaussD)
		if d > autoMaxGaussD {
			p.Note = fmt.Sprintf("method auto chose %s (d=%d > %d). ", chosen, d, autoMaxGaussD)
		}
	}
	autoGap, err := gapAuto(fn, a, chosen)
	if err != nil {
		return nil, err
	}
	if center && !pcaCenters[chosen] {
		return nil, Errorf(NameArgumentError, "%s: center=true is available for methods \"gauss\", \"npm\" and \"adaptive\" (and \"auto\", which picks one of them), whose row passes take the private mean's shift; this call runs %q: nothing was charged", fn, chosen)
	}
	switch chosen {
	case pca.MethodNPM, pca.MethodAdaptive, pca.MethodGauss:
		calib, err := pca.ParseCalibration(a.Str("calibration"))
		if err != nil {
			return nil, argErr(fn, err)
		}
		calib = pcaGaussianCalibration(sc, chosen, calib)
		if calib == pca.CalibGDP {
			p.Note += "calibration: exact GDP (σ = Δ/μ*), the gdp accountant's. "
			p.Params["calibration"] = calib.String()
		}
		if a.Int("providers") != 0 || a.Int("sparsity") != 0 {
			return nil, Errorf(NameArgumentError, "%s: providers and sparsity apply to method \"federated\" only", fn)
		}
		opt := pca.Options{K: k, Iters: a.Int("iters"), Eps: eps, Delta: delta, Calibration: calib, Neighbour: nb, Clip: clip, Noise: env.sampler(),
			PublicN: sc.PublicN, AutoGap: autoGap, Center: center, CenterShare: share}
		opt.Progress = p.progress.step
		pl, err := pca.PlanMethod(chosen, opt, d)
		if err != nil {
			return nil, argErr(fn, err)
		}
		p.reportsSteps(pl.Iters) // gauss: 1, which reports nothing
		p.Method, p.Cost, p.HasValues = "pca/"+chosen, pl.Cost, true
		p.Noise = fmt.Sprintf("noise multiplier %.4g, std %.4g per coordinate (rows scaled to norm ≤ 1 by the clip %.4g), %d iteration(s)", pl.NoiseMultiplier, pl.NoiseStd, clip, pl.Iters)
		if chosen == pca.MethodAdaptive {
			p.Noise = fmt.Sprintf("noise multiplier %.4g per unit of the threshold, sparse-vector ε=%.4g per iteration, %d iteration(s)", pl.NoiseMultiplier, pl.SVTEps, pl.Iters)
		}
		if autoGap {
			p.Noise = fmt.Sprintf("gap=auto: %d runs, %d iterations in all, then the exponential mechanism with ε=%.4g; per run (κ, T, noise multiplier per unit of the threshold, sparse-vector ε):", len(pl.Candidates), pl.Iters, pl.SelectEps)
			for _, c := range pl.Candidates {
				p.Noise += fmt.Sprintf(" (%v, %d, %.4g, %.4g)", c.Gap, c.Iters, c.NoiseMultiplier, c.SVTEps)
			}
		}
		if center {
			p.Noise += fmt.Sprintf("; centred: a private mean first, %.3g of the budget (ρ=%.4g), std %.4g per coordinate of (Σ rows, n), then the rows centred by it and clipped again", pl.CenterShare, pl.CenterRho, pl.CenterStd)
			p.Params["center_share"] = pl.CenterShare
			// The mean's coordinates carry intervals from the noisy
			// parts released with it (PCA.CenterSums, CenterCount).
			p.Params[CenterErrorParam] = centerModel(pl.CenterStd, pca.CenterExcess(), clip)
		}
		p.Note += pl.Note
		if chosen == pca.MethodGauss {
			// The released matrix's eigenvalues and trace carry
			// intervals (in the data's units: the rows were scaled by
			// 1/clip, the matrix by clip²).
			p.Params[ErrorParam] = spectralModel(d, pl.NoiseStd*clip*clip, pl.RoundingExcess*clip*clip)
		} else if e, ok := pl.ValueError(); ok {
			// npm and adaptive (gap="auto" too): every eigenvalue
			// estimate against its last step's noise-free value.
			p.Params[ErrorParam] = lastStepModel(e, clip)
		}
		advice := "Lower k or use a subset with fewer columns"
		if chosen == pca.MethodGauss {
			advice = "Method gauss holds d×d matrices: use method \"npm\", which holds d×k, or a subset with fewer columns"
		}
		p.setWindowedMemory(env, src, pcaPowerMemory(chosen, d, k, autoGap), userVectorBytes(src, d), fmt.Sprintf("d=%d, k=%d", d, k), advice)
		if chosen == pca.MethodGauss || (chosen == pca.MethodNPM && !center) {
			p.moments = &sqlplan.Moments{Columns: sc.Columns, Bounds: sc.Bounds, Clip: clip}
			if center {
				// The statement is checked as long as it can print: the
				// private mean, not yet drawn, shifts by literals of at
				// most 24 characters each (this one's shortest form).
				p.moments.Shift = make([]float64, d)
				for j := range p.moments.Shift {
					p.moments.Shift[j] = -0x1p-1022 // -2.2250738585072014e-308
				}
			}
		}
		p.run = func(ctx context.Context, data *Data) (any, error) {
			if data != nil && data.Rows == nil && data.SQL != nil && (chosen == pca.MethodGauss || chosen == pca.MethodNPM) {
				// A live table: the second moment C is summed in the
				// engine; gauss adds its noise to it, npm iterates C·X
				// on it in privnotes (pca.Plan.RunGram, enginePCA).
				r, err := engineGauss(ctx, data, pl, clip)
				if err != nil {
					return nil, err
				}
				return &PCA{Components: r.Components, Values: r.Values, Gap: r.Gap, Center: r.Center, CenterSums: r.CenterSums, CenterCount: r.CenterCount, TotalVariance: r.TotalVariance}, nil
			}
			src, err := unitSource(ctx, data, p.userWindow)
			if err != nil {
				return nil, err
			}
			r, err := pl.RunSource(ctx, src)
			if err != nil {
				return nil, err
			}
			return &PCA{Components: r.Components, Values: r.Values, Gap: r.Gap, Center: r.Center, CenterSums: r.CenterSums, CenterCount: r.CenterCount, TotalVariance: r.TotalVariance}, nil
		}
	case dppca.MethodDPPCA, dppca.MethodPrivateOja:
		if k != 1 {
			return nil, Errorf(NameArgumentError, "%s: method %q estimates the top component only: use k=1 (or method \"npm\" or \"gauss\" for k > 1)", fn, chosen)
		}
		if nb != accounting.ReplaceOne {
			return nil, Errorf(NameArgumentError, "%s: method %q is private under replace-one neighbours only (its minibatches need a public n); this dataset or call uses %s", fn, chosen, nb)
		}
		n, err := publicUnits(fn, fmt.Sprintf("method %q", chosen), src)
		if err != nil {
			return nil, err
		}
		if a.Int("providers") != 0 || a.Int("sparsity") != 0 {
			return nil, Errorf(NameArgumentError, "%s: providers and sparsity apply to method \"federated\" only", fn)
		}
		calib, why := dppcaCalibration(chosen, a, sc.Accountant, eps)
		p.Note += why
		opt := dppca.Options{Eps: eps, Delta: delta, Calibration: calib, Neighbour: accounting.ReplaceOne,
			Steps: a.Int("iters"), Centred: sc.Center == "public-mean", Noise: env.sampler(), Progress: p.progress.step}
		var pl *dppca.Plan
		if chosen == dppca.MethodDPPCA {
			pl, err = dppca.PlanDPPCA(opt, d)
		} else {
			opt.Beta, opt.Gap = 1, ojaGap
			pl, err = dppca.PlanPrivateOja(opt, d)
		}
		if err != nil {
			return nil, argErr(fn, err)
		}
		if n < pl.MinRows && !a.Bool("pad") {
			// The count is public here, so saying it before the charge
			// tells nothing; the run would pad, spend and release noise.
			need := fmt.Sprintf("at least %d", pl.MinRows)
			if pl.NeededN > pl.MinRows {
				need += fmt.Sprintf(" (about %d for a useful estimate)", pl.NeededN)
			}
			return nil, Errorf(NameArgumentError, "%s: method %q at eps=%v, delta=%v with %d steps needs %s rows, and dataset %q has %d (declared public): nothing was charged. Raise eps, lower iters, use method \"gauss\" or \"npm\", or give pad=true to run on zero-padded rows (private, but mostly noise)", fn, chosen, eps, delta, pl.Steps, need, src.Name, n)
		}
		p.Method, p.Cost = "dppca/"+chosen, pl.Cost
		p.reportsSteps(pl.Steps)
		if chosen == dppca.MethodPrivateOja {
			p.Noise = fmt.Sprintf("noise multiplier %.4g, std %.4g on each clipped minibatch sum (rows scaled to norm ≤ 1 by the clip %.4g), %d steps", pl.NoiseMultiplier, pl.NoiseStd, clip, pl.Steps)
		} else {
			p.Noise = fmt.Sprintf("Gaussian multiplier %.4g per unit of the private gradient-spread estimate (rows scaled to norm ≤ 1 by the clip %.4g), %d steps", pl.NoiseMultiplier, clip, pl.Steps)
		}
		p.Note += pl.Note
		p.Params["calibration"] = calib.String()
		p.Params[ErrorParam] = noIntervalModel(whyDirection)
		heldRows(p, src, n, d, mul(i64(pl.MinRows), 4)) // pad=true: an int32 slot per record up to MinRows
		p.run = func(ctx context.Context, data *Data) (any, error) {
			x, err := unitMatrix(ctx, data)
			if err != nil {
				return nil, err
			}
			// DP-PCA and private Oja visit the rows in a shuffled order:
			// they read them by position, so they are held in memory.
			r, err := pl.RunSource(ctx, rows.FromDense(scaleRows(x, clip)))
			if err != nil {
				return nil, err
			}
			return &PCA{Components: r.Components}, nil
		}
	case dppca.MethodOjaShuffle:
		if err := planOjaShuffle(env, src, a, p, nb, clip); err != nil {
			return nil, err
		}
	case "federated":
		opt := dpspcaOptions(a, d)
		s := opt.Sparsity
		providers := a.Int("providers")
		if providers == 0 {
			providers = 1
		}
		if providers < 1 || providers > 1000 {
			return nil, Errorf(NameArgumentError, "%s: providers=%d: use 1..1000", fn, providers)
		}
		pl, err := federated.PlanPCA(opt, d)
		if err != nil {
			return nil, argErr(fn, err)
		}
		p.Method, p.Cost = "federated/dpspca", pl.Cost
		p.Noise = fmt.Sprintf("noise multiplier %.4g, std %.4g per power step (rows scaled to norm ≤ 1 by the clip %.4g), %d steps, %d provider(s)", pl.StepMultiplier, pl.StepStd, clip, pl.Iters, providers)
		p.Note += pl.Note
		p.Params["sparsity"], p.Params["providers"] = s, providers
		p.Params[ErrorParam] = noIntervalModel(whyDirection)
		// Each provider makes its own passes, each holding a window.
		p.setWindowedMemory(env, src, mul(i64(providers), add(mul(i64(d), i64(k), 8, 8), scanMemory(readWidth(src)))), mul(userVectorBytes(src, d), i64(providers)),
			fmt.Sprintf("d=%d, k=%d, %d provider(s) each with its own pass", d, k, providers), "Use fewer providers or a lower k")
		p.run = func(ctx context.Context, data *Data) (any, error) {
			src, err := unitSource(ctx, data, p.userWindow)
			if err != nil {
				return nil, err
			}
			ps, err := roundRobinProviders(env, scaledSource(src, clip), providers)
			if err != nil {
				return nil, err
			}
			r, err := pl.Coordinate(ctx, federated.NewLocal(ps))
			if err != nil {
				return nil, err
			}
			return &PCA{Components: r.Q, Support: append([]int(nil), r.Support...)}, nil
		}
	default:
		return nil, Errorf(NameNotAvailable, "method %q is not available in this build", chosen)
	}
	return p, nil
}

// whyDirection is the display's reason why the components of private_pca
// (and, alike, the representations of private_fedrep and
// private_classify_jl) carry no interval: a bound on a direction's angle
// to the true one needs the data's eigengap (Davis–Kahan), which is not a
// public parameter, so none follows from the noise alone.
const whyDirection = "the release is a set of directions, whose angle to the true ones depends on the data's eigengap (Davis–Kahan), not on the noise alone; no interval follows from public parameters"

// pcaGaussianCalibration is the calibration of npm, gauss (also when auto
// picks them) and adaptive: on a dataset under the gdp accountant the
// default (zcdp) becomes exact GDP, as for the tabular calls
// (gaussianCalibration): σ = Δ/μ*(ε, δ) and a μ*-GDP charge, which the gdp
// filter composes exactly. The accountant is public and fixed at
// registration, so the choice reveals nothing. adaptive with gap="auto"
// is calibrated alike: its four runs and its exponential-mechanism
// selection split μ*² as the zcdp plan splits ρ* (pca.planAdaptiveAuto).
// calibration="paper" keeps its own; every other accountant keeps zcdp
// bit for bit.
func pcaGaussianCalibration(sc ledger.Schema, method string, calib pca.Calibration) pca.Calibration {
	if calib != pca.CalibZCDP || sc.Accountant != accounting.ModeGDP.String() {
		return calib
	}
	switch method {
	case pca.MethodNPM, pca.MethodGauss, pca.MethodAdaptive:
		return pca.CalibGDP
	}
	return calib
}

// dppcaCalibration is the calibration of DP-PCA and private Oja. An
// explicit calibration keyword wins ("zcdp" selects the analytic
// calibration). Without it the calibration follows the dataset's
// accountant: under zcdp the analytic one (valid for every ε; for private
// Oja its cost is a GDP event, which composes as ρ = μ²/2 instead of the
// ρ = ε²/2 an approximate (ε, δ) event costs: (0.5, 1e-7) alone would cost
// ε ≈ 2.4 at δ = 1e-6), under basic or advanced composition the paper's, as
// reproductions expect, unless ε is outside the paper's range.
func dppcaCalibration(method string, a *Args, accountant string, eps float64) (dppca.Calibration, string) {
	if a.Given["calibration"] {
		if a.Str("calibration") == "paper" {
			return dppca.CalibPaper, ""
		}
		return dppca.CalibAnalytic, ""
	}
	if accountant == "" || accountant == accounting.ModeZCDP.String() || accountant == accounting.ModeGDP.String() || accountant == accounting.ModeRDP.String() {
		// Analytic costs are zCDP/GDP events; the paper's are (ε, δ),
		// which the gdp and rdp accountants cannot compose.
		if accountant == "" {
			accountant = accounting.ModeZCDP.String()
		}
		return dppca.CalibAnalytic, fmt.Sprintf("calibration: analytic, the default under the %s accountant. ", accountant)
	}
	if PaperEpsOK(method, eps) {
		return dppca.CalibPaper, fmt.Sprintf("calibration: the paper's, the default under the %s accountant. ", accountant)
	}
	return dppca.CalibAnalytic, fmt.Sprintf("calibration: analytic, because eps=%v is outside the paper's range (the default under the %s accountant is the paper's). ", eps, accountant)
}

// PaperEpsOK reports whether the paper's calibration of a dppca method
// covers eps (DP-PCA: ε < 0.9, Theorem 5.1; private Oja: ε < 1).
func PaperEpsOK(method string, eps float64) bool {
	if method == dppca.MethodDPPCA {
		return eps < 0.9
	}
	return eps < 1
}

// roundRobinProviders deals the rows round-robin to n providers (a
// public rule, streaming: federated.RoundRobin); a provider left without
// rows answers as one zero row, which contributes nothing, so the split
// never fails on the private row count.
func roundRobinProviders(env *Local, src rows.Source, n int) ([]federated.Provider[federated.PCARequest, federated.PCAReply], error) {
	parts := federated.RoundRobin(src, n)
	out := make([]federated.Provider[federated.PCARequest, federated.PCAReply], n)
	for i, part := range parts {
		p, err := federated.NewPCAProviderSource(part, env.sampler())
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// planOjaShuffle plans private Oja with shuffling (Algorithm 2, one step
// per record in a secret order): (ε, δ)-DP through the shuffling bound,
// which needs the public row count and holds only for tiny ε; a target
// outside its regime is refused here, with the row counts where it would
// hold, before anything is charged.
func planOjaShuffle(env *Local, src Ref, a *Args, p *Plan, nb accounting.Neighbour, clip float64) error {
	fn, method := catalog.PrivatePCA.Name, dppca.MethodOjaShuffle
	sc := src.Schema
	if a.Int("k") != 1 {
		return Errorf(NameArgumentError, "%s: method %q estimates the top component only: use k=1 (or method \"npm\" or \"gauss\" for k > 1)", fn, method)
	}
	if nb != accounting.ReplaceOne {
		return Errorf(NameArgumentError, "%s: method %q is private under replace-one neighbours only (the shuffling bound needs a public n); this dataset or call uses %s", fn, method, nb)
	}
	if a.Int("iters") != 0 || a.Int("providers") != 0 || a.Int("sparsity") != 0 {
		return Errorf(NameArgumentError, "%s: method %q takes one step per row, in a secret random order: drop iters (and providers, sparsity)", fn, method)
	}
	if a.Given["calibration"] && a.Str("calibration") != "paper" {
		return Errorf(NameArgumentError, "%s: method %q is (ε, δ)-DP through the shuffling bound with the paper's Gaussian mechanism only: drop calibration (or give \"paper\")", fn, method)
	}
	if sc.Accountant == accounting.ModeGDP.String() {
		return Errorf(NameArgumentError, "%s: method %q costs an (ε, δ) event, which dataset %q's gdp accountant cannot compose: use method \"oja\" or \"dppca\"", fn, method, src.Name)
	}
	n, err := publicUnits(fn, fmt.Sprintf("method %q", method), src)
	if err != nil {
		return err
	}
	opt := dppca.Options{Eps: a.Float("eps"), Delta: a.Float("delta"), Neighbour: accounting.ReplaceOne, Beta: 1, Gap: ojaGap,
		PublicN: n, Centred: sc.Center == "public-mean", Noise: env.sampler(), Progress: p.progress.step}
	pl, err := dppca.PlanOjaShuffle(opt, sc.D)
	if err != nil {
		if re, ok := err.(*dppca.RegimeError); ok {
			return Errorf(NameArgumentError, "%s: %v: nothing was charged. Give eps ≤ %s, or use method \"dppca\" or \"oja\" (Eq. 7), which cover larger eps", fn, err, floor4(re.Shuffle.MaxEps))
		}
		return argErr(fn, err)
	}
	p.Method, p.Cost = "dppca/"+method, pl.Cost
	p.reportsSteps(dppca.OjaShuffleProgress)
	p.Noise = fmt.Sprintf("Gaussian std %.4g on each clipped one-row gradient (multiplier %.4g, local ε0=%.4g, δ0=%.3g; rows scaled to norm ≤ 1 by the clip %.4g), %d steps", pl.NoiseStd, pl.NoiseMultiplier, pl.Shuffle.LocalEps, pl.Shuffle.LocalDelta, clip, pl.Steps)
	p.Note += pl.Note
	p.Params["calibration"] = "paper"
	p.Params[ErrorParam] = noIntervalModel(whyDirection)
	heldRows(p, src, n, sc.D, mul(i64(max(n, pl.Steps)), 4)) // the secret order: an int32 per step
	p.run = func(ctx context.Context, data *Data) (any, error) {
		x, err := unitMatrix(ctx, data)
		if err != nil {
			return nil, err
		}
		// The steps visit the rows in a secret order, by position: they
		// are held in memory.
		r, err := pl.RunSource(ctx, rows.FromDense(scaleRows(x, clip)))
		if err != nil {
			return nil, err
		}
		return &PCA{Components: r.Components}, nil
	}
	return nil
}

// heldRows is the estimate of the methods that visit the rows in a
// shuffled order and so hold them: n is public for them (they need it), so
// the whole memory is known before the charge.
func heldRows(p *Plan, src Ref, n, d int, extra int64) {
	p.setMemory(add(scanMemory(readWidth(src)), heldRowsMemory(n, d), extra),
		fmt.Sprintf("the dataset's %d public rows of width %d held in memory for the shuffled order", n, d),
		"Use method \"npm\" or \"gauss\", which stream the rows, or a subset with fewer columns")
}

// floor4 prints x > 0 rounded down to 4 significant digits, so that the
// printed value is itself admissible.
func floor4(x float64) string {
	if !(x > 0) {
		return "0 (no eps fits)"
	}
	f := math.Pow(10, math.Floor(math.Log10(x))-3)
	return strconv.FormatFloat(math.Floor(x/f)*f, 'g', 4, 64)
}
