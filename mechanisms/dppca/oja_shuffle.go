// Private Oja with shuffling: Liu, Kong, Jain and Oh (seed 002),
// Algorithm 2 (L102–111) with the privacy proof of Lemma 3.1 (Appendix D.1,
// L562–588), calibrated as spec dppca.md §3 [CHOICE] says (shuffle_bound.go)
// instead of the unspecified constant C′ of line 2.

package dppca

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// MethodOjaShuffle is Algorithm 2: n private Oja steps, one record each,
// over a secretly shuffled input.
const MethodOjaShuffle = "oja-shuffle"

// OjaShuffleProgress is how many times a run calls Options.Progress:
// with (k, 100) after each hundredth of its n steps.
const OjaShuffleProgress = 100

// PlanOjaShuffle validates opt for private Oja with shuffling (Algorithm 2)
// on d columns. It needs PublicN (the public row count: the bound depends
// on n), Beta (the clip threshold of clip_β(A_t w)) and Gap; Steps must be
// 0 (a run takes one step per record). Defaults H = 2, Xi = 10 (spec §2).
//
// Privacy (replace-one, n public). The run has N = records(PublicN) steps;
// the data's records (rows, or pair differences of rows 2i, 2i+1 in input
// order, a public pairing) are padded with zero records up to N, or cut to
// the first N of the shuffled order when there are more, and put in a
// uniformly random order drawn from the noise sampler (crypto/rand) and
// never released. Neighbours' record multisets of size N then differ in at
// most one record (padding and cutting select records by position in the
// secret order, which is independent of the data). Step t computes
// g = clip_β(x xᵀ w_{t−1}) and releases w_t = normalize(w_{t−1} +
// η_t·(g + Z)), Z a lattice Gaussian of std ≥ α·2β (noise.GaussianScale):
// for every fixed w_{t−1} a change of the record moves g by at most 2β in
// ℓ2, so the step is an (ε0, δ0)-DP local randomizer (Lemma 2.4, ε0 < 1;
// normalizing is post-processing). By Theorem D.1 ([30, Thm 3.8]) the
// sequence w_1..w_N is (ε̂, δ̂ + δ0-term)-DP with ε̂ ≤ ε, δ̂ = δ/2 and
// δ0-term ≤ δ/2 (CalibrateShuffle), and the release w_N is its
// post-processing: the run is (ε, δ)-DP. The cost is an approximate-DP
// event accounting.Approx(ε, δ): the bound gives nothing finer.
//
// The bound holds only for tiny ε: a target above what it certifies at N
// is refused with a *ShuffleRegimeError (wrapped), naming the row counts
// at which it would hold.
func PlanOjaShuffle(opt Options, d int) (*Plan, error) {
	if opt.Steps != 0 {
		return nil, fmt.Errorf("dppca %s: steps=%d: Algorithm 2 takes one step per record (n steps); leave Steps at 0", MethodOjaShuffle, opt.Steps)
	}
	o, err := opt.validate(MethodOjaShuffle, d, true)
	if err != nil {
		return nil, err
	}
	if o.Calibration != CalibPaper {
		return nil, fmt.Errorf("dppca %s: the shuffling bound gives an (ε, δ) guarantee with the classical Gaussian mechanism only: use CalibPaper", MethodOjaShuffle)
	}
	if o.Beta == 0 {
		return nil, fmt.Errorf("dppca %s: give Beta, a public bound on ‖A_i w‖ = ‖x‖·|xᵀw| (at most the squared row norm), the clip threshold of Algorithm 2", MethodOjaShuffle)
	}
	if o.Gap == 0 {
		return nil, errNeedGap(MethodOjaShuffle)
	}
	if o.PublicN == 0 {
		return nil, fmt.Errorf("dppca %s: give PublicN, the public row count: the shuffling bound depends on n", MethodOjaShuffle)
	}
	if o.Eps >= 1 {
		return nil, fmt.Errorf("dppca %s: eps=%v: the shuffling bound holds only for tiny eps (about 0.01–0.03 at a million rows); use method %q or %q", MethodOjaShuffle, o.Eps, MethodDPPCA, MethodPrivateOja)
	}
	rpr := rowsPerRecord(&o)
	n := o.records(o.PublicN)
	if n < 1 {
		return nil, fmt.Errorf("dppca %s: n=%d rows give no record (records are pair differences of rows)", MethodOjaShuffle, o.PublicN)
	}
	cal, err := CalibrateShuffle(o.Eps, o.Delta, n)
	if err != nil {
		if re, ok := err.(*ShuffleRegimeError); ok {
			return nil, &RegimeError{Method: MethodOjaShuffle, RowsPerRecord: rpr, Shuffle: *re}
		}
		return nil, fmt.Errorf("dppca %s: %w", MethodOjaShuffle, err)
	}
	if o.H == 0 {
		o.H = 2
	}
	if o.Xi == 0 {
		o.Xi = 10
	}
	pl := &Plan{Method: MethodOjaShuffle, D: d, Steps: n, Calibration: CalibPaper, NoiseMultiplier: cal.Multiplier}
	pl.Cost = accounting.Approx(o.Eps, o.Delta)
	pl.Cost.Mechanism = "dppca/" + MethodOjaShuffle
	if pl.NoiseStd, err = noise.GaussianScaleChecked(2*o.Beta*sensitivitySlack, cal.Multiplier, d); err != nil {
		return nil, fmt.Errorf("dppca %s: the noise for beta=%v cannot be represented: %w", MethodOjaShuffle, o.Beta, err)
	}
	pl.MinRows, pl.NeededN = n*rpr, n*rpr
	pl.Shuffle = &cal
	pl.Note = fmt.Sprintf("private Oja with shuffling (Algorithm 2) calibrated to ε=%v, δ=%v (replace-one): %d one-record steps in a secret uniformly random order; each step clips its gradient to %s and adds Gaussian std %s, a local (ε0=%.4g, δ0=%.3g) randomizer; shuffling amplification (Feldman, McMillan and Talwar, Thm 3.8) at δ/2 certifies ε̂=%.4g ≤ ε, the δ0 term ≤ δ/2",
		o.Eps, o.Delta, n, fmtG(o.Beta), fmtG(pl.NoiseStd), cal.LocalEps, cal.LocalDelta, cal.ShuffleEps)
	pl.opt = o
	return pl, nil
}

// RegimeError is a ShuffleRegimeError in rows: a plan's refusal of a
// target outside the shuffling bound's regime.
type RegimeError struct {
	Method string
	// RowsPerRecord is 1, or 2 when records are pair differences.
	RowsPerRecord int
	Shuffle       ShuffleRegimeError
}

func (e *RegimeError) Error() string {
	s := e.Shuffle
	r := e.RowsPerRecord
	msg := fmt.Sprintf("dppca %s: the shuffling bound (Feldman, McMillan and Talwar, Thm 3.8) certifies at most eps=%.4g for n=%d rows at delta=%v (local eps0 < 1), so eps=%v is outside its regime eps = O(√(ln(n/δ)/n))",
		e.Method, s.MaxEps, s.Records*r, s.Delta, s.Eps)
	if s.MaxRecords > 0 {
		msg += fmt.Sprintf("; it reaches eps=%v only with %d ≤ n ≤ %d rows", s.Eps, s.MinRecords*r, s.MaxRecords*r+r-1)
	} else {
		msg += fmt.Sprintf("; it reaches eps=%v at no n for delta=%v", s.Eps, s.Delta)
	}
	return msg
}

// OjaShuffle plans and runs private Oja with shuffling (Algorithm 2).
func OjaShuffle(ctx context.Context, data *mat.Dense, opt Options) (*Result, error) {
	return planAndRun(ctx, data, opt, PlanOjaShuffle)
}

// secretOrder returns the N records a run visits, in order: the indices
// 0..n−1 of the data's records and max(0, N−n) zero records (−1),
// permuted uniformly at random by the sampler and cut to the first N. The
// order is secret: nothing derived from it is released but through the
// steps' noisy outputs.
func secretOrder(src source, n, N int, skip bool) []int32 {
	order := make([]int32, max(n, N))
	for i := range order {
		order[i] = -1
		if i < n {
			order[i] = int32(i)
		}
	}
	if !skip {
		src.s.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	return order[:N]
}

// ojaShuffleStep is one step of Algorithm 2 on the gradient g = A_t w
// (modified): clip g to beta, add the plan's Gaussian noise, and move w
// to normalize(w + eta·(g + Z)) in next. It returns next, or w when that
// is zero or not finite (the step is skipped, a rule on the noisy value).
func ojaShuffleStep(src source, w, next, g []float64, beta, sigma, eta float64) []float64 {
	floats.Scale(clipFactor(g, beta), g)
	src.gaussianVec(g, sigma)
	if src.tr != nil {
		src.tr.released = append(src.tr.released, append([]float64(nil), g...))
	}
	copy(next, w)
	floats.AddScaled(next, eta, g)
	if normalize(next) {
		return next
	}
	return w
}

func (pl *Plan) runOjaShuffle(ctx context.Context, data rows.RandomAccess) (*Result, error) {
	o := pl.opt
	d, N := pl.D, pl.Steps
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dppca %s: stopped before step 1: %w", MethodOjaShuffle, err)
	}
	src := newSource(o.Noise, o.knob)
	w := randomUnit(src, d)
	// Records in input order (pairs of rows 2i, 2i+1): the only order that
	// matters is the secret one below.
	ro := o
	ro.KeepOrder = true
	recs := newRecords(data, &ro, 0)
	skip := o.knob != nil && o.knob.skipShuffle
	order := secretOrder(src, recs.n, N, skip)
	if src.tr != nil {
		src.tr.order = order
	}
	res := &Result{Method: MethodOjaShuffle, Cost: pl.Cost, Steps: N, Batch: 1, Records: N,
		NoiseStd: []float64{pl.NoiseStd}, Calibration: CalibPaper.String(), Note: pl.Note}
	g, tmp, next := make([]float64, d), make([]float64, d), make([]float64, d)
	chunk := 1
	for t := 1; t <= N; t++ {
		if t%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("dppca %s: stopped at step %d of %d: %w", MethodOjaShuffle, t, N, err)
			}
		}
		if i := order[t-1]; i >= 0 {
			recs.load(int(i), g, tmp)
			gradient(g, w)
		} else {
			clear(g)
		}
		nw := ojaShuffleStep(src, w, next, g, o.Beta, pl.NoiseStd, o.eta(t, 0))
		if &nw[0] == &next[0] {
			w, next = next, w
		}
		for o.Progress != nil && chunk <= OjaShuffleProgress && t >= chunk*N/OjaShuffleProgress {
			o.Progress(chunk, OjaShuffleProgress)
			chunk++
		}
	}
	res.Components = component(w)
	return res, nil
}
