package pca

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
)

// rows is the private data after the public row rules: row i of m enters
// every computation as scale[i]·m_i, which has Euclidean norm ≤ 1. A row
// with scale 0 (non-finite value) contributes nothing and is never read
// again. The caller's matrix is never modified.
type rows struct {
	m     blas64.General
	n, d  int
	scale []float64 // s_i = min(1/Clip, 1/‖m_i‖), 0 for a dropped row
	norm  []float64 // ‖s_i·m_i‖ ≤ 1, used by the adaptive method's scores
	pass  rowpass.Options
}

// prepareRows applies the clipping rule with bound clip (> 0) in one
// parallel pass: rows longer than clip are shortened to clip, then every row
// is divided by clip; a row holding NaN or ±Inf is replaced by zero.
func prepareRows(data *mat.Dense, clip float64, workers int) *rows {
	g := data.RawMatrix()
	r := &rows{
		m: g, n: g.Rows, d: g.Cols,
		scale: make([]float64, g.Rows),
		norm:  make([]float64, g.Rows),
		pass:  rowpass.Options{Workers: workers, MinRows: linalg.MinRowsFor(g.Cols)},
	}
	rowpass.For(r.n, r.pass, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			r.scale[i], r.norm[i] = rowScale(g.Data[i*g.Stride:i*g.Stride+g.Cols], clip)
		}
	})
	return r
}

// rowScale returns s = min(1/clip, 1/‖a‖) and ‖s·a‖, or (0, 0) if a has a
// non-finite entry or is zero. The norm is computed relative to the largest
// magnitude so that no finite row overflows or underflows.
func rowScale(a []float64, clip float64) (s, norm float64) {
	big := 0.0
	for _, v := range a {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0
		}
		big = math.Max(big, math.Abs(v))
	}
	if big == 0 {
		return 0, 0
	}
	ss := 0.0
	for _, v := range a {
		q := v / big
		ss += q * q
	}
	rel := math.Sqrt(ss) // ‖a‖ = big·rel, rel ∈ [1, √d]
	s = 1 / clip
	if inv := (1 / big) / rel; inv < s {
		s = inv
	}
	norm = math.Min((s*big)*rel, 1)
	return s, norm
}

func (r *rows) row(i int) []float64 {
	return r.m.Data[i*r.m.Stride : i*r.m.Stride+r.d]
}

// sums returns the shared row kernels over r (the same rows, scales and
// pass options).
func (r *rows) sums() linalg.Rows {
	return linalg.Rows{M: r.m, Scale: r.scale, Pass: r.pass}
}

// gram returns C = Σ_i (s_i m_i)(s_i m_i)ᵀ as a SymDense, accumulated by
// linalg.Rows.Gram (error bound: gaussRoundings, see sumExcess). If ctx is
// cancelled the partial result must be discarded: callers check ctx.Err()
// afterwards.
func (r *rows) gram(ctx context.Context) *mat.SymDense {
	d := r.d
	acc := r.sums().Gram(ctx, nil)
	out := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			out.SetSym(i, j, acc[i*d+j])
		}
	}
	return out
}

// covTimes returns Σ_i s_i² m_i (m_iᵀ x) for x d×p, the product C·x without
// forming C, in a single pass (linalg.Rows.CovTimes; error bound:
// npmRoundings, see sumExcess).
func (r *rows) covTimes(x *mat.Dense) *mat.Dense {
	return r.sums().CovTimes(x)
}
