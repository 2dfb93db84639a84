// Oja's algorithm and minibatch private Oja: Liu, Kong, Jain and Oh
// (seed 002), Algorithm 1 (L61–64) and Eq. (7) (L155), with the typos of
// spec dppca.md §3 resolved ("w" → 2, upper index Bt) and parallel
// composition across the disjoint minibatches.

package dppca

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// Oja runs Oja's algorithm WITHOUT privacy, as a reference. With
// opt.Steps == 0 it is Algorithm 1: one record per step,
// w ← w + η_t x(xᵀw), w ← w/‖w‖, with η_t = H/(Gap·(Xi+t)) and defaults
// H = 2, Xi = 10 (spec §2). With Steps = T it is the non-private minibatch
// form of Eq. (7) (defaults H = ln n, Xi = 1). Gap, a hint of λ1 − λ2, is
// required. Centring, shuffling and the non-finite rule are the package's.
// Its output is NOT differentially private: use it on public data only.
func Oja(ctx context.Context, data *mat.Dense, opt Options) (*Result, error) {
	if data == nil {
		return nil, fmt.Errorf("dppca %s: no data matrix", MethodOja)
	}
	_, d := data.Dims()
	perSample := opt.Steps == 0
	o, err := opt.validate(MethodOja, d, false)
	if err != nil {
		return nil, err
	}
	if o.Gap == 0 {
		return nil, errNeedGap(MethodOja)
	}
	_, w, recs := begin(rows.FromDense(data), &o, nil, 0)
	if recs.n < o.Steps || recs.n == 0 {
		return nil, fmt.Errorf("dppca %s: fewer records than steps", MethodOja)
	}
	res := &Result{Method: MethodOja, Records: recs.n, Note: "Oja's algorithm without privacy: reference only"}
	x, tmp := make([]float64, d), make([]float64, d)
	if perSample {
		if o.H == 0 {
			o.H = 2
		}
		if o.Xi == 0 {
			o.Xi = 10
		}
		res.Steps, res.Batch = recs.n, 1
		for t := 1; t <= recs.n; t++ {
			if t%65536 == 0 && ctx.Err() != nil {
				return nil, fmt.Errorf("dppca %s: stopped at step %d: %w", MethodOja, t, ctx.Err())
			}
			recs.load(t-1, x, tmp)
			if !finite(x) {
				continue
			}
			floats.AddScaled(w, o.eta(t, 0)*floats.Dot(x, w), x)
			if !normalize(w) {
				return nil, fmt.Errorf("dppca %s: the iterate overflowed at step %d: lower H or rescale the data", MethodOja, t)
			}
		}
	} else {
		o.minibatchRate(recs.n)
		T := o.Steps
		B := recs.n / T
		res.Steps, res.Batch = T, B
		g := make([]float64, B*d)
		pass := rowpass.Options{Workers: o.Workers}
		for t := 1; t <= T; t++ {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("dppca %s: stopped before step %d: %w", MethodOja, t, err)
			}
			recs.gradients((t-1)*B, t*B, w, g)
			s := sumRows(g, B, d, 0, pass)
			floats.AddScaled(w, o.eta(t, 0)/float64(B), s)
			if !normalize(w) {
				return nil, fmt.Errorf("dppca %s: the iterate overflowed at step %d: lower H or rescale the data", MethodOja, t)
			}
		}
	}
	res.Components = component(w)
	return res, nil
}

// sumRows returns Σ_i c_i·g_i over the m rows of g, with c_i the clip
// factor min(1, beta/‖g_i‖) (beta = 0: no clipping), accumulated with
// rowpass.Pairwise so that its rounding is bounded by ojaExcess (see
// rounding.go); the result is bit identical for every worker count.
func sumRows(g []float64, m, d int, beta float64, pass rowpass.Options) []float64 {
	return rowpass.SumVec(m, d, pass, func(acc []float64, lo, hi int) {
		for i := lo; i < hi; i++ {
			row := g[i*d : (i+1)*d]
			floats.AddScaled(acc, clipFactor(row, beta), row)
		}
	})
}

// clipFactor returns min(1, beta/‖g‖), or 1 for beta = 0.
func clipFactor(g []float64, beta float64) float64 {
	if beta > 0 {
		if nrm := floats.Norm(g, 2); nrm > beta {
			return beta / nrm
		}
	}
	return 1
}

// PlanPrivateOja validates opt for minibatch private Oja (Eq. 7) on d
// columns. Each of T = Steps disjoint minibatches releases the sum of the
// gradients clipped to ‖·‖ ≤ Beta (replace-one ℓ2 sensitivity 2·Beta) plus
// Gaussian noise at the whole (ε, δ); the run costs (ε, δ) by parallel
// composition (spec §3, §7). CalibPaper: multiplier √(2 ln(1.25/δ))/ε, the
// classical Gaussian mechanism, ε < 1; cost accounting.Approx(ε, δ).
// CalibAnalytic: multiplier 1/μ, μ = accounting.MuForTarget(ε, δ); cost
// accounting.GdpFor(ε, δ). Gap and Beta are required. The noise is
// calibrated to 2·Beta + RoundingExcess, the rounding of the float64 sum of
// at most ⌊MaxRows/T⌋ clipped gradients (rounding.go).
func PlanPrivateOja(opt Options, d int) (*Plan, error) {
	o, err := opt.validate(MethodPrivateOja, d, true)
	if err != nil {
		return nil, err
	}
	if o.Beta == 0 {
		return nil, fmt.Errorf("dppca %s: give Beta, a public bound on ‖A_i w‖ = ‖x‖·|xᵀw| (at most the squared row norm), the clip threshold of Eq. 7", MethodPrivateOja)
	}
	if o.Gap == 0 {
		return nil, errNeedGap(MethodPrivateOja)
	}
	pl := &Plan{Method: MethodPrivateOja, D: d, Steps: o.Steps, Calibration: o.Calibration}
	switch o.Calibration {
	case CalibPaper:
		if o.Eps >= 1 {
			return nil, fmt.Errorf("dppca %s: eps=%v: the paper's Gaussian mechanism (Lemma 2.4) needs eps < 1; use CalibAnalytic (beyond the paper)", MethodPrivateOja, o.Eps)
		}
		pl.NoiseMultiplier = math.Sqrt(2*math.Log(1.25/o.Delta)) / o.Eps
		pl.Cost = accounting.Approx(o.Eps, o.Delta)
	case CalibAnalytic:
		pl.Cost = accounting.GdpFor(o.Eps, o.Delta)
		pl.NoiseMultiplier = 1 / pl.Cost.Mu
	}
	if pl.NoiseMultiplier*math.Sqrt(float64(d)) > 0x1p37 {
		return nil, fmt.Errorf("dppca %s: eps=%v is too small to represent the noise", MethodPrivateOja, o.Eps)
	}
	pl.Cost.Mechanism = "dppca/oja"
	pl.RoundingExcess = ojaExcess(o.Steps, o.Beta)
	if pl.NoiseStd, err = noise.GaussianScaleChecked((2*o.Beta+pl.RoundingExcess)*sensitivitySlack, pl.NoiseMultiplier, d); err != nil {
		return nil, fmt.Errorf("dppca %s: the noise for beta=%v cannot be represented: %w", MethodPrivateOja, o.Beta, err)
	}
	pl.MinRows = o.Steps * rowsPerRecord(&o)
	pl.NeededN = pl.MinRows
	if o.PublicN > 0 && o.records(o.PublicN) < o.Steps {
		return nil, fmt.Errorf("dppca %s: n=%d rows are too few for T=%d minibatches: need n ≥ %d", MethodPrivateOja, o.PublicN, o.Steps, pl.NeededN)
	}
	pl.Note = fmt.Sprintf("minibatch private Oja (Eq. 7) calibrated to ε=%v, δ=%v (%s, replace-one): T=%d disjoint minibatches, gradients clipped to %s, Gaussian std %s on each clipped sum%s; %s",
		o.Eps, o.Delta, o.Calibration, o.Steps, fmtG(o.Beta), fmtG(pl.NoiseStd), beyondOja(o.Calibration), padNote(pl.MinRows, pl.NeededN))
	pl.opt = o
	return pl, nil
}

// errNeedGap refuses a run of Oja's algorithm without a gap hint.
func errNeedGap(method string) error {
	return fmt.Errorf("dppca %s: give Gap, a public hint of the eigengap λ1 − λ2, for the learning rate", method)
}

func beyondOja(c Calibration) string {
	if c == CalibAnalytic {
		return "; beyond the paper: analytic Gaussian (exact GDP)"
	}
	return ""
}

// PrivateOja plans and runs minibatch private Oja (Eq. 7).
func PrivateOja(ctx context.Context, data *mat.Dense, opt Options) (*Result, error) {
	return planAndRun(ctx, data, opt, PlanPrivateOja)
}

func (pl *Plan) runPrivateOja(ctx context.Context, data rows.RandomAccess) (*Result, error) {
	o := pl.opt
	d, T := pl.D, pl.Steps
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dppca %s: stopped before step 1: %w", MethodPrivateOja, err)
	}
	// Fewer records than minibatches are padded with zero records (see
	// Plan.MinRows): the run never fails on n.
	src, w, recs := begin(data, &o, o.knob, T)
	B := recs.n / T
	if B < 1 { // unreachable after padding; kept as a guard
		return nil, fmt.Errorf("dppca %s: internal error: %d minibatches are not filled", MethodPrivateOja, T)
	}
	o.minibatchRate(recs.n)
	res := &Result{
		Method: MethodPrivateOja, Cost: pl.Cost, Steps: T, Batch: B, Records: recs.n,
		NoiseStd: make([]float64, T), Calibration: o.Calibration.String(), Note: pl.Note,
	}
	g := make([]float64, B*d)
	pass := rowpass.Options{Workers: o.Workers}
	for t := 1; t <= T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("dppca %s: stopped before step %d of %d: %w", MethodPrivateOja, t, T, err)
		}
		recs.gradients((t-1)*B, t*B, w, g)
		s := sumRows(g, B, d, o.Beta, pass)
		src.gaussianVec(s, pl.NoiseStd)
		res.NoiseStd[t-1] = pl.NoiseStd / float64(B)
		w = step(w, o.eta(t, 0)/float64(B), s)
		if o.Progress != nil {
			o.Progress(t, T)
		}
	}
	res.Components = component(w)
	return res, nil
}
