package linalg

import (
	"context"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
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

// Rows is a data matrix whose row i enters every sum as Scale[i]·M_i, of
// Euclidean norm at most 1 (up to the rounding of Scale[i], which the
// mechanisms absorb in a relative slack). A row with scale 0 contributes
// nothing and is not read. Pass splits the passes over the cores; the
// results are bit identical for every worker count (rowpass.Pairwise).
type Rows struct {
	M     blas64.General
	Scale []float64
	Pass  rowpass.Options
}

// MinRowsFor keeps shards above ~64k floats so goroutine start-up stays
// negligible next to the work; use it for Rows.Pass.MinRows.
func MinRowsFor(d int) int {
	return max(256, 65536/max(d, 1))
}

func (r Rows) row(i int) []float64 {
	return r.M.Data[i*r.M.Stride : i*r.M.Stride+r.M.Cols]
}

// Gram returns the upper triangle of Σ_i (s_i·a_i)(s_i·a_i)ᵀ restricted to
// the columns cols (all columns if cols is nil), as an m×m row-major slice
// (m = len(cols) or d) whose strict lower triangle is zero. Each block of
// rowpass.BlockRows rows is scaled into a buffer and summed by a symmetric
// rank-k update (BLAS Dsyrk with β = 0) into a zeroed block sum; the block
// sums are combined by rowpass.Pairwise, so every entry is within
// γ_GramRoundings·Σ_i |s_i a_ij|·|s_i a_ik| of the exact sum (majorant
// ℓ2 norm ≤ ‖s_i a_i‖² ≤ 1 per row). If ctx is cancelled the workers stop
// early and the partial result must be discarded: callers check ctx.Err()
// afterwards.
func (r Rows) Gram(ctx context.Context, cols []int) []float64 {
	m := len(cols)
	if cols == nil {
		m = r.M.Cols
	}
	bufs := sync.Pool{New: func() any { return make([]float64, rowpass.BlockRows*m) }}
	return rowpass.Pairwise(r.M.Rows, r.Pass,
		func() []float64 { return make([]float64, m*m) },
		func(c []float64, lo, hi int) {
			if ctx.Err() != nil {
				return
			}
			buf := bufs.Get().([]float64)
			defer bufs.Put(buf)
			nb := 0
			for i := lo; i < hi; i++ {
				s := r.Scale[i]
				if s == 0 {
					continue
				}
				dst := buf[nb*m : (nb+1)*m]
				if cols == nil {
					floats.ScaleTo(dst, s, r.row(i))
				} else {
					a := r.row(i)
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
// Gram matrix) in the pairwise order; each term is computed as
// (s_i·a_ij)², so GramRoundings bounds it, and the majorant is the term
// itself, of ℓ2 norm ≤ ‖s_i a_i‖² ≤ 1 per row. Every kernel here scales a
// row before any product: s·a has norm ≤ 1 whatever ‖a‖, whereas s² =
// 1/‖a‖² is subnormal for ‖a‖ beyond about 1e154, where its rounding is
// absolute and a term could exceed the norm the sensitivities assume.
func (r Rows) SumSquares() []float64 {
	return rowpass.SumVec(r.M.Rows, r.M.Cols, r.Pass, func(out []float64, lo, hi int) {
		for i := lo; i < hi; i++ {
			s := r.Scale[i]
			if s == 0 {
				continue
			}
			for j, a := range r.row(i) {
				sa := s * a
				out[j] += sa * sa
			}
		}
	})
}

// CovTimes returns Σ_i (s_i a_i)((s_i a_i)ᵀx) for x d×p, the product C·x without
// forming C, in a single pass over the rows: each row is read once for its
// p dot products and its p updates while it is in cache. Rows are added
// directly within blocks of rowpass.BlockRows rows and the block sums
// combined by rowpass.Pairwise: every entry (k, j) is within
// γ_CovTimesRoundings(d) of Σ_i s_i²|a_ik|(|a_i|ᵀ|x_j|), whose ℓ2 norm per
// row is at most ‖s_i a_i‖²·‖x‖_F ≤ ‖x‖_F.
func (r Rows) CovTimes(x *mat.Dense) *mat.Dense {
	d, p := x.Dims()
	xt := make([]float64, p*d) // xᵀ, one contiguous column of x per row
	for j := range p {
		for i := range d {
			xt[j*d+i] = x.At(i, j)
		}
	}
	acc := rowpass.SumVec(r.M.Rows, p*d, r.Pass, func(yt []float64, lo, hi int) {
		sa := make([]float64, d)
		for i := lo; i < hi; i++ {
			s := r.Scale[i]
			if s == 0 {
				continue
			}
			floats.ScaleTo(sa, s, r.row(i)) // scaled first: see SumSquares
			for j := range p {
				w := floats.Dot(sa, xt[j*d:(j+1)*d])
				floats.AddScaled(yt[j*d:(j+1)*d], w, sa)
			}
		}
	})
	y := mat.NewDense(d, p, nil)
	for j := range p {
		for i := range d {
			y.Set(i, j, acc[j*d+i])
		}
	}
	return y
}
