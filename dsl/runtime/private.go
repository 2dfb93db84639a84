package runtime

import (
	"context"
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/dppca"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// planned is a validated private call: its exact cost, its public
// description and the run that may start once the cost is charged.
type planned struct {
	fn        string
	method    string // the mechanism as the receipt names it
	cost      accounting.Event
	eps       float64
	delta     float64
	noise     string // the noise scale, in words (never a function of n)
	note      string
	params    map[string]any
	run       func(ctx context.Context, d *ledger.Data) (any, error)
	columns   []string
	hasValues bool
}

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

// pcaAvailable lists the private_pca methods this build wires.
var pcaAvailable = map[string]bool{"auto": true, "npm": true, "adaptive": true, "gauss": true, "dppca": true, "oja": true, "federated": true}

// ojaGap is the public eigengap hint private Oja's learning rate uses (rows
// are scaled into the unit ball, so eigenvalues lie in [0, 1]).
const ojaGap = 0.1

func argErr(fn string, err error) *Error {
	return errorf(NameArgumentError, "%s: %v", fn, err)
}

// neighbourOf is the neighbouring relation a call is calibrated under: the
// one the data owner registered, which binds. The keyword may restate it
// and nothing more: on replace-one data a call calibrated under add-remove
// would get half the sensitivity for the same charge, and add-remove data
// under replace-one would let mechanisms whose minibatches or averages
// need n run although neighbours differ in n. Public synthetic data have
// no owner to bind them: there the keyword chooses.
func neighbourOf(fn string, a *args, src *source) accounting.Neighbour {
	sc := src.schema
	reg, err := accounting.ParseNeighbour(sc.Neighbour)
	if err != nil {
		panic(errorf(NameDatasetError, "%s: dataset %q has an unknown neighbouring relation %q in the registry: run `privnotes ledger verify`", fn, src.label(), sc.Neighbour))
	}
	s := a.str("neighbour")
	if s == "" {
		return reg
	}
	nb, err := accounting.ParseNeighbour(s)
	if err != nil {
		panic(argErr(fn, err))
	}
	if nb != reg && src.synth == nil {
		panic(errorf(NameArgumentError, "%s: neighbour=%q: dataset %q was registered with %s neighbours by its data owner, and every call on it is calibrated under that relation; drop the keyword (or give neighbour=%q)", fn, s, src.label(), reg, reg.String()))
	}
	return nb
}

// clipOf is the call's clip norm: the keyword, else the registered one.
// Every mechanism takes clips in [pca.MinClip, pca.MaxClip]: within it no
// noise scale under- or overflows for any row count up to the row limit.
func clipOf(fn string, a *args, sc ledger.Schema) float64 {
	c := a.float("clip")
	if c == 0 {
		c = sc.Clip
	}
	if !(c >= pca.MinClip && c <= pca.MaxClip) {
		panic(errorf(NameArgumentError, "%s: clip=%v must be a number in [%g, %g]", fn, c, float64(pca.MinClip), float64(pca.MaxClip)))
	}
	return c
}

// publicUnits is the number of privacy units (rows, or users) of a source
// whose count is public: declared by the data owner at registration
// (--public-n), or synthetic data. A mechanism whose release depends on n
// beyond its noisy sums (minibatch sizes, averages over users) needs it:
// the number of rows or users of a dataset is private under both
// neighbouring relations (a filtered subset's size is a count query), and
// such a release would reveal it. Without a public n the call is refused
// before anything is charged.
func publicUnits(fn, method string, src *source) int {
	if n := src.schema.PublicN; n > 0 {
		return n
	}
	units := "rows"
	if src.schema.Unit == "user" {
		units = "users"
	}
	panic(errorf(NameArgumentError, "%s: %s depends on the number of %s, which dataset %q keeps private; the data owner can declare it public (privnotes dataset add --public-n), or use a method that does not need it (npm, gauss, adaptive, federated)", fn, method, units, src.label()))
}

func publicParams(a *args, extra map[string]any) map[string]any {
	p := map[string]any{}
	for k, v := range a.params() {
		p[k] = v
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// planPCA validates a private_pca call and plans it. It reads no data.
func planPCA(src *source, a *args) *planned {
	const fn = "private_pca"
	sc := src.schema
	d, k := sc.D, a.int("k")
	method := a.str("method")
	if !pcaAvailable[method] {
		panic(errorf(NameNotAvailable, "method %q is not available in this build", method))
	}
	chosen := method
	if method == "auto" {
		chosen = autoMethod(d, k)
	}
	eps, delta := a.float("eps"), a.float("delta")
	nb := neighbourOf(fn, a, src)
	clip := clipOf(fn, a, sc)
	p := &planned{fn: fn, eps: eps, delta: delta, columns: sc.Columns,
		params: publicParams(a, map[string]any{"method": chosen, "requested_method": method, "clip": clip, "neighbour": nb.String()})}
	if method == "auto" {
		p.note = fmt.Sprintf("method auto chose %s (d=%d ≤ %d → gauss, else npm). ", chosen, d, autoMaxGaussD)
		if d > autoMaxGaussD {
			p.note = fmt.Sprintf("method auto chose %s (d=%d > %d). ", chosen, d, autoMaxGaussD)
		}
	}
	switch chosen {
	case pca.MethodNPM, pca.MethodAdaptive, pca.MethodGauss:
		calib, err := pca.ParseCalibration(a.str("calibration"))
		if err != nil {
			panic(argErr(fn, err))
		}
		if a.int("providers") != 0 || a.int("sparsity") != 0 {
			panic(errorf(NameArgumentError, "%s: providers and sparsity apply to method \"federated\" only", fn))
		}
		opt := pca.Options{K: k, Iters: a.int("iters"), Eps: eps, Delta: delta, Calibration: calib, Neighbour: nb, Clip: clip, Noise: newSampler()}
		pl, err := pca.PlanMethod(chosen, opt, d)
		if err != nil {
			panic(argErr(fn, err))
		}
		p.method, p.cost, p.hasValues = "pca/"+chosen, pl.Cost, true
		p.noise = fmt.Sprintf("noise multiplier %.4g, std %.4g per coordinate (rows scaled to norm ≤ 1 by the clip %.4g), %d iteration(s)", pl.NoiseMultiplier, pl.NoiseStd, clip, pl.Iters)
		if chosen == pca.MethodAdaptive {
			p.noise = fmt.Sprintf("noise multiplier %.4g per unit of the threshold, sparse-vector ε=%.4g per iteration, %d iteration(s)", pl.NoiseMultiplier, pl.SVTEps, pl.Iters)
		}
		p.note += pl.Note
		p.run = func(ctx context.Context, data *ledger.Data) (any, error) {
			r, err := pl.Run(ctx, unitRows(data))
			if err != nil {
				return nil, err
			}
			return &PCAResult{Components: r.Components, Values: r.Values}, nil
		}
	case dppca.MethodDPPCA, dppca.MethodPrivateOja:
		if k != 1 {
			panic(errorf(NameArgumentError, "%s: method %q estimates the top component only: use k=1 (or method \"npm\" or \"gauss\" for k > 1)", fn, chosen))
		}
		if nb != accounting.ReplaceOne {
			panic(errorf(NameArgumentError, "%s: method %q is private under replace-one neighbours only (its minibatches need a public n); this dataset or call uses %s", fn, chosen, nb))
		}
		publicUnits(fn, fmt.Sprintf("method %q", chosen), src)
		if a.int("providers") != 0 || a.int("sparsity") != 0 {
			panic(errorf(NameArgumentError, "%s: providers and sparsity apply to method \"federated\" only", fn))
		}
		calib, why := dppcaCalibration(chosen, a, sc.Accountant, eps)
		p.note += why
		opt := dppca.Options{Eps: eps, Delta: delta, Calibration: calib, Neighbour: accounting.ReplaceOne,
			Steps: a.int("iters"), Centred: sc.Center == "public-mean", Noise: newSampler()}
		var pl *dppca.Plan
		var err error
		if chosen == dppca.MethodDPPCA {
			pl, err = dppca.PlanDPPCA(opt, d)
		} else {
			opt.Beta, opt.Gap = 1, ojaGap
			pl, err = dppca.PlanPrivateOja(opt, d)
		}
		if err != nil {
			panic(argErr(fn, err))
		}
		p.method, p.cost = "dppca/"+chosen, pl.Cost
		if chosen == dppca.MethodPrivateOja {
			p.noise = fmt.Sprintf("noise multiplier %.4g, std %.4g on each clipped minibatch sum (rows scaled to norm ≤ 1 by the clip %.4g), %d steps", pl.NoiseMultiplier, pl.NoiseStd, clip, pl.Steps)
		} else {
			p.noise = fmt.Sprintf("Gaussian multiplier %.4g per unit of the private gradient-spread estimate (rows scaled to norm ≤ 1 by the clip %.4g), %d steps", pl.NoiseMultiplier, clip, pl.Steps)
		}
		p.note += pl.Note
		p.params["calibration"] = calib.String()
		p.run = func(ctx context.Context, data *ledger.Data) (any, error) {
			r, err := pl.Run(ctx, scaleRows(unitRows(data), clip))
			if err != nil {
				return nil, err
			}
			return &PCAResult{Components: r.Components}, nil
		}
	case "federated":
		calib := federated.CalibZCDP
		if a.str("calibration") == "paper" {
			calib = federated.CalibPaper
		}
		s := a.int("sparsity")
		if s == 0 {
			s = d
		}
		providers := a.int("providers")
		if providers == 0 {
			providers = 1
		}
		if providers < 1 || providers > 1000 {
			panic(errorf(NameArgumentError, "%s: providers=%d: use 1..1000", fn, providers))
		}
		opt := federated.PCAOptions{K: k, Sparsity: s, Iters: a.int("iters"), Eps: eps, Delta: delta, Calibration: calib}
		pl, err := federated.PlanPCA(opt, d)
		if err != nil {
			panic(argErr(fn, err))
		}
		p.method, p.cost = "federated/dpspca", pl.Cost
		p.noise = fmt.Sprintf("noise multiplier %.4g, std %.4g per power step (rows scaled to norm ≤ 1 by the clip %.4g), %d steps, %d provider(s)", pl.StepMultiplier, pl.StepStd, clip, pl.Iters, providers)
		p.note += pl.Note
		p.params["sparsity"], p.params["providers"] = s, providers
		p.run = func(ctx context.Context, data *ledger.Data) (any, error) {
			rows := scaleRows(unitRows(data), clip)
			ps, err := splitProviders(rows, providers)
			if err != nil {
				return nil, err
			}
			r, err := pl.Coordinate(ctx, federated.NewLocal(ps))
			if err != nil {
				return nil, err
			}
			return &PCAResult{Components: r.Q, Support: append([]int(nil), r.Support...)}, nil
		}
	default:
		panic(errorf(NameNotAvailable, "method %q is not available in this build", chosen))
	}
	return p
}

// dppcaCalibration is the calibration of DP-PCA and private Oja. An
// explicit calibration keyword wins ("zcdp" selects the analytic
// calibration). Without it the calibration follows the dataset's
// accountant: under zcdp the analytic one (valid for every ε; for private
// Oja its cost is a GDP event, which composes as ρ = μ²/2 instead of the
// ρ = ε²/2 an approximate (ε, δ) event costs: (0.5, 1e-7) alone would cost
// ε ≈ 2.4 at δ = 1e-6), under basic or advanced composition the paper's, as
// reproductions expect, unless ε is outside the paper's range.
func dppcaCalibration(method string, a *args, accountant string, eps float64) (dppca.Calibration, string) {
	if a.given["calibration"] {
		if a.str("calibration") == "paper" {
			return dppca.CalibPaper, ""
		}
		return dppca.CalibAnalytic, ""
	}
	if accountant == "" || accountant == accounting.ModeZCDP.String() {
		return dppca.CalibAnalytic, "calibration: analytic, the default under the zcdp accountant. "
	}
	if paperEpsOK(method, eps) {
		return dppca.CalibPaper, fmt.Sprintf("calibration: the paper's, the default under the %s accountant. ", accountant)
	}
	return dppca.CalibAnalytic, fmt.Sprintf("calibration: analytic, because eps=%v is outside the paper's range (the default under the %s accountant is the paper's). ", eps, accountant)
}

// paperEpsOK reports whether the paper's calibration of a dppca method
// covers eps (DP-PCA: ε < 0.9, Theorem 5.1; private Oja: ε < 1).
func paperEpsOK(method string, eps float64) bool {
	if method == dppca.MethodDPPCA {
		return eps < 0.9
	}
	return eps < 1
}

// splitProviders deals the rows round-robin to n providers (a public
// rule); a provider left without rows gets one zero row, which contributes
// nothing, so the split never fails on the private row count.
func splitProviders(rows *mat.Dense, n int) ([]federated.Provider[federated.PCARequest, federated.PCAReply], error) {
	r, c := rows.Dims()
	parts := make([][]float64, n)
	for i := range r {
		parts[i%n] = append(parts[i%n], rows.RawRowView(i)...)
	}
	out := make([]federated.Provider[federated.PCARequest, federated.PCAReply], n)
	for i := range parts {
		x := parts[i]
		if len(x) == 0 {
			x = make([]float64, c)
		}
		p, err := federated.NewPCAProvider(mat.NewDense(len(x)/c, c, x), newSampler())
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// privatePCA implements private_pca.
func (rt *Runtime) privatePCA(ds any, kws ...KW) *PCAResult {
	out, rcpt, p, src := rt.runPrivate("private_pca", ds, kws, planPCA)
	res := out.(*PCAResult)
	res.Method, res.Columns, res.Receipt = p.method, append([]string(nil), src.schema.Columns...), rcpt
	return res
}

func mustArgs(fn string, kws []KW) *args {
	a, err := parseArgs(fn, kws)
	if err != nil {
		panic(err)
	}
	return a
}

// runPrivate is the sequence every private_* function shares: bind the
// call to the running cell, parse its keywords, resolve the dataset, plan
// from public facts, then execute (which charges before it reads). Errors
// about the arguments or the dataset are prefixed with the call's line.
func (rt *Runtime) runPrivate(fn string, ds any, kws []KW, plan func(*source, *args) *planned) (any, *Receipt, *planned, *source) {
	b := rt.current(fn)
	defer rt.lineOnError(b, fn)
	a := mustArgs(fn, kws)
	src := rt.resolve(fn, ds)
	p := planPublic(fn, src, a, plan)
	out, rcpt := rt.execute(b, src, p, a.block)
	return out, rcpt, p, src
}

// planPublic runs a plan. Plans read public facts only, so a panic there
// holds no private value; but its text is a mechanism's internal wording
// (a noise package's check), so it reaches the cell as an ArgumentError
// with a fixed text, before anything is charged.
func planPublic(fn string, src *source, a *args, plan func(*source, *args) *planned) (p *planned) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if _, ok := r.(interface{ ErrorName() string }); ok {
			panic(r)
		}
		panic(errorf(NameArgumentError, "%s: these parameters cannot be calibrated (a noise scale is out of the representable range); check eps, delta, clip, k and iters against %%help %s", fn, fn))
	}()
	return plan(src, a)
}

// execute charges the plan, then loads the data and runs the mechanism.
// Errors after the charge carry fixed messages: whether and why a
// mechanism failed may depend on the data. own is the budget block the
// call was written in, if any.
func (rt *Runtime) execute(b *binding, src *source, p *planned, own *block) (any, *Receipt) {
	ev := p.cost
	if !ev.HasTarget() {
		ev = ev.WithTarget(p.eps, p.delta)
	}
	if ev.Mechanism == "" {
		ev.Mechanism = p.method
	}
	if err := ev.Validate(); err != nil {
		panic(errorf(NameArgumentError, "%s: %v", p.fn, err))
	}
	ch, err := rt.charge(b, src, ev, p.params, own)
	if err != nil {
		panic(err)
	}
	rcpt := newReceipt(src, p, ev, ch)
	data, err, pv := guarded(func() (*ledger.Data, error) { return rt.load(src) })
	if err != nil || pv != nil {
		why := loadFailure
		if pv == nil {
			why = loadError(err)
		}
		panic(errorf(NameLedgerError, "%s: the data of %q could not be read after the charge (ledger record %d stands): %s", p.fn, src.label(), ch.ledgerID, why))
	}
	run := p.run
	if testRunHook != nil {
		run = testRunHook(run)
	}
	out, err, pv := guarded(func() (any, error) { return run(b.ctx, data) })
	if err == nil && pv == nil {
		return out, rcpt
	}
	if b.ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		panic(errorf(NameInterrupted, "%s was interrupted; its charge (ledger record %d) stands", p.fn, ch.ledgerID))
	}
	if src.synth != nil { // public data: the reason may be shown
		if pv != nil {
			err = fmt.Errorf("panic: %v", pv)
		}
		panic(errorf(NameMechanismFailed, "%s (%s) could not produce a release on %s: %v", p.fn, p.method, src.label(), err))
	}
	// One message for an error and a panic alike, so that the message
	// tells no more than the fact of failure (see docs/threat-model.md).
	panic(errorf(NameMechanismFailed, "%s (%s) could not produce a release on %q with these parameters; its charge (ledger record %d) stands. The reason is not shown because it may depend on the data; check the parameters against %%help %s", p.fn, p.method, src.label(), ch.ledgerID, p.fn))
}

// newSampler is where every private call of the runtime gets its noise:
// the crypto/rand sampler. Only this package's tests replace it with a
// seeded one, to make statistical tests reproducible; nothing reachable
// from a cell can.
var newSampler = noise.New

// testRunHook, set only by this package's tests, wraps the mechanism run
// of every private call after its charge, to inject a mechanism that
// panics or fails with a message holding private values. Cells cannot
// reach it.
var testRunHook func(run func(context.Context, *ledger.Data) (any, error)) func(context.Context, *ledger.Data) (any, error)

// guarded calls f and returns its panic value instead of panicking. After
// a charge, a panic's value (an index out of range, a shard number, a value
// in a message) may depend on the data: it must reach neither the cell,
// where the engine would show it, nor the worker's crash report, which an
// unrecovered panic would write to the process's stderr. Callers drop it
// for registered data.
func guarded[T any](f func() (T, error)) (v T, err error, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err, panicked = zero, nil, r
		}
	}()
	v, err = f()
	return v, err, nil
}

// loadFailure is the fixed reason of a load that failed without a public
// explanation.
const loadFailure = "the stored data failed its integrity check or the database could not be read (run `privnotes ledger verify`)"

// loadError keeps only data-independent load failures.
func loadError(err error) string {
	var le *Error
	if errors.As(err, &le) {
		return le.Msg
	}
	return loadFailure
}
