package tabular

// Several quantiles of one column from one histogram, by recursive
// splitting (Kaplan, Schnapp and Stemmer, "Differentially private
// approximate quantiles", ICML 2022): the middle one of the requested
// levels is drawn first by the exponential mechanism on the whole grid;
// it splits the rows in two, and the levels below it are drawn
// recursively among the rows at or below the drawn point (on the grid
// points up to it), those above it among the rows above (on the grid
// points from it on). With m levels the recursion has L = ⌈log2(m + 1)⌉
// depths, and the intervals of one depth hold disjoint sets of rows, so
// one row is in the exponential mechanisms of at most L draws, one per
// depth, where m independent draws put it in m.

import (
	"errors"
	"math/bits"
	"slices"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// JointQuantilePlan is a planned joint release of quantiles of one column
// with public bounds: every field is public.
type JointQuantilePlan struct {
	// Qs are the levels, sorted and distinct.
	Qs []float64
	// Eps is the ε of each exponential mechanism (each depth's).
	Eps float64
	// Depth is L = ⌈log2(m + 1)⌉, the draws one row can enter.
	Depth int
	// Base is the grid and the weights every draw uses (its Q is unused).
	Base *QuantilePlan
}

// ErrJointQs: the levels of a joint release must be distinct.
var ErrJointQs = errors.New("the quantiles of a joint release must have distinct levels q in (0, 1)")

// JointDepth is ⌈log2(m + 1)⌉, the depths of the recursion for m levels:
// the middle level at depth 1, then ⌊m/2⌋ and m − ⌊m/2⌋ − 1 levels on
// each side.
func JointDepth(m int) int { return bits.Len(uint(max(m, 0))) }

// PlanJointQuantiles plans the joint release of the levels qs (sorted
// and distinct, each strictly between 0 and 1) of a column in [lo, hi],
// each exponential mechanism at eps.
//
// Privacy. A depth's draws run on disjoint sets of rows (the rows of the
// intervals the earlier depths' released points cut), each an
// exponential mechanism whose loss ⌈|r(k) − q′·n′|⌉ (r(k) the rows of the
// interval at or below grid point k, n′ the interval's rows, q′ the level
// within the interval) moves by at most 1 when one row is added to or
// removed from its interval. Adding or removing a row changes one draw
// per depth: the depth is eps-DP and eps-bounded range (the others'
// output distributions do not move), and the L depths compose to L·eps
// (pure), L·eps²/8 (zCDP). Replacing a row can move it from one interval
// to another: two draws a depth, 2·eps each depth. Callers fix eps from
// their share accordingly (dsl/release, sqlJointEps).
func PlanJointQuantiles(lo, hi float64, qs []float64, eps float64) (*JointQuantilePlan, error) {
	if len(qs) == 0 || !slices.IsSorted(qs) {
		return nil, ErrJointQs
	}
	for i, q := range qs {
		if !(q > 0 && q < 1) {
			return nil, ErrQ
		}
		if i > 0 && q == qs[i-1] {
			return nil, ErrJointQs
		}
	}
	base, err := PlanQuantile(lo, hi, 0.5, eps)
	if err != nil {
		return nil, err
	}
	return &JointQuantilePlan{Qs: slices.Clone(qs), Eps: eps, Depth: JointDepth(len(qs)), Base: base}, nil
}

// SampleHistogram releases the quantiles, in the order of Qs, from a
// histogram of the clamped values on the grid (as
// QuantilePlan.SampleHistogram takes it: Grid+1 counts, their total at
// most MaxRows). It leaves hist as it was.
func (p *JointQuantilePlan) SampleHistogram(hist []int32, s *noise.Sampler) ([]float64, error) {
	if len(hist) != p.Base.Grid+1 {
		return nil, errors.New("tabular: the quantiles' histogram does not have the grid's length")
	}
	ks := p.sampleHist(hist, func() bool { return s.Bernoulli(1, 2) }, cutBits)
	out := make([]float64, len(ks))
	for i, k := range ks {
		out[i] = p.Base.GridPoint(k)
	}
	return out, nil
}

// sampleHist draws the grid indices of the levels (in the order of Qs)
// with fair bits from bit.
func (p *JointQuantilePlan) sampleHist(hist []int32, bit func() bool, envBits int64) []int {
	out := make([]int, len(p.Qs))
	buf := make([]int32, len(hist))
	// draw places levels [i, j) between the drawn points a and b (grid
	// indices; a = −1 before the first point) of levels qa and qb: their
	// rows are those binned in (a, b], their candidates the grid points
	// max(a, 0)..b, and each level's q within them is (q − qa)/(qb − qa).
	var draw func(i, j, a, b int, qa, qb float64)
	draw = func(i, j, a, b int, qa, qb float64) {
		if i >= j {
			return
		}
		mid := i + (j-i)/2
		start := max(a, 0)
		h := buf[:b-start+1]
		for k := start; k <= b; k++ {
			h[k-start] = 0
			if k > a {
				h[k-start] = hist[k]
			}
		}
		sub := *p.Base
		sub.Q = (p.Qs[mid] - qa) / (qb - qa)
		k := start + sub.sampleHist(h, bit, envBits)
		out[mid] = k
		draw(i, mid, a, k, qa, p.Qs[mid])
		draw(mid+1, j, k, b, p.Qs[mid], qb)
	}
	draw(0, len(p.Qs), -1, p.Base.Grid, 0, 1)
	return out
}

// JointWins reports whether the joint release of m quantiles of one
// column is more accurate than m independent exponential mechanisms at
// the same budget, as measured (TestJointQuantilesAccuracy; the table in
// docs/sql.md): where one row enters one draw per depth (addRemove: a
// row added or removed), with m ≥ 3 (L < m depths), under pure ε and
// zCDP alike. Where a row can move between the intervals of a depth
// (replace-one: two draws a depth) the joint release pays 2L draws'
// worth against m, and loses at m = 3, 5 and 9 even where 2L < m (the
// errors of a depth's endpoints carry into the next).
func JointWins(m int, addRemove bool) bool { return addRemove && JointDepth(m) < m }
