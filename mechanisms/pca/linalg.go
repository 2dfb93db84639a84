package pca

import (
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// orthonormalize overwrites y (d×p, d ≥ p) with the thin Q factor of its
// Householder QR factorization, with column signs chosen so that every
// diagonal entry of R is non-negative. The sign convention makes Q a
// function of span and orientation only, which the incoherence analysis of
// the noisy power method relies on (orthogonal equivariance, spec §2).
// It returns the diagonal of R (non-negative), whose smallest entry reveals
// rank deficiency.
func orthonormalize(y *mat.Dense) []float64 {
	g := y.RawMatrix()
	p := g.Cols
	tau := make([]float64, p)
	work := make([]float64, 1)
	lapack64.Geqrf(g, tau, work, -1)
	work = make([]float64, max(int(work[0]), p))
	lapack64.Geqrf(g, tau, work, len(work))
	rdiag := make([]float64, p)
	for j := 0; j < p; j++ {
		rdiag[j] = g.Data[j*g.Stride+j]
	}
	lapack64.Orgqr(g, tau, work, -1)
	if int(work[0]) > len(work) {
		work = make([]float64, int(work[0]))
	}
	lapack64.Orgqr(g, tau, work, len(work))
	for j, r := range rdiag {
		if r < 0 {
			rdiag[j] = -r
			for i := 0; i < g.Rows; i++ {
				g.Data[i*g.Stride+j] = -g.Data[i*g.Stride+j]
			}
		}
	}
	return rdiag
}

// cloneDense returns a compact copy of m.
func cloneDense(m mat.Matrix) *mat.Dense {
	return mat.DenseCopyOf(m)
}

// topLeftSingular returns the first k left singular vectors of y (d×p,
// k ≤ p ≤ d) as a d×k matrix, ordered by decreasing singular value, and
// those singular values.
func topLeftSingular(y *mat.Dense, k int) (*mat.Dense, []float64, bool) {
	var svd mat.SVD
	if !svd.Factorize(y, mat.SVDThin) {
		return nil, nil, false
	}
	var u mat.Dense
	svd.UTo(&u)
	vals := svd.Values(nil)
	d, _ := y.Dims()
	out := mat.NewDense(d, k, nil)
	out.Copy(u.Slice(0, d, 0, k))
	fixSigns(out)
	return out, vals[:k], true
}

// fixSigns flips each column of x so that its entry of largest magnitude is
// positive. Eigen- and singular vectors are defined up to sign; a fixed
// convention makes outputs comparable across runs and methods.
func fixSigns(x *mat.Dense) {
	g := x.RawMatrix()
	for j := 0; j < g.Cols; j++ {
		best, bi := 0.0, 0
		for i := 0; i < g.Rows; i++ {
			if v := g.Data[i*g.Stride+j]; v*v > best {
				best, bi = v*v, i
			}
		}
		if g.Data[bi*g.Stride+j] < 0 {
			blas64.Scal(-1, blas64.Vector{N: g.Rows, Inc: g.Stride, Data: g.Data[j:]})
		}
	}
}
