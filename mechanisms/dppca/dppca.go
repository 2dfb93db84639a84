// DP-PCA: Liu, Kong, Jain and Oh (seed 002), Algorithm 3 (L179–187), with
// the budget table of spec dppca.md §7, the ⊥ and Λ̂ = 0 handling of §4 and
// the feasibility check of §8.

package dppca

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// Plan is the data-free part of a run: validated options, per-step budgets
// and the exact privacy cost. Build it with PlanDPPCA or PlanPrivateOja,
// charge Cost, then call Run.
type Plan struct {
	Method string
	// D is the data dimension and Steps the number of minibatches T.
	D, Steps int
	// Cost is what the whole run spends (parallel composition across the
	// disjoint minibatches: one step's cost).
	Cost        accounting.Event
	Calibration Calibration
	// EigenEps, EigenDelta: Algorithm 4's histogram per step; Groups is k.
	EigenEps, EigenDelta float64
	Groups               int
	// HistEps, HistDelta: each of Algorithm 5's d coordinate histograms.
	HistEps, HistDelta float64
	// NoiseMultiplier is the Gaussian std per unit of ℓ2 sensitivity
	// (Algorithm 5's mean for DP-PCA, the clipped sum for private Oja).
	NoiseMultiplier float64
	// NoiseStd is private Oja's Gaussian std on the clipped sum (DP-PCA's
	// depends on Λ̂_t and is reported per step in the Result).
	NoiseStd float64
	// RoundingExcess is the ℓ2 sensitivity added for the rounding of the
	// float64 sum over records (rounding.go): private Oja's noise is
	// calibrated to (2·Beta + RoundingExcess)·(1 + 1e-9); for DP-PCA it is
	// per unit of Algorithm 5's truncation radius r, whose mean gets noise
	// for (2r√d/m + RoundingExcess·r)·(1 + 1e-9).
	RoundingExcess float64
	// NeededN is the row count the feasibility check asks for: about the
	// smallest n for which the run is useful (spec §8).
	NeededN int
	// MinRows is the exact number of rows a run needs to fill its
	// minibatches (DP-PCA: 4·Groups rows per minibatch half pair, private
	// Oja: one record per minibatch; twice as many rows when records are
	// pair differences). Run pads data with fewer rows with zero records
	// up to that size, so that no run fails, nor changes its shape, on the
	// private n. Such a run is still (ε, δ)-DP, but its estimate is mostly
	// noise; NeededN says how many rows make it useful.
	//
	// Why padding is private: under replace-one neighbours both data sets
	// have the same n, so the number of zero records added, MinRows/r − ⌊n/r⌋
	// (r rows per record), is the same for both, and where they go comes
	// from a shuffle drawn from public randomness independent of the data.
	// The padded record sets of two neighbours therefore differ in exactly
	// the one record the replaced row enters: padding maps neighbours to
	// neighbours, and the mechanism, private for every record set of its
	// size (its sensitivities are per record and hold for zero records,
	// whose gradient is zero), stays (ε, δ)-DP after it. Padding also
	// removes the "failure bit" (a run that fails on too few rows tells
	// whether n < MinRows, which an analyst varying Steps could use to
	// binary-search n).
	MinRows int
	Note    string
	// Shuffle is the calibration of private Oja with shuffling (nil for
	// the other methods).
	Shuffle *ShuffleCalibration

	opt   Options
	mean  meanParams
	eigen eigenParams
}

// PlanDPPCA validates opt for DP-PCA on d columns and returns the plan of
// the run. It reads no data.
//
// Per step, for a target (ε, δ): Algorithm 4 at (ε, δ) with failure
// probability ζ/(2T) on the first half of the minibatch and Algorithm 5 at
// (ε, δ) on the second (its own split: (ε/2, δ/2) for the d histograms
// together, (ε/2, δ/2) for the Gaussian). The halves are disjoint sets of
// records under a data-independent assignment, and each record is one row
// (or one pair of rows, or one user's summed row), so a neighbour changes
// the input of one of the two only: parallel composition (spec §4
// "Optional", Lemma B.2) makes the step (ε, δ)-DP. Options.PaperSplit
// gives each (ε/2, δ/2) instead, as the paper's Algorithm 3 (spec §7).
// Steps use disjoint minibatches in a single pass, so the run costs (ε, δ)
// in total. CalibPaper needs ε < 0.9 (Theorem 5.1) and, with PublicN,
// δ ≤ 1/n.
func PlanDPPCA(opt Options, d int) (*Plan, error) {
	o, err := opt.validate(MethodDPPCA, d, true)
	if err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) (*Plan, error) {
		return nil, fmt.Errorf("dppca: "+format, a...)
	}
	if o.Calibration == CalibPaper {
		if o.Eps >= 0.9 {
			return fail("eps=%v: the paper's guarantee (Theorem 5.1) needs eps < 0.9; lower eps or use CalibAnalytic (beyond the paper, valid for every eps)", o.Eps)
		}
		if o.PublicN > 0 && o.Delta > 1/float64(o.PublicN) {
			return fail("delta=%v exceeds 1/n = %.3g for the public n=%d (Theorem 5.1 needs delta ≤ 1/n); lower delta or use CalibAnalytic", o.Delta, 1/float64(o.PublicN), o.PublicN)
		}
	}
	T := o.Steps
	// The halves of a minibatch are disjoint: each spends the whole step.
	e4, d4, e5, d5 := o.Eps, o.Delta, o.Eps, o.Delta
	if o.PaperSplit {
		e4, d4, e5, d5 = o.Eps/2, o.Delta/2, o.Eps/2, o.Delta/2
	}
	zetaStep := o.Zeta / (2 * float64(T))
	pl := &Plan{Method: MethodDPPCA, D: d, Steps: T, Calibration: o.Calibration, EigenEps: e4, EigenDelta: d4}
	pl.eigen = eigenParams{hist: histParams{e4, d4}, quarter: o.QuarterBins}
	if err := pl.eigen.hist.validate(); err != nil {
		return fail("Algorithm 4: %w", err)
	}
	if pl.Groups, err = groupCount(&o, e4, d4, zetaStep); err != nil {
		return fail("%w", err)
	}
	pl.eigen.groups = pl.Groups
	hp, mult, err := alg5Budget(o.Calibration, e5, d5, d)
	if err != nil {
		return fail("%w", err)
	}
	if err := hp.validate(); err != nil {
		return fail("Algorithm 5: %w", err)
	}
	if mult*math.Sqrt(float64(d)) > 0x1p37 {
		return fail("eps=%v is too small to represent the Gaussian noise", o.Eps)
	}
	pl.HistEps, pl.HistDelta, pl.NoiseMultiplier = hp.eps, hp.delta, mult
	pl.RoundingExcess = meanExcess(d)
	pl.mean = meanParams{hist: hp, mult: mult, tailK: o.TailK, tailA: o.TailA, zeta: zetaStep, excess: pl.RoundingExcess}
	// Every Λ̂ the run can use lies in [LambdaMin, MaxLambda] (runDPPCA
	// clamps it), so this is every std Algorithm 5 can need.
	if err := pl.mean.checkSigmas(o.LambdaMin, MaxLambda, d); err != nil {
		return fail("%w", err)
	}

	// Feasibility (spec §8 end): Algorithm 4 needs ⌊⌊B/2⌋/2⌋ ≥ k·b_min;
	// Algorithm 5's top bin must clear its threshold with margin,
	// ⌊B/2⌋/2 ≥ 1 + (2/ε_h)(ln(2/δ_h) + ln(2dT/ζ)).
	thr5 := 1 + (2/hp.eps)*(math.Log(2/hp.delta)+math.Log(2*float64(d*T)/o.Zeta))
	needB := max(4*pl.Groups*o.MinGroupSize, 2*int(math.Ceil(2*thr5)))
	needRecords := needB * T
	pl.NeededN = needRecords * rowsPerRecord(&o)
	pl.MinRows = 4 * pl.Groups * T * rowsPerRecord(&o) // ≤ 8e13: Groups ≤ 1e9, T ≤ 1e4
	if pl.MinRows > MaxRows {
		return fail("eps=%v, delta=%v, T=%d need %d groups per minibatch, more than dppca.MaxRows rows in total: raise eps or lower steps", o.Eps, o.Delta, T, pl.Groups)
	}
	if b := padBytes(pl.MinRows/rowsPerRecord(&o), T, d); b > maxPadBytes {
		return fail("eps=%v, delta=%v, T=%d, d=%d: padding a small data set to %d rows would need %.3g GiB: raise eps or lower steps", o.Eps, o.Delta, T, d, pl.MinRows, b/(1<<30))
	}
	if o.PublicN > 0 {
		if B := o.records(o.PublicN) / T; B < needB {
			return fail("n=%d rows are too few for eps=%v, delta=%v, d=%d, T=%d: DP-PCA needs about n ≥ %d (minibatches of %d records: %d groups of ≥ %d pairs for Algorithm 4, and ⌊B/2⌋/2 ≥ %.0f for Algorithm 5's histograms)%s; raise eps, lower steps, or use more data",
				o.PublicN, o.Eps, o.Delta, d, T, pl.NeededN, needB, pl.Groups, o.MinGroupSize, thr5, pairNote(&o))
		}
	}
	cost := accounting.Approx(o.Eps, o.Delta)
	cost.Mechanism = "dppca"
	pl.Cost = cost
	split := "the whole (ε, δ) for each half-batch (parallel composition over disjoint halves, beyond the paper)"
	if o.PaperSplit {
		split = "(ε/2, δ/2) each for Algorithms 4 and 5"
	}
	pl.Note = fmt.Sprintf("DP-PCA calibrated to ε=%v, δ=%v (%s, replace-one, n public): T=%d disjoint minibatches in one pass, %s; Algorithm 4: %d groups, %s bins, histogram ε=%s; Algorithm 5: coordinate histograms ε=%s, δ=%s, Gaussian multiplier %s%s; %s",
		o.Eps, o.Delta, o.Calibration, T, split, pl.Groups, binName(o.QuarterBins), fmtG(e4), fmtG(hp.eps), fmtG(hp.delta), fmtG(mult), beyond(o.Calibration), padNote(pl.MinRows, pl.NeededN))
	pl.opt = o
	return pl, nil
}

// maxPadBytes bounds the memory a padded run allocates beyond the data:
// 2 GiB, so that no plan accepted can run out of memory after its charge
// on a small data set.
const maxPadBytes = 1 << 31

// padBytes estimates the memory of a run padded to records records: the
// slot map (4 bytes a record) and the two half-minibatch gradient buffers
// (records/T·d float64s).
func padBytes(records, T, d int) float64 {
	return 4*float64(records) + 8*float64(records/T)*float64(d)
}

// padNote is the sentence every receipt of a plan carries about padding,
// the same whatever the data's n.
func padNote(minRows, neededN int) string {
	s := fmt.Sprintf("data with fewer than %d rows are padded with zero rows to %d (the run is still private, but its estimate is then mostly noise)", minRows, minRows)
	if neededN > minRows {
		s += fmt.Sprintf("; a useful run needs about %d rows", neededN)
	}
	return s
}

func rowsPerRecord(o *Options) int {
	if o.Centred || o.Mean != nil {
		return 1
	}
	return 2
}

func pairNote(o *Options) string {
	if o.Centred || o.Mean != nil {
		return ""
	}
	return " (rows are paired to centre them; declare Centred or a public Mean to use every row)"
}

// Run plans and runs DP-PCA on data (one row per individual).
func Run(ctx context.Context, data *mat.Dense, opt Options) (*Result, error) {
	return planAndRun(ctx, data, opt, PlanDPPCA)
}

// planAndRun makes the plan for data's width with plan and runs it.
func planAndRun(ctx context.Context, data *mat.Dense, opt Options, plan func(Options, int) (*Plan, error)) (*Result, error) {
	d := 0
	if data != nil {
		_, d = data.Dims()
	}
	pl, err := plan(opt, d)
	if err != nil {
		return nil, err
	}
	return pl.Run(ctx, data)
}

// Run executes the plan on data, one row per individual: RunSource on
// rows.FromDense(data). Use it after charging pl.Cost.
func (pl *Plan) Run(ctx context.Context, data *mat.Dense) (*Result, error) {
	if pl == nil || pl.D == 0 {
		return nil, errNoPlan
	}
	if data == nil {
		return nil, fmt.Errorf("dppca %s: no data matrix", pl.Method)
	}
	return pl.RunSource(ctx, rows.FromDense(data))
}

// RunSource executes the plan on the rows of src, one row per individual,
// src.Dim() == pl.D columns. Use it after charging pl.Cost.
//
// DP-PCA and private Oja visit the rows in a data-independent shuffled
// order, which needs positions: a source implementing rows.RandomAccess is
// read by index (and must not change during the run); any other is first
// read whole into memory with rows.Collect, so that this method's memory
// then grows with the number of rows. Data with no rows (an empty
// *rows.Dense has no width to check) run as one zero row, padded like any
// small data set. The result is bit identical for every source of the same
// rows in the same order.
func (pl *Plan) RunSource(ctx context.Context, src rows.Source) (*Result, error) {
	if pl == nil || pl.D == 0 {
		return nil, errNoPlan
	}
	data, err := dataRows(ctx, pl.Method, src, pl.D)
	if err != nil {
		return nil, err
	}
	switch pl.Method {
	case MethodDPPCA:
		return pl.runDPPCA(ctx, data)
	case MethodPrivateOja:
		return pl.runPrivateOja(ctx, data)
	case MethodOjaShuffle:
		return pl.runOjaShuffle(ctx, data)
	}
	return nil, fmt.Errorf("dppca: unknown method %q", pl.Method)
}

var errNoPlan = errors.New("dppca: Run needs a plan from PlanDPPCA or PlanPrivateOja")

func (pl *Plan) runDPPCA(ctx context.Context, data rows.RandomAccess) (*Result, error) {
	o := pl.opt
	d, T := pl.D, pl.Steps
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dppca: stopped before step 1: %w", err)
	}
	// Fewer records than the minibatches need are padded with zero
	// records (see Plan.MinRows): the run never fails on n.
	src, w, recs := begin(data, &o, o.knob, pl.MinRows/rowsPerRecord(&o))
	B := recs.n / T
	half := B / 2
	if half/2 < pl.Groups { // unreachable after padding; kept as a guard
		return nil, fmt.Errorf("dppca: internal error: %d minibatches with %d groups each are not filled", T, pl.Groups)
	}
	o.minibatchRate(recs.n)
	pass := rowpass.Options{Workers: o.Workers}
	g1 := make([]float64, half*d)
	g2 := make([]float64, half*d)
	res := &Result{
		Method: MethodDPPCA, Cost: pl.Cost, Steps: T, Batch: B, Records: recs.n,
		Eigenvalues: make([]float64, T), NoiseStd: make([]float64, T),
		Calibration: o.Calibration.String(), Note: pl.Note,
	}
	for t := 1; t <= T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("dppca: stopped before step %d of %d: %w", t, T, err)
		}
		base := (t - 1) * B
		// Algorithm 4 reads records [base, base+half) and Algorithm 5
		// [base+half, base+2·half): disjoint, which is what lets each spend
		// the whole (ε, δ) of the step (PlanDPPCA).
		src.read(recs, base, base+half, w, g1)
		if lam, ok := topEigen(g1, half, d, pl.eigen, src, pass); !ok {
			// ⊥: skip the step, w_t = w_{t−1} (spec §4 CHOICE).
			res.Eigenvalues[t-1] = math.NaN()
			res.Skipped++
		} else {
			res.Eigenvalues[t-1] = lam
			// Clamped to the range the plan checked Algorithm 5's noise for
			// (a public rule applied to a DP value: post-processing).
			lam = math.Min(math.Max(lam*o.LambdaFactor, o.LambdaMin), MaxLambda)
			src.read(recs, base+half, base+2*half, w, g2)
			ghat, _, sigma, _ := privMean(g2, half, d, lam, pl.mean, src, pass)
			res.NoiseStd[t-1] = sigma
			w = step(w, o.eta(t, math.Sqrt(lam)), ghat)
		}
		// A skipped step is a step too: the report must not say which.
		if o.Progress != nil {
			o.Progress(t, T)
		}
	}
	res.Components = component(w)
	return res, nil
}
