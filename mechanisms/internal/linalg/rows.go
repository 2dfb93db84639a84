package linalg

import (
	"context"
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// MaxRows is the largest number of terms any released sum may have,
// rowpass.MaxRows = 2^30: the data registry refuses larger data sets, and
// a sum over users has at most as many terms as rows.
const MaxRows = rowpass.MaxRows

// Rounding budgets: the most roundings any term of a released sum passes
// through, relative to its reference value (see Excess).
const (
	// SumRoundings is the block sum (BlockRows−1 additions) and the
	// pairwise combination of at most MaxRows/BlockRows blocks (TreeDepth
	// additions).
	SumRoundings = rowpass.BlockRows - 1 + rowpass.TreeDepth
	// GramRoundings bounds Gram and SumSquares: the term s·a_j·s·a_k is
	// computed with three roundings (s·a_j, s·a_k and their product), then
	// summed.
	GramRoundings = 3 + SumRoundings
)

// CovTimesRoundings is the budget of CovTimes on d columns: the scaled
// row fl(s·a) (one rounding per entry), the dot product (s·a)ᵀx_j
// (relative to |s·a|ᵀ|x_j|, d roundings), its product with fl(s·a_k) (one,
// plus that factor's own), then SumRoundings. A Gram
// matrix multiplied by X afterwards (GramRoundings, then d-term products)
// fits the same budget.
func CovTimesRoundings(d int) int { return d + 3 + SumRoundings }

// Excess returns 2·γ_h·MaxRows·r, rounded up: the ℓ2 distance, beyond the
// exact sensitivity Δ, between the computed sums of two neighbouring data
// sets, when every term of every entry passes through at most h roundings
// and each term's entrywise majorant has ℓ2 norm ≤ r. A mechanism adds it
// to Δ before calibrating its noise.
//
// Argument. Let f(D) = Σ_i t(a_i) be the exact sum of the per-row (or
// per-user) reference terms, vectors over the released coordinates, and
// F(D) its computed value. The pairwise order (rowpass.Pairwise, Stream)
// gives, entry by entry, |F(D) − f(D)| ≤ γ_h·Σ_i M(a_i) for a non-negative
// majorant M(a) of the term (Higham §3.1 and §4.2: a term carrying at most
// h factors (1+δ), |δ| ≤ u, is off by at most γ_h times its majorant). By
// Minkowski's inequality ‖Σ_i M(a_i)‖₂ ≤ Σ_i ‖M(a_i)‖₂ ≤ n·r ≤ MaxRows·r.
// So ‖F(D) − F(D')‖₂ ≤ ‖f(D) − f(D')‖₂ + 2·γ_h·MaxRows·r ≤ Δ + Excess. The
// ℓ2 norm over coordinates costs no √m because the majorants are summed
// per term before taking norms. A final scaling of the whole sum by a
// computed constant (a division by a public count) adds its roundings to
// h, since it multiplies every term's factor product.
func Excess(h int, r float64) float64 {
	return ExcessOver(h, MaxRows, r)
}

// ExcessOver is Excess for a sum of at most terms terms instead of
// MaxRows: 2·γ_h·terms·r, rounded up. Mechanisms whose sums are bounded by
// a smaller public count (a minibatch of ⌊MaxRows/T⌋ records, a mean
// whose count cancels) charge this instead.
func ExcessOver(h int, terms, r float64) float64 {
	// The three products, and a correctly rounded r such as √d, each lose
	// at most a relative 2^-53; 2^-50 covers all four.
	return 2 * rowpass.Gamma(h) * terms * r * (1 + 0x1p-50)
}

// Rows is private data as the shared kernels read it: the rows of Src, of
// which row a enters every sum as Scale(a)·a, of Euclidean norm at most 1
// (up to the rounding of the scale, which the mechanisms absorb in a
// relative slack). A row with scale 0 contributes nothing. Each kernel is
// one pass over Src (one Scan), in the order of rowpass.Pairwise, and
// holds at most a chunk of rows (rowpass.PairwiseScan) whatever the row
// count: the scale of a row is computed from the row itself each time the
// row is read, never stored, because an array of per-row scales would grow
// with n. (A source already held in memory may come with the scales
// computed once, Scales: its memory grows with n anyway.) Pass splits the
// blocks of a pass over the cores; the results are bit identical for every
// worker count and every way Src cuts its batches.
type Rows struct {
	Src rows.Source
	// Scale is the public per-row rule s(a) ≥ 0 with ‖s(a)·a‖ ≤ 1 (0 drops
	// the row). It must depend on the row alone, since it is recomputed in
	// every pass, and be safe for concurrent calls.
	Scale func(a []float64) float64
	// Scales, if set, holds Scale of every row of an in-memory Src by
	// position (Batch.First + i), computed once by the caller.
	Scales []float64
	// FromNorm, if set, is the same rule as a function of the parts of
	// ‖a‖ that ScaledNorm returns: a block whose source stored them with
	// its rows (rows.Normed, see RowNorm) takes each row's scale from
	// them instead of calling Scale, which saves the rule's exact norm (a
	// division and a square per entry) in every pass. It must return
	// Scale(a)'s bits for every row a.
	FromNorm func(big, rel float64, ok bool) float64
	Pass     rowpass.Options
}

// scale returns the scale of row i of the block b (a = b.Row(i, d)).
func (r Rows) scale(b *rows.Batch, i int, a []float64) float64 {
	if r.Scales != nil {
		return r.Scales[b.First+i]
	}
	if r.FromNorm != nil && b.NormBig != nil {
		return r.FromNorm(b.NormBig[i], b.NormRel[i], !math.IsInf(b.NormBig[i], 1))
	}
	return r.Scale(a)
}

// MinRowsFor keeps shards above ~64k floats so goroutine start-up stays
// negligible next to the work; use it for Rows.Pass.MinRows.
func MinRowsFor(d int) int {
	return max(256, 65536/max(d, 1))
}

// ErrTooManyRows is returned by a pass over more than MaxRows rows. A
// Source has no length (the row count is private), so the limit is
// checked as the rows arrive; the text names the public limit only.
var ErrTooManyRows = rowpass.ErrTooManyRows

// PairwisePass is one pass over the rows of src summed in the order of
// rowpass.Pairwise: block(acc, b) receives a zero accumulator and a batch
// holding one block of at most rowpass.BlockRows consecutive rows (b.N rows
// of src.Dim() features, no labels or units) and must leave in acc their
// sum, summed directly; merge and clear are as for rowpass.Pairwise. It
// returns the sum and the number of rows read (private: a caller may use
// it only inside its computation), or the source's error, ctx's, or
// ErrTooManyRows; after an error the sum must be discarded.
//
// A *rows.Dense whose rows are contiguous is summed in place by
// rowpass.Pairwise, the block being a view of the matrix instead of a copy
// (the copy into a chunk is a serial step that costs more than a cheap
// kernel); every other source goes through rowpass.PairwiseScan. Both give
// the same bits (rowpass's scan tests), so the choice is invisible.
func PairwisePass[A any](ctx context.Context, src rows.Source, opt rowpass.Options, newAcc func() A, block func(acc A, b *rows.Batch), merge func(into, from A), clear func(A)) (A, int, error) {
	var zero A
	dim := src.Dim()
	if d, ok := src.(*rows.Dense); ok {
		n := d.NumRows()
		if n > MaxRows {
			return zero, 0, ErrTooManyRows
		}
		if n == 0 || d.Matrix().RawMatrix().Stride == dim {
			if err := ctx.Err(); err != nil {
				return zero, 0, err
			}
			var data []float64
			if n > 0 {
				data = d.Matrix().RawMatrix().Data
			}
			acc := rowpass.Pairwise(n, opt, newAcc, func(acc A, lo, hi int) {
				if ctx.Err() != nil {
					return // the result is discarded below
				}
				block(acc, &rows.Batch{X: data[lo*dim : hi*dim], N: hi - lo, First: lo})
			}, merge, clear)
			if err := ctx.Err(); err != nil {
				return zero, 0, err
			}
			return acc, n, nil
		}
	}
	c := &counting{Source: src}
	acc, err := rowpass.PairwiseScan(ctx, c, opt, false, false, newAcc, block, merge, clear)
	if err != nil {
		return zero, 0, err
	}
	return acc, c.n, nil
}

// counting counts the rows of its (single) pass and fails it past MaxRows,
// before rowpass.PairwiseScan would panic on them.
type counting struct {
	rows.Source
	n int
}

// HasNorms forwards the source's stored norms (rows.Normed), which
// rowpass.PairwiseScan hands on to the blocks.
func (c *counting) HasNorms() bool {
	nm, ok := c.Source.(rows.Normed)
	return ok && nm.HasNorms()
}

func (c *counting) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := c.Source.Scan(ctx)
	if err != nil {
		return nil, err
	}
	c.n = 0
	return &countingCursor{Cursor: cur, c: c}, nil
}

type countingCursor struct {
	rows.Cursor
	c *counting
}

func (cc *countingCursor) Next(dst *rows.Batch) error {
	err := cc.Cursor.Next(dst)
	cc.c.n += dst.N
	if cc.c.n > MaxRows {
		dst.N = 0
		return ErrTooManyRows
	}
	return err
}

// View lends the rows of a cursor that lends them (rows.Viewer), counted
// as Next counts them.
func (cc *countingCursor) View(dst *rows.Batch, n int, labels, units bool) error {
	v, ok := cc.Cursor.(rows.Viewer)
	if !ok {
		return rows.ErrNoView
	}
	err := v.View(dst, n, labels, units)
	cc.c.n += dst.N
	if cc.c.n > MaxRows {
		dst.N = 0
		return ErrTooManyRows
	}
	return err
}

// ReleaseView forwards to a cursor that releases used rows of its views
// (see rowpass.PairwiseScan).
func (cc *countingCursor) ReleaseView(lo, hi int) {
	if r, ok := cc.Cursor.(interface{ ReleaseView(lo, hi int) }); ok {
		r.ReleaseView(lo, hi)
	}
}

// sumVec is PairwisePass for a float64 vector of length m, merged as rowpass.SumVec
// merges: block(dst, b) receives dst zeroed and adds the block's rows.
func sumVec(ctx context.Context, src rows.Source, m int, opt rowpass.Options, block func(dst []float64, b *rows.Batch)) ([]float64, int, error) {
	return PairwisePass(ctx, src, opt,
		func() []float64 { return make([]float64, m) },
		block,
		func(into, from []float64) {
			for i, v := range from {
				into[i] += v
			}
		},
		func(a []float64) { clear(a) })
}

// insideMargin is the relative margin by which InsideBall's squared norm
// must lie under the bound: far above the rounding of a d-term sum of
// squares for every d ≤ insideMaxDim (γ_d < 2^-32) and of the exact rule's
// (1/big)/rel (a few units in the last place), so that a row it accepts
// is accepted by the exact rule too.
const (
	insideMargin = 0x1p-24
	insideMaxDim = 1 << 20
)

// InsideBall reports whether the row a certainly has Euclidean norm below
// √r2 by a relative margin, from a plain sum of squares (in any order,
// with the SIMD dot product): a fast path for the public row rules, which
// leave such a row's scale at its no-clipping value. It is false, and the
// caller must use the exact rule (ScaledNorm), for a row with a NaN, an
// infinity or an overflowing square, a row whose squares all underflow to
// zero, a zero row, and a row near or beyond the bound. Its answer never
// changes a scale: every row it accepts, the exact rule also leaves
// unclipped (TestInsideBallAgreesWithScaledNorm).
func InsideBall(a []float64, r2 float64) bool {
	if len(a) > insideMaxDim {
		return false
	}
	ss := floats.Dot(a, a)
	// NaN and +Inf fail the comparison; so does a zero sum.
	return ss > 0 && ss <= r2*(1-insideMargin)
}

// ScaledNorm is rows.ScaledNorm, the exact norm rule every public row
// rule is built on (it lives in the leaf package so that a data layer can
// store its results with the rows; see RowNorm).
func ScaledNorm(a []float64) (big, rel float64, ok bool) { return rows.ScaledNorm(a) }

// RowNorm is ScaledNorm of row i of the block b (a = b.Row(i, dim)): the
// parts the source stored with the row when it has them (rows.Normed,
// written by ScaledNorm itself, so the bits are the same), else computed
// from a. A mechanism that needs every row's exact norm in every pass
// (the adaptive power method's scores) reads it here instead of paying a
// division per entry and pass.
func RowNorm(b *rows.Batch, i int, a []float64) (big, rel float64, ok bool) {
	if b.NormBig != nil {
		big = b.NormBig[i]
		return big, b.NormRel[i], !math.IsInf(big, 1)
	}
	return ScaledNorm(a)
}

// Gram returns the upper triangle of Σ_i (s_i·a_i)(s_i·a_i)ᵀ restricted to
// the columns cols (all columns if cols is nil), as an m×m row-major slice
// (m = len(cols) or d) whose strict lower triangle is zero, and the number
// of rows read. Each block of rowpass.BlockRows rows is scaled into a
// buffer and summed by a symmetric rank-k update (BLAS Dsyrk with β = 0)
// into a zeroed block sum; the block sums are combined by the pairwise
// tree (PairwisePass), so every entry is within
// γ_GramRoundings·Σ_i |s_i a_ij|·|s_i a_ik| of the exact sum (majorant ℓ2
// norm ≤ ‖s_i a_i‖² ≤ 1 per row). On an error (the source's, ctx's,
// ErrTooManyRows) the partial sums are discarded.
func (r Rows) Gram(ctx context.Context, cols []int) ([]float64, int, error) {
	d := r.Src.Dim()
	m := len(cols)
	if cols == nil {
		m = d
	}
	bufs := sync.Pool{New: func() any { return make([]float64, rowpass.BlockRows*m) }}
	return PairwisePass(ctx, r.Src, r.Pass,
		func() []float64 { return make([]float64, m*m) },
		func(c []float64, b *rows.Batch) {
			buf := bufs.Get().([]float64)
			defer bufs.Put(buf)
			nb := 0
			for i := range b.N {
				a := b.Row(i, d)
				s := r.scale(b, i, a)
				if s == 0 {
					continue
				}
				dst := buf[nb*m : (nb+1)*m]
				if cols == nil {
					floats.ScaleTo(dst, s, a)
				} else {
					for t, j := range cols {
						dst[t] = s * a[j]
					}
				}
				nb++
			}
			if nb > 0 {
				a := blas64.General{Rows: nb, Cols: m, Stride: m, Data: buf[:nb*m]}
				blas64.Syrk(blas.Trans, 1, a, 0, blas64.Symmetric{N: m, Stride: m, Uplo: blas.Upper, Data: c})
			}
		},
		func(into, from []float64) {
			for i := range m {
				floats.Add(into[i*m+i:(i+1)*m], from[i*m+i:(i+1)*m])
			}
		},
		func(c []float64) { clear(c) })
}

// SumSquares returns Σ_i s_i²·a_i² entry by entry (the diagonal of the
// Gram matrix) in the pairwise order, and the number of rows read; each
// term is computed as (s_i·a_ij)², so GramRoundings bounds it, and the
// majorant is the term itself, of ℓ2 norm ≤ ‖s_i a_i‖² ≤ 1 per row. Every
// kernel here scales a row before any product: s·a has norm ≤ 1 whatever
// ‖a‖, whereas s² = 1/‖a‖² is subnormal for ‖a‖ beyond about 1e154, where
// its rounding is absolute and a term could exceed the norm the
// sensitivities assume.
func (r Rows) SumSquares(ctx context.Context) ([]float64, int, error) {
	d := r.Src.Dim()
	return sumVec(ctx, r.Src, d, r.Pass, func(out []float64, b *rows.Batch) {
		for i := range b.N {
			a := b.Row(i, d)
			s := r.scale(b, i, a)
			if s == 0 {
				continue
			}
			for j, v := range a {
				sa := s * v
				out[j] += sa * sa
			}
		}
	})
}

// CovTimes returns Σ_i (s_i a_i)((s_i a_i)ᵀx) for x d×p, the product C·x
// without forming C, in a single pass over the rows, and the number of
// rows read: each row is read once for its p dot products and its p
// updates while it is in cache. Rows are added directly within blocks of
// rowpass.BlockRows rows and the block sums combined by the pairwise tree
// (PairwisePass): every entry (k, j) is within γ_CovTimesRoundings(d) of
// Σ_i s_i²|a_ik|(|a_i|ᵀ|x_j|), whose ℓ2 norm per row is at most
// ‖s_i a_i‖²·‖x‖_F ≤ ‖x‖_F.
func (r Rows) CovTimes(ctx context.Context, x *mat.Dense) (*mat.Dense, int, error) {
	d, p := x.Dims()
	xt := make([]float64, p*d) // xᵀ, one contiguous column of x per row
	for j := range p {
		for i := range d {
			xt[j*d+i] = x.At(i, j)
		}
	}
	acc, n, err := sumVec(ctx, r.Src, p*d, r.Pass, func(yt []float64, b *rows.Batch) {
		sa := make([]float64, d)
		for i := range b.N {
			a := b.Row(i, d)
			s := r.scale(b, i, a)
			if s == 0 {
				continue
			}
			floats.ScaleTo(sa, s, a) // scaled first: see SumSquares
			for j := range p {
				w := floats.Dot(sa, xt[j*d:(j+1)*d])
				floats.AddScaled(yt[j*d:(j+1)*d], w, sa)
			}
		}
	})
	if err != nil {
		return nil, 0, err
	}
	y := mat.NewDense(d, p, nil)
	for j := range p {
		for i := range d {
			y.Set(i, j, acc[j*d+i])
		}
	}
	return y, n, nil
}
