// Centred PCA: a private mean of the clipped rows, then the method on the
// rows centred by that mean (issue 28 item 5). The mean is a DP output, a
// public vector once released, so centring by it is a public per-row map;
// the two parts share the run's zCDP budget and are charged as one event.

package pca

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// DefaultCenterShare is the share of the run's ρ (CalibGDP: of μ*²/2) that
// the private mean gets when Options.CenterShare is 0. The mean's error
// δμ enters the centred second moment only through the rank-one term
// n·δμδμᵀ, whose size is about d·σ_c²·clip²/n, so a small share buys a
// mean far more accurate than the covariance needs, while the method
// loses only a factor 1/√(1−share) in noise (5.4 % at 0.1).
const DefaultCenterShare = 0.1

// MaxCenterShare bounds Options.CenterShare. With share ≤ 1/2 the mean's
// ρ_c = ρ − ρ_run is computed exactly (Sterbenz: ρ_run = fl(ρ·(1−share))
// lies in [ρ/2, ρ]), so ρ_c + ρ_run = ρ with no rounding up; a larger
// share would leave the method with less budget than its mean, which no
// workload needs.
const MaxCenterShare = 0.5

// centerSensitivity is the ℓ2 sensitivity of the mean's release, the d+1
// coordinates (Σ s·a, n) over rows scaled to norm ≤ 1. Add-remove adds or
// removes one row: ‖(s·a, 1)‖ ≤ √2. Replace-one keeps n and changes one
// term of the sum: ‖s·a − s'·b‖ ≤ 2 (tight at b = −a). The count gets the
// same noise under both relations: n is private whatever the relation
// (docs/mechanisms.md), so it is never released exact.
func centerSensitivity(nb accounting.Neighbour) float64 {
	if nb == accounting.AddRemove {
		return math.Sqrt2
	}
	return 2
}

// centerRoundings is the rounding budget of the sum Σ s·a: one product per
// term, then sumRoundings. The count adds 1s, exact below 2^53.
const centerRoundings = 1 + sumRoundings

// CenterRoundingExcess is the rounding excess a centred plan charges for
// its mean's sum Σ s·a (in units of the clip, beyond centerSensitivity):
// what a sum computed elsewhere (CenterOfSum) must stay within.
func CenterRoundingExcess() float64 { return sumExcess(centerRoundings, 1) }

// validateCenter checks the centring options against the method and
// calibration, before anything is charged. The error carries the method.
func validateCenter(method string, opt Options) (Options, error) {
	if !opt.Center {
		if opt.CenterShare != 0 {
			return opt, fmt.Errorf("pca %s: a center share (%v) applies with Center only", method, opt.CenterShare)
		}
		return opt, nil
	}
	if opt.CenterShare == 0 {
		opt.CenterShare = DefaultCenterShare
	}
	if !(opt.CenterShare > 0 && opt.CenterShare <= MaxCenterShare) {
		return opt, fmt.Errorf("pca %s: center share %v: use 0 < share ≤ %v (0 for the default %v)", method, opt.CenterShare, float64(MaxCenterShare), float64(DefaultCenterShare))
	}
	if opt.Calibration == CalibPaper {
		return opt, fmt.Errorf("pca %s: centring shares the run's zCDP budget between the mean and the method; the paper calibration has no such split: use calibration zcdp", method)
	}
	if opt.AutoGap {
		return opt, fmt.Errorf("pca %s: centring is not available with gap=\"auto\": give iters (or a public row count) instead", method)
	}
	return opt, nil
}

// runShare returns the budget the method itself spends out of rho: all of
// it, or rho·(1 − CenterShare) when the run is centred (the mean gets the
// rest, planCenter).
func runShare(opt Options, rho float64) float64 {
	if !opt.Center {
		return rho
	}
	return rho * (1 - opt.CenterShare)
}

// planCenter sets the mean's part of a centred plan whose method spends
// runRho out of the total total (both ρ, or ρ-equivalents μ²/2 under
// CalibGDP): the mean gets ρ_c = total − runRho, computed exactly
// (MaxCenterShare), as one Gaussian release of the d+1 coordinates
// (Σ s·a, n) with multiplier √(1/(2ρ_c)) at sensitivity
// centerSensitivity plus the sum's rounding excess. The composition of
// the two Gaussian parts is (ρ_c + runRho)-zCDP = total (under CalibGDP
// √(2ρ_c)- and √(2·runRho)-GDP compose to √(2·total)): the plan's cost
// event is the uncentred method's.
func (pl *Plan) planCenter(opt Options, total, runRho float64) error {
	if !opt.Center {
		return nil
	}
	pl.CenterShare = opt.CenterShare
	pl.CenterRho = total - runRho
	if !(pl.CenterRho > 0) {
		return fmt.Errorf("pca %s: the budget is too small to split for the mean: raise eps", pl.Method)
	}
	mult := math.Sqrt(1 / (2 * pl.CenterRho))
	if err := checkScales(pl.Method, mult, pl.D+1, 0); err != nil {
		return err
	}
	excess := sumExcess(centerRoundings, 1)
	std, err := planStd(pl.Method, (centerSensitivity(opt.Neighbour)+excess)*roundingSlack, mult, pl.D+1)
	if err != nil {
		return err
	}
	pl.CenterStd = std
	pl.Note += fmt.Sprintf("; centred by a private mean (%.3g of ρ, std %s per coordinate), the centred rows clipped again", opt.CenterShare, fmtG(std))
	return nil
}

// CenterExcess bounds how far each computed sum of a centred run's mean
// release lies from the exact sum of its terms, in units of the clip
// (the sum's rounding excess, which its calibration charged): an interval
// of the true mean from the released CenterSums and CenterCount, whose
// noise has std Plan.CenterStd on every part, widens the sums' by it.
func CenterExcess() float64 { return sumExcess(centerRoundings, 1) }

// CenterRelease is a centred run's release of the mean: the mean in the
// data's units and the noisy parts it was computed from, in units of the
// clip.
type CenterRelease struct {
	mean, sums []float64
	count      float64
}

// Mean is the released mean, in the data's units: the public vector the
// rows are shifted by.
func (c *CenterRelease) Mean() []float64 { return c.mean }

// set records c in res (nothing for an uncentred run).
func (c *CenterRelease) set(res *Result) {
	if c == nil {
		return
	}
	res.Center, res.CenterSums, res.CenterCount = c.mean, c.sums, c.count
}

// privateMean returns the mean of the clipped rows of src, in units of the
// clip (norm ≤ 1), from one Gaussian release of (Σ s·a, n) with std
// pl.CenterStd: μ̂ = S̃/max(ñ, 1), projected onto the unit ball (the mean of
// vectors in the ball lies in it), and the released (S̃, ñ). Everything
// after the release is post-processing.
func (pl *Plan) privateMean(ctx context.Context, src rows.Source) (*CenterRelease, error) {
	d := pl.D
	r := newClipped(src, pl.opt.Clip, pl.opt.Workers, 1).sums()
	sum, n, err := linalg.PairwisePass(ctx, src, r.Pass,
		func() []float64 { return make([]float64, d) },
		func(acc []float64, b *rows.Batch) {
			for i := range b.N {
				a := b.Row(i, d)
				s := r.Scale(a)
				if s == 0 {
					continue
				}
				for j, v := range a {
					acc[j] += s * v
				}
			}
		},
		func(into, from []float64) {
			for i, v := range from {
				into[i] += v
			}
		},
		func(a []float64) { clear(a) })
	if err != nil {
		return nil, passError(pl.Method, ctx, 0, err)
	}
	return pl.noisyMean(sum, n), nil
}

// CenterOfSum is the private mean of a centred Analyze Gauss plan whose
// row sums were computed elsewhere, as a database engine computes them in
// one statement (dsl/sqlplan.PrintGaussRowSum): sum = Σ s·a over the rows
// scaled to norm ≤ 1 by the clip (in units of the clip), n the number of
// rows. It returns the release with its mean in the data's units
// (CenterRelease.Mean), by which the rows are then shifted before the
// second moments are summed (RunGram, which records it in the result). The caller
// answers for the sums: each row's term of norm ≤ 1 and the rounding
// within the excess the plan charged for the mean (centerRoundings), and
// calls it once per charge, since each call draws the mean's noise.
func (pl *Plan) CenterOfSum(sum []float64, n int) (*CenterRelease, error) {
	if err := pl.check(); err != nil {
		return nil, err
	}
	if pl.Method != MethodGauss || pl.CenterStd == 0 {
		return nil, fmt.Errorf("pca %s: CenterOfSum runs centred Analyze Gauss only", pl.Method)
	}
	if len(sum) != pl.D || n < 0 {
		return nil, fmt.Errorf("pca gauss: CenterOfSum needs %d sums and a row count ≥ 0", pl.D)
	}
	c := pl.noisyMean(append([]float64(nil), sum...), n)
	for j := range c.mean {
		c.mean[j] *= pl.opt.Clip
	}
	return c, nil
}

// noisyMean releases (sum, n) with the mean's noise and returns the
// release: the mean μ̂ = S̃/max(ñ, 1) projected onto the unit ball (in
// units of the clip, in sum's storage) and the noisy parts.
func (pl *Plan) noisyMean(sum []float64, n int) *CenterRelease {
	d := pl.D
	v := append(sum, float64(n))
	newSource(pl.opt).gaussianVec(v, pl.CenterStd)
	if pl.opt.knob != nil && pl.opt.knob.trace != nil {
		pl.opt.knob.trace.center = append([]float64(nil), v...)
	}
	c := &CenterRelease{sums: append([]float64(nil), v[:d]...), count: v[d]}
	mu, count := v[:d], math.Max(v[d], 1)
	norm := 0.0
	for j := range mu {
		mu[j] /= count
		norm += mu[j] * mu[j]
	}
	if norm = math.Sqrt(norm); norm > 1 {
		for j := range mu {
			mu[j] /= norm
		}
	}
	c.mean = mu
	return c
}

// shifted is src with the public vector mu subtracted from every row: the
// rows the method sees after centring, which its row rule then clips to
// the clip again, so that each enters with norm ≤ 1 and the method's
// sensitivity is the uncentred one. A row with a NaN or an infinity stays
// non-finite and so still counts as the zero vector. shifted does not
// lend rows (rows.Viewer) and does not hand on the norms a source stores
// with its rows (HasNorms).
type shifted struct {
	src rows.Source
	mu  []float64
}

func (s *shifted) Dim() int { return s.src.Dim() }

// HasNorms is false whatever the source stores: its norms are the
// unshifted rows', and a pass that took a centred row's scale from them
// would scale a − μ by 1/max(clip, ‖a‖), leaving it as long as
// (‖a‖ + ‖μ‖)/clip, beyond the unit ball the sensitivities assume
// (TestCenterSensitivity, on a source with stored norms).
func (s *shifted) HasNorms() bool { return false }

func (s *shifted) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := s.src.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &shiftedCursor{cur: cur, mu: s.mu}, nil
}

type shiftedCursor struct {
	cur rows.Cursor
	mu  []float64
}

func (c *shiftedCursor) Next(dst *rows.Batch) error {
	err := c.cur.Next(dst)
	if err != nil && err != io.EOF {
		return err
	}
	d := len(c.mu)
	for i := range dst.N {
		a := dst.Row(i, d)
		for j, m := range c.mu {
			a[j] -= m
		}
	}
	return err
}

func (c *shiftedCursor) Close() error { return c.cur.Close() }

// centred returns the source the method reads: src itself for an
// uncentred plan, else src shifted by the private mean (in the data's
// units), and that mean's release (nil when uncentred).
func (pl *Plan) centred(ctx context.Context, src rows.Source) (rows.Source, *CenterRelease, error) {
	if pl.CenterStd == 0 {
		return src, nil, nil
	}
	c, err := pl.privateMean(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	for j := range c.mean {
		c.mean[j] *= pl.opt.Clip
	}
	return &shifted{src: src, mu: c.mean}, c, nil
}

// varianceRatios returns values[j]/total, or nil when total is not
// positive (a noisy trace can be ≤ 0 on tiny data; no ratio is then
// meaningful). Post-processing of DP outputs only.
func varianceRatios(values []float64, total float64) []float64 {
	if !(total > 0) || values == nil {
		return nil
	}
	out := make([]float64, len(values))
	for j, v := range values {
		out[j] = v / total
	}
	return out
}
