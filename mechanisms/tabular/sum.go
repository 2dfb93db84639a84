package tabular

import (
	"context"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// SumRoundings is the most roundings a term of a released sum passes
// through: none to form the term (a clamped value is taken as it is, and a
// user's mean is itself the term), BlockRows − 1 inside its block and
// TreeDepth in the pairwise tree over at most MaxRows terms.
const SumRoundings = rowpass.BlockRows - 1 + rowpass.TreeDepth

// SumExcess returns 2·γ_h·MaxRows·m, rounded up, with h = SumRoundings:
// how much further apart than their exact sums the computed sums of two
// neighbouring data sets can be, when every term has magnitude at most m.
//
// Argument: with F the computed and f the exact sum of the same terms,
// the pairwise order gives |F − f| ≤ γ_h·Σ|t_i| ≤ γ_h·n·m (rowpass.Pairwise,
// Higham Lemma 3.1), n ≤ MaxRows for both data sets, so
// |F(D) − F(D')| ≤ |f(D) − f(D')| + 2·γ_h·MaxRows·m.
func SumExcess(m float64) float64 {
	// Three products, each correctly rounded: 2^-50 covers their errors.
	return 2 * rowpass.Gamma(SumRoundings) * MaxRows * m * (1 + 0x1p-50)
}

// SumPlan is a planned noisy sum of one column. Every field is public.
type SumPlan struct {
	Lo, Hi     float64
	Eps, Delta float64
	Neighbour  accounting.Neighbour
	// UserWindow is the most users whose state a run on user-level data
	// holds at once (0: all): set by the caller from public facts (its
	// memory limit), it changes the number of passes, never the result.
	UserWindow int
	// Sensitivity is that of the exact sum: max(|lo|, |hi|) under
	// add-remove, hi − lo (rounded up) under replace-one.
	Sensitivity float64
	// Excess is the rounding excess SumExcess(max(|lo|, |hi|)), added to
	// the sensitivity before calibration.
	Excess float64
	// Gaussian is set for δ > 0 (discrete Gaussian, ρ-zCDP with Rho);
	// otherwise the noise is discrete Laplace (pure ε).
	Gaussian bool
	Rho      float64
	// Scale is the Laplace b or the Gaussian σ.
	Scale float64
	// Event is the exact cost.
	Event accounting.Event
}

// PlanSum plans the sum of a column with public bounds [lo, hi] at (ε, δ)
// under the neighbouring relation nb. It reads no data; its errors have
// fixed texts (ErrBounds, ErrBoundsRange, ErrEps, ErrDelta, ErrCalibrate or
// the noise package's calibration errors).
// An optional trailing Calibration (default CalibrateZCDP) chooses how δ > 0
// is calibrated.
func PlanSum(lo, hi, eps, delta float64, nb accounting.Neighbour, cal ...Calibration) (*SumPlan, error) {
	if err := checkBounds(lo, hi); err != nil {
		return nil, err
	}
	m := max(math.Abs(lo), math.Abs(hi))
	sens := m // adding or removing one value moves the sum by |v| ≤ m
	if nb == accounting.ReplaceOne {
		sens = up(hi - lo) // replacing v by v' moves it by |v − v'| ≤ hi − lo
	}
	excess := SumExcess(m)
	total := up(sens + excess)
	np, err := planNoise(total, total, eps, delta, 1, calibration(cal))
	if err != nil {
		return nil, err
	}
	return &SumPlan{Lo: lo, Hi: hi, Eps: eps, Delta: delta, Neighbour: nb, Sensitivity: sens, Excess: excess,
		Gaussian: np.Gaussian, Rho: np.Rho, Scale: np.Scale, Event: np.Event}, nil
}

func (p *SumPlan) noise() noisePlan {
	return noisePlan{Gaussian: p.Gaussian, Rho: p.Rho, Scale: p.Scale, Event: p.Event}
}

// Run releases the noisy sum of the one-column source src: of its clamped
// values, or with users set of one value per user (the mean of the user's
// clamped values). It fails only with the source's or ctx's error, or on
// more than MaxRows rows (which the data registry refuses).
func (p *SumPlan) Run(ctx context.Context, src rows.Source, users bool, s *noise.Sampler) (float64, error) {
	sum, err := ClampedSum(ctx, src, users, p.Lo, p.Hi, p.UserWindow)
	if err != nil {
		return 0, err
	}
	return p.Release(sum, s), nil
}

// Release adds the planned noise to a sum computed elsewhere (the data
// engine's exact fixed-point sum, release's tabular statements): sum
// must move between neighbouring data sets by at most Sensitivity +
// Excess, which holds for any sum whose terms lie within [Lo, Hi] up to
// a rounding that Excess covers (see SumExcess).
func (p *SumPlan) Release(sum float64, s *noise.Sampler) float64 {
	out := []float64{sum}
	p.noise().add(s, out)
	return out[0]
}

// ClampedSum is the exact-order sum a SumPlan releases: the clamped
// values of src (or its users' means) summed in rowpass's fixed pairwise
// order, whose rounding SumExcess bounds. Rows are streamed with memory
// bounded by a chunk; user means are streamed too, computed window users
// at a time (window ≤ 0: all users at once), in user-index order whatever
// the window, so the sum's bits do not depend on it (PairwiseScan sums a
// stream exactly as Pairwise sums the same values held in memory).
func ClampedSum(ctx context.Context, src rows.Source, users bool, lo, hi float64, window int) (float64, error) {
	if src.Dim() != 1 {
		return 0, ErrDim
	}
	if users {
		means, err := userMeans(src, lo, hi, window)
		if err != nil {
			return 0, err
		}
		sum, err := rowpass.SumVecScan(ctx, means, 1, rowpass.Options{}, false, false, func(dst []float64, b *rows.Batch) {
			for _, v := range b.X[:b.N] {
				dst[0] += v
			}
		})
		if err != nil {
			return 0, err
		}
		return sum[0], nil
	}
	sum, err := rowpass.SumVecScan(ctx, rowpass.Limit(src), 1, rowpass.Options{}, false, false, func(dst []float64, b *rows.Batch) {
		for _, v := range b.X[:b.N] {
			dst[0] += Clamp(v, lo, hi)
		}
	})
	if err != nil {
		return 0, err
	}
	return sum[0], nil
}
