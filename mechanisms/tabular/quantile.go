package tabular

import (
	"context"
	"errors"
	"math"
	"math/big"
	"sort"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// GridBits sets the quantile's output grid: at most 2^GridBits intervals
// between lo and hi, fewer when the bounds are too close together for so
// many distinct float64 points.
const GridBits = 20

// cutBits sets the sampler's envelope: ranks whose weight is below
// 2^-cutBits of the best present one are proposed at weight 2^cut and
// accepted with probability weight/2^cut, so that the exact integer
// weights stay below 2^(64+cutBits). With at most 2^21 grid points a
// proposal is rejected with probability below 2^-63.
const cutBits = 85

// ErrQ: the quantile is not strictly between 0 and 1.
var ErrQ = errors.New("q must be a number strictly between 0 and 1")

// QuantilePlan is a planned private quantile: the exponential mechanism
// over a public grid of [lo, hi] (see the package documentation). Every
// field is public.
type QuantilePlan struct {
	Lo, Hi, Q, Eps float64
	// Grid is K: the output is one of the K+1 points GridPoint(0..K).
	Grid int
	// UserWindow is the most users whose state a run on user-level data
	// holds at once (0: all): set by the caller from public facts (its
	// memory limit), it changes the number of passes, never the result.
	UserWindow int
	step       float64
	// ratio is R ≤ e^(ε/2), the most one weight exceeds the next.
	ratio dyadic
	Event accounting.Event
}

// PlanQuantile plans the q-quantile of a column with public bounds
// [lo, hi] at pure ε. It reads no data; its errors have fixed texts
// (ErrBounds, ErrBoundsRange, ErrQ, ErrEps).
func PlanQuantile(lo, hi, q, eps float64) (*QuantilePlan, error) {
	if err := checkBounds(lo, hi); err != nil {
		return nil, err
	}
	if !(q > 0 && q < 1) {
		return nil, ErrQ
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, ErrEps
	}
	// Grid points lo + k·w are strictly increasing when w exceeds the
	// rounding of the product and the sum, at most ulp(2M) each for
	// M = max(|lo|, |hi|): 16·ulp(M) leaves a margin of four.
	m := max(math.Abs(lo), math.Abs(hi))
	ulp := up(m) - m
	k := 1 << GridBits
	for k > 1 && (hi-lo)/float64(k) < 16*ulp {
		k /= 2
	}
	return &QuantilePlan{Lo: lo, Hi: hi, Q: q, Eps: eps, Grid: k, step: (hi - lo) / float64(k),
		ratio: ratioFor(eps), Event: accounting.BoundedRange(eps)}, nil
}

// Ratio is R, the bound on the ratio of the weights of neighbouring loss
// levels (at most e^(ε/2)), for display: an R beyond float64's range
// shows as +Inf.
func (p *QuantilePlan) Ratio() float64 {
	return math.Ldexp(float64(p.ratio.m), int(max(min(p.ratio.e, 4096), -4096)))
}

// GridPoint returns grid point k, 0 ≤ k ≤ Grid: lo, lo + k·(hi − lo)/K,
// hi.
func (p *QuantilePlan) GridPoint(k int) float64 {
	switch {
	case k <= 0:
		return p.Lo
	case k >= p.Grid:
		return p.Hi
	}
	return p.Lo + float64(k)*p.step
}

// below returns #{k : GridPoint(k) < v} for v in [lo, hi]: the first grid
// point at or above v. It computes it rather than searching for it, so
// that its work does not depend on v (a binary search's branches, which
// a CPU predicts well on concentrated data and badly on spread data, made
// the run's time depend on the data's spread): the quotient (v − lo)/step
// is within one grid interval of the answer (the grid's step exceeds 16
// ulps of the bounds, PlanQuantile, so every rounding involved is a small
// fraction of a step), and a comparison on each side corrects it
// (TestQuantileBelowMatchesSearch checks the result against a search).
func (p *QuantilePlan) below(v float64) int {
	if !(v > p.Lo) { // v ≤ lo (or NaN, which Clamp never passes)
		return 0
	}
	k := p.Grid
	if v < p.Hi {
		k = min(max(int(math.Ceil((v-p.Lo)/p.step)), 0), p.Grid)
	}
	for k > 0 && p.GridPoint(k-1) >= v {
		k--
	}
	for k <= p.Grid && p.GridPoint(k) < v {
		k++
	}
	return k
}

// QuantileBytesPerPoint bounds the memory a quantile's run holds per grid
// point: one int32 count of the histogram (n ≤ MaxRows = 2^30 fits) and
// one level of the sampler (its loss and count, 16 bytes, and its first
// grid point, 8), rounded up. The run holds Grid+1 of them whatever the
// number of rows (on user-level data, two float64 per user of a window as
// well: the users' sums and counts, UserWindow).
const QuantileBytesPerPoint = 32

// Run releases the private q-quantile of the one-column source src: of its
// clamped values, or with users set of one value per user (the mean of
// the user's clamped values). It streams: every value is binned on the
// grid as it is read (a histogram of Grid+1 counts), so its memory and the
// sampler's work depend on the public grid only, not on the number of rows
// or their spread; there is no sort. It fails only with the source's or
// ctx's error, or on more than MaxRows rows.
func (p *QuantilePlan) Run(ctx context.Context, src rows.Source, users bool, s *noise.Sampler) (float64, error) {
	hist := make([]int32, p.Grid+1)
	var err error
	if users {
		var means rows.Source
		if means, err = userMeans(src, p.Lo, p.Hi, p.UserWindow); err == nil {
			err = rows.ForEach(ctx, means, 4096, false, false, func(b *rows.Batch) error {
				for _, v := range b.X[:b.N] {
					hist[p.below(v)]++
				}
				return nil
			})
		}
	} else {
		err = forEachValue(ctx, src, false, func(v float64, _ int32) { hist[p.below(Clamp(v, p.Lo, p.Hi))]++ })
	}
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return p.GridPoint(p.sampleHist(hist, func() bool { return s.Bernoulli(1, 2) }, cutBits)), nil
}

// SampleHistogram releases the private q-quantile from a histogram of
// the clamped values on the grid that something other than Run binned
// (private_sql's engine returns one per group): hist has Grid+1 counts,
// hist[b] the values binned at grid point b (GridPoint(b−1) < v ≤
// GridPoint(b) up to the binner's rounding), and their total is at most
// MaxRows. Any binning that depends on each value alone keeps the
// mechanism's guarantee (one row moves one count by one); the binner's
// rounding only moves a value by at most one grid step. It overwrites
// hist (the ranks) and returns the drawn grid point, as Run would for
// the same histogram and bits.
func (p *QuantilePlan) SampleHistogram(hist []int32, s *noise.Sampler) (float64, error) {
	if len(hist) != p.Grid+1 {
		return 0, errors.New("tabular: the quantile's histogram does not have the grid's length")
	}
	return p.GridPoint(p.sampleHist(hist, func() bool { return s.Bernoulli(1, 2) }, cutBits)), nil
}

// Sample draws a grid index from the exponential mechanism on sorted
// clamped values, with fair bits from bit. Every grid point g gets the
// weight f(D(g)) of its loss level (weights.at); the draw is exact
// (sampleLevels). It gives the draw of Run on the same values and bits.
func (p *QuantilePlan) Sample(sorted []float64, bit func() bool) int {
	return p.sample(sorted, bit, cutBits)
}

// sample is Sample with the envelope's cut at envBits below the best
// weight: any envBits ≥ 1 gives the same distribution (tests use small
// ones to exercise the rejection step).
func (p *QuantilePlan) sample(sorted []float64, bit func() bool, envBits int64) int {
	hist := make([]int32, p.Grid+1)
	for _, v := range sorted {
		hist[p.below(v)]++
	}
	return p.sampleHist(hist, bit, envBits)
}

// sampleHist draws a grid index from the histogram of the clamped values
// on the grid: hist[b] values v have below(v) = b, that is GridPoint(b−1)
// < v ≤ GridPoint(b). A grid point k has rank r(k) = #{values ≤
// GridPoint(k)} = hist[0] + … + hist[k], and the grid points of one rank
// are consecutive: one level of the exponential mechanism, whose loss is
// that of its rank (ranks.loss). The levels are visited by increasing loss
// (the rank below q·n first at equal loss), as the ranks of the sorted
// values were: the same levels in the same order, so the same draw for
// the same bits. It turns hist into the ranks in place. Its work is
// linear in the grid and its buffers have the grid's size, whatever the
// data (a buffer grown as levels appear would cost more on spread data).
func (p *QuantilePlan) sampleHist(hist []int32, bit func() bool, envBits int64) int {
	for k := 1; k < len(hist); k++ {
		hist[k] += hist[k-1]
	}
	r := newRanksN(p.Q, int(hist[len(hist)-1]))
	// Ranks below q·n have loss falling with k, the others rising: walk
	// from the split down and up at once, the left first at equal loss.
	split := sort.Search(len(hist), func(k int) bool { return !r.left(int(hist[k])) })
	lv := make([]level, 0, len(hist))
	first := make([]int, 0, len(hist))
	lk, rk := split-1, split // the next grid points of each side
	for lk >= 0 || rk < len(hist) {
		if rk >= len(hist) || (lk >= 0 && r.loss(int(hist[lk])) <= r.loss(int(hist[rk]))) {
			c := hist[lk]
			k := lk
			for k > 0 && hist[k-1] == c {
				k--
			}
			lv, first = append(lv, level{d: r.loss(int(c)), count: int64(lk - k + 1)}), append(first, k)
			lk = k - 1
			continue
		}
		c := hist[rk]
		k := rk
		for k+1 < len(hist) && hist[k+1] == c {
			k++
		}
		lv, first = append(lv, level{d: r.loss(int(c)), count: int64(k - rk + 1)}), append(first, rk)
		rk = k + 1
	}
	i, off := sampleLevels(walkWeights(p.ratio, lv), lv, bit, envBits)
	return first[i] + int(off)
}

// ranks holds what the loss of a rank needs: ⌊q·n⌋ and ⌈q·n⌉, exactly.
type ranks struct {
	n      int
	fl, ce int  // ⌊q·n⌋ and ⌈q·n⌉, exactly
	isInt  bool // q·n is an integer
}

// newRanksN computes q·n exactly (q is a dyadic rational).
func newRanksN(q float64, n int) *ranks {
	t := new(big.Rat).SetFloat64(q)
	t.Mul(t, new(big.Rat).SetInt64(int64(n)))
	fl := new(big.Int).Quo(t.Num(), t.Denom()) // t ≥ 0: truncation is the floor
	r := &ranks{n: n, fl: int(fl.Int64()), isInt: t.IsInt()}
	r.ce = r.fl
	if !r.isInt {
		r.ce++
	}
	return r
}

// left reports whether rank i lies below q·n: i < ⌈q·n⌉ (for an integer
// q·n, ⌈q·n⌉ = q·n).
func (r *ranks) left(i int) bool { return i < r.ce }

// loss is the loss ⌈|i − q·n|⌉ of rank i: ⌈q·n⌉ − i below q·n, i − ⌊q·n⌋
// at or above it.
func (r *ranks) loss(i int) int {
	if r.left(i) {
		return r.ce - i
	}
	return i - r.fl
}
