package pca

import (
	"context"
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

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
		pass:  rowpass.Options{Workers: workers, MinRows: minRowsFor(g.Cols)},
	}
	rowpass.For(r.n, r.pass, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			r.scale[i], r.norm[i] = rowScale(g.Data[i*g.Stride:i*g.Stride+g.Cols], clip)
		}
	})
	return r
}

// minRowsFor keeps shards above ~64k floats so goroutine start-up stays
// negligible next to the work.
func minRowsFor(d int) int {
	return max(256, 65536/max(d, 1))
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

// gram returns C = Σ_i (s_i m_i)(s_i m_i)ᵀ (upper triangle computed, as a
// SymDense). Each block of rowpass.BlockRows rows is scaled into a buffer
// and summed by a symmetric rank-k update (BLAS Dsyrk with β = 0) into a
// zeroed d×d block sum; the block sums are combined by rowpass.Pairwise, so
// every entry is within gramRoundings (see sumExcess) of the exact sum. If
// ctx is cancelled the workers stop early and the partial result must be
// discarded: callers check ctx.Err() afterwards.
func (r *rows) gram(ctx context.Context) *mat.SymDense {
	d := r.d
	bufs := sync.Pool{New: func() any { return make([]float64, rowpass.BlockRows*d) }}
	acc := rowpass.Pairwise(r.n, r.pass,
		func() []float64 { return make([]float64, d*d) },
		func(c []float64, lo, hi int) {
			if ctx.Err() != nil {
				return
			}
			buf := bufs.Get().([]float64)
			defer bufs.Put(buf)
			nb := 0
			for i := lo; i < hi; i++ {
				if s := r.scale[i]; s != 0 {
					floats.ScaleTo(buf[nb*d:(nb+1)*d], s, r.row(i))
					nb++
				}
			}
			if nb > 0 {
				a := blas64.General{Rows: nb, Cols: d, Stride: d, Data: buf[:nb*d]}
				blas64.Syrk(blas.Trans, 1, a, 0, blas64.Symmetric{N: d, Stride: d, Uplo: blas.Upper, Data: c})
			}
		},
		addUpper(d),
		func(c []float64) { clear(c) })
	out := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			out.SetSym(i, j, acc[i*d+j])
		}
	}
	return out
}

// addUpper returns the merge of d×d row-major upper triangles.
func addUpper(d int) func(into, from []float64) {
	return func(into, from []float64) {
		for i := 0; i < d; i++ {
			floats.Add(into[i*d+i:(i+1)*d], from[i*d+i:(i+1)*d])
		}
	}
}

// covTimes returns Σ_i s_i² m_i (m_iᵀ x) for x d×p, the product C·x without
// forming C, in a single pass over the rows: each row is read once and used
// for both its p dot products and its p updates while it is in cache. Rows
// are added directly within blocks of rowpass.BlockRows rows, and the block
// sums combined by rowpass.Pairwise (error bound: see sumExcess).
func (r *rows) covTimes(x *mat.Dense) *mat.Dense {
	d, p := x.Dims()
	xt := make([]float64, p*d) // xᵀ, one contiguous column of x per row
	for j := 0; j < p; j++ {
		for i := 0; i < d; i++ {
			xt[j*d+i] = x.At(i, j)
		}
	}
	acc := rowpass.SumVec(r.n, p*d, r.pass, func(yt []float64, lo, hi int) {
		for i := lo; i < hi; i++ {
			s := r.scale[i]
			if s == 0 {
				continue
			}
			a := r.row(i)
			s2 := s * s
			for j := 0; j < p; j++ {
				w := s2 * floats.Dot(a, xt[j*d:(j+1)*d])
				floats.AddScaled(yt[j*d:(j+1)*d], w, a)
			}
		}
	})
	y := mat.NewDense(d, p, nil)
	for j := 0; j < p; j++ {
		for i := 0; i < d; i++ {
			y.Set(i, j, acc[j*d+i])
		}
	}
	return y
}
