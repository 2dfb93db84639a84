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
	step float64
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
		ratio: ratioFor(eps), Event: accounting.Pure(eps)}, nil
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

// below returns #{k : GridPoint(k) < v}.
func (p *QuantilePlan) below(v float64) int {
	return sort.Search(p.Grid+1, func(k int) bool { return p.GridPoint(k) >= v })
}

// Run releases the private q-quantile of the one-column source src: of its
// clamped values, or with users set of one value per user (the mean of
// the user's clamped values). It collects and sorts the values (memory
// grows with the number of rows or users) and fails only with the
// source's or ctx's error, or on more than MaxRows rows.
func (p *QuantilePlan) Run(ctx context.Context, src rows.Source, users bool, s *noise.Sampler) (float64, error) {
	var vals []float64
	var err error
	if users {
		vals, err = userMeans(ctx, src, p.Lo, p.Hi)
	} else {
		err = forEachValue(ctx, src, false, func(v float64, _ int32) { vals = append(vals, Clamp(v, p.Lo, p.Hi)) })
	}
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	sort.Float64s(vals)
	return p.GridPoint(p.Sample(vals, func() bool { return s.Bernoulli(1, 2) })), nil
}

// ranks describes the data as the sampler sees them: n sorted values and
// the number of grid points of each rank.
type ranks struct {
	n      int
	fl, ce int  // ⌊q·n⌋ and ⌈q·n⌉, exactly
	isInt  bool // q·n is an integer
	first  []int32
}

// newRanks reads sorted clamped values. Rank i ∈ [0, n] holds the grid
// points g with exactly i values ≤ g: those in [x_i, x_{i+1}), from
// first[i] (x_0 = −∞, x_{n+1} = +∞).
func (p *QuantilePlan) newRanks(sorted []float64) *ranks {
	n := len(sorted)
	t := new(big.Rat).SetFloat64(p.Q) // exact: q is a dyadic rational
	t.Mul(t, new(big.Rat).SetInt64(int64(n)))
	fl := new(big.Int).Quo(t.Num(), t.Denom()) // t ≥ 0: truncation is the floor
	r := &ranks{n: n, fl: int(fl.Int64()), isInt: t.IsInt(), first: make([]int32, n+2)}
	r.ce = r.fl
	if !r.isInt {
		r.ce++
	}
	for i, v := range sorted {
		r.first[i+1] = int32(p.below(v))
	}
	r.first[n+1] = int32(p.Grid + 1)
	return r
}

// count is the number of grid points of rank i.
func (r *ranks) count(i int) int64 { return int64(r.first[i+1] - r.first[i]) }

// walk visits every rank once, by increasing loss d = ⌈|i − q·n|⌉ (the
// rank below q·n first at equal loss), until visit returns false. Ranks
// i ≥ q·n have loss i − ⌊q·n⌋, ranks i < q·n have ⌈q·n⌉ − i.
func (r *ranks) walk(visit func(d, i int) bool) {
	for d := 0; ; d++ {
		left, right := r.ce-d, r.fl+d
		if left < 0 && right > r.n {
			return
		}
		if d >= 1 && left >= 0 && !visit(d, left) {
			return
		}
		if (d >= 1 || r.isInt) && right <= r.n && !visit(d, right) {
			return
		}
	}
}

// Sample draws a grid index from the exponential mechanism on sorted
// clamped values, with fair bits from bit. Every grid point g gets the
// weight f(D(g)) of its loss level (weights.at); the draw is exact
// (sampleLevels).
func (p *QuantilePlan) Sample(sorted []float64, bit func() bool) int {
	return p.sample(sorted, bit, cutBits)
}

// sample is Sample with the envelope's cut at envBits below the best
// weight: any envBits ≥ 1 gives the same distribution (tests use small
// ones to exercise the rejection step).
func (p *QuantilePlan) sample(sorted []float64, bit func() bool, envBits int64) int {
	r := p.newRanks(sorted)
	var lv []level
	var rank []int
	r.walk(func(d, i int) bool {
		if c := r.count(i); c > 0 {
			lv, rank = append(lv, level{d: d, count: c}), append(rank, i)
		}
		return true
	})
	i, off := sampleLevels(walkWeights(p.ratio, lv), lv, bit, envBits)
	return int(r.first[rank[i]]) + int(off)
}
