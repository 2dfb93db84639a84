package pca

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// clipped is the private data under the public row rule: row a of src
// enters every computation as s(a)·a, of Euclidean norm ≤ 1, with s from
// rowScale. A row with scale 0 (a non-finite value) contributes nothing.
// The source is never modified.
//
// Every pass reads the source once (one Scan) and computes each row's
// scale, and the adaptive method's row norm, from the row as it arrives:
// nothing per row is kept between passes, so memory is bounded by a chunk
// of rows (rowpass.PairwiseScan) whatever the row count. Recomputing costs
// one division and one square per entry and pass, the price of not
// holding n scales; the scale is a function of the row alone, so every
// pass sees the same one. A source held in memory (*rows.Dense) already
// costs n·d floats: there the scales and norms are computed once, in one
// parallel pass, and kept (2n floats), which saves iterative methods that
// recomputation.
type clipped struct {
	src  rows.Source
	d    int
	clip float64
	inv  float64 // 1/clip, computed once
	lim  float64 // insideLimit(inv), computed once
	pass rowpass.Options
	// scale and norm are rowScale of every row of an in-memory source, by
	// position; nil for a streamed source.
	scale, norm []float64
}

// newClipped applies the clipping rule with bound clip (> 0) to the rows
// of src: rows longer than clip are shortened to clip, then every row is
// divided by clip; a row holding NaN or ±Inf is replaced by zero. A pass
// uses at most workers goroutines (0: GOMAXPROCS); passes is how many
// passes the caller will make (the scales of an in-memory source are kept
// only for more than one).
func newClipped(src rows.Source, clip float64, workers int, passes int) *clipped {
	d := src.Dim()
	c := &clipped{src: src, d: d, clip: clip, inv: 1 / clip, lim: insideLimit(1 / clip),
		pass: rowpass.Options{Workers: workers, MinRows: linalg.MinRowsFor(d)}}
	if m, ok := src.(*rows.Dense); ok && passes > 1 && m.NumRows() > 0 && m.NumRows() <= linalg.MaxRows {
		g := m.Matrix().RawMatrix()
		n := m.NumRows()
		c.scale, c.norm = make([]float64, n), make([]float64, n)
		rowpass.For(n, c.pass, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				c.scale[i], c.norm[i] = rowScale(g.Data[i*g.Stride:i*g.Stride+d], clip)
			}
		})
	}
	return c
}

// rowScaleIn is rowScale of row a, the i-th row of blk, taking the norm
// the source stored with the row when it has one (linalg.RowNorm): the
// same bits as recomputing it, without a second pass over the row.
func (r *clipped) rowScaleIn(blk *rows.Batch, i int, a []float64) (s, norm float64) {
	if r.scale != nil {
		return r.scale[blk.First+i], r.norm[blk.First+i]
	}
	big, rel, ok := linalg.RowNorm(blk, i, a)
	return scaleOf(big, rel, ok, r.inv, r.lim)
}

// rowScale returns s = min(1/clip, 1/‖a‖) and ‖s·a‖, or (0, 0) if a has a
// non-finite entry or is zero. The norm is computed relative to the largest
// magnitude so that no finite row overflows or underflows
// (linalg.ScaledNorm).
func rowScale(a []float64, clip float64) (s, norm float64) {
	big, rel, ok := linalg.ScaledNorm(a) // ‖a‖ = big·rel, rel ∈ [1, √d]
	return scaleOf(big, rel, ok, 1/clip, -1)
}

// scaleOf is rowScale from the parts of ‖a‖ = big·rel that
// linalg.ScaledNorm returns, invClip = 1/clip and lim = insideLimit(invClip)
// (both computed once by the caller: a pass takes a row's scale from its
// stored norm in every pass). The exact rule is s = min(invClip,
// fl(fl(1/big)/rel)), two divisions; a row whose product fl(big·rel) is
// at most lim is inside the clip ball with a margin that makes the rule's
// answer invClip (insideLimit's proof), so one multiplication gives the
// same bits. A product above lim, +Inf or NaN takes the exact rule.
func scaleOf(big, rel float64, ok bool, invClip, lim float64) (s, norm float64) {
	if !ok || big == 0 {
		return 0, 0
	}
	s = invClip
	if !(big*rel <= lim) { // NaN too
		if inv := (1 / big) / rel; inv < s {
			s = inv
		}
	}
	// min(·, 1) by comparison: the product of positive finite factors is
	// never NaN, so this is math.Min's value, without its call, which the
	// adaptive method would pay for every row in every pass.
	if norm = (s * big) * rel; norm > 1 {
		norm = 1
	}
	return s, norm
}

// insideLimit returns lim = fl(fl(1/invClip)·(1−2⁻⁴⁸)), the largest
// product fl(big·rel) that scaleOf takes as inside the clip ball, or −1
// (no product is) when invClip is outside [2⁻¹⁰⁰⁰, 2⁵⁰⁰] (the clip bounds
// [1e-100, 1e100] lie well inside).
//
// Why fl(big·rel) ≤ lim gives fl(fl(1/big)/rel) ≥ invClip, the exact
// rule's answer then being invClip. Let u = 2⁻⁵³, every rounding
// (to nearest) of a result in the normal range has relative error ≤ u,
// and rounding is monotone. C = fl(1/invClip) ≤ (1+u)/invClip and lim ≤
// C·(1−2⁻⁴⁸)·(1+u) ≤ (1+u)²(1−2⁻⁴⁸)/invClip < (1−u)²/invClip, because
// (1+u)²(1−2⁻⁴⁸) < (1−u)² ⇔ 4u < 2⁻⁴⁸ (up to terms in u², far smaller).
// With invClip ∈ [2⁻¹⁰⁰⁰, 2⁵⁰⁰], C and lim are normal and below 2¹⁰⁰¹.
//   - A normal product p = fl(big·rel) ≤ lim: big·rel ≤ p/(1−u) <
//     (1−u)/invClip. Since rel ≥ 1, big ≤ big·rel < 2¹⁰⁰¹, so 1/big is
//     above 2⁻¹⁰⁰¹, normal, and fl(1/big) ≥ (1−u)/big, or it is +Inf when
//     1/big overflows (a subnormal big), which is larger still. Then
//     fl(1/big)/rel ≥ (1−u)/(big·rel) > invClip, and the rounding of the
//     quotient, monotone, gives at least the float invClip.
//   - A subnormal or zero product (p < 2⁻¹⁰²², where relative error is
//     unbounded): big ≤ big·rel < p + 2⁻¹⁰⁷⁴ ≤ 2⁻¹⁰²¹, so fl(1/big) is
//     +Inf or at least (1−u)/big, and fl(1/big)/rel ≥ (1−u)/(big·rel) >
//     2¹⁰²⁰, far above invClip ≤ 2⁵⁰⁰.
//   - A product of +Inf or NaN (a corrupt stored part) is not ≤ lim and
//     takes the exact rule, as does every product outside the range above.
//
// TestScaleFastRule compares both rules bit for bit on random rows and
// rows within a few ulps of the clip, huge and tiny.
func insideLimit(invClip float64) float64 {
	if !(invClip >= 0x1p-1000 && invClip <= 0x1p500) {
		return -1
	}
	return (1 / invClip) * (1 - 0x1p-48)
}

// sums returns the shared row kernels over r (the same rows, rule and
// pass options).
func (r *clipped) sums() linalg.Rows {
	clip := r.clip
	inv, clip2 := 1/clip, clip*clip
	lim := insideLimit(inv)
	return linalg.Rows{Src: r.src, Pass: r.pass, Scales: r.scale, FromNorm: func(big, rel float64, ok bool) float64 {
		// The exact rule: rowScale's own bits, from the stored parts.
		s, _ := scaleOf(big, rel, ok, inv, lim)
		return s
	}, Scale: func(a []float64) float64 {
		// Most rows lie inside the clip ball, where rowScale's s is 1/clip:
		// the cheap certified test skips its exact norm there.
		if linalg.InsideBall(a, clip2) {
			return inv
		}
		s, _ := rowScale(a, clip)
		return s
	}}
}

// gram returns C = Σ_i (s_i m_i)(s_i m_i)ᵀ as a SymDense, accumulated in
// one pass by linalg.Rows.Gram (error bound: gaussRoundings, see
// sumExcess). On an error (the source's, ctx's, too many rows) the partial
// sums are discarded.
func (r *clipped) gram(ctx context.Context) (*mat.SymDense, error) {
	d := r.d
	acc, _, err := r.sums().Gram(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			out.SetSym(i, j, acc[i*d+j])
		}
	}
	return out, nil
}

// covTimes returns Σ_i s_i² m_i (m_iᵀ x) for x d×p, the product C·x without
// forming C, in a single pass (linalg.Rows.CovTimes; error bound:
// npmRoundings, see sumExcess).
func (r *clipped) covTimes(ctx context.Context, x *mat.Dense) (*mat.Dense, error) {
	y, _, err := r.sums().CovTimes(ctx, x)
	return y, err
}
