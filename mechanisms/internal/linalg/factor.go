package linalg

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// ErrNoConvergence is returned when a dense factorization fails, which
// happens only for non-finite input.
var ErrNoConvergence = errors.New("a matrix factorization did not converge")

// RankTol is the relative size of an R diagonal entry at or below which
// Orthonormalize treats a column as linearly dependent on the previous
// ones.
const RankTol = 1e-12

// OrthonormalizeInPlace overwrites y (d×p, d ≥ p) with the thin Q factor
// of its Householder QR factorization, with column signs chosen so that
// every diagonal entry of R is non-negative. The sign convention makes Q a
// function of span and orientation only, which the incoherence analysis of
// the noisy power method relies on (orthogonal equivariance). It returns
// the diagonal of R (non-negative), whose smallest entry reveals rank
// deficiency; columns past a (near-)zero pivot are then arbitrary.
func OrthonormalizeInPlace(y *mat.Dense) []float64 {
	g := y.RawMatrix()
	p := g.Cols
	tau := make([]float64, p)
	work := make([]float64, 1)
	lapack64.Geqrf(g, tau, work, -1)
	work = make([]float64, max(int(work[0]), p))
	lapack64.Geqrf(g, tau, work, len(work))
	rdiag := make([]float64, p)
	for j := range p {
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
			blas64.Scal(-1, blas64.Vector{N: g.Rows, Inc: g.Stride, Data: g.Data[j:]})
		}
	}
	return rdiag
}

// Orthonormalize returns the thin Q factor (d×k) of the Householder QR
// factorization of a (d×k, k ≤ d) with a non-negative R diagonal, as
// OrthonormalizeInPlace, and the number of columns it had to pad; a is not
// modified.
//
// Rank deficiency: a column whose R diagonal entry is at most
// RankTol·‖a‖_F (every column when a = 0) carries no direction of a; QR
// would return an arbitrary unit vector there, or NaNs if normalized by
// hand. Such a column is replaced by the first unit vector e_i, i taken
// from prefer and then from 0, 1, …, d−1, that is not in the span of the
// other columns, made orthogonal to them. With prefer = the row support of
// a, the result keeps that support. The result always has k orthonormal
// columns. It panics if k > d.
func Orthonormalize(a mat.Matrix, prefer []int) (*mat.Dense, int) {
	d, k := a.Dims()
	if k > d {
		panic(fmt.Sprintf("linalg.Orthonormalize: %d×%d matrix has more columns than rows", d, k))
	}
	q := mat.DenseCopyOf(a)
	scale := mat.Norm(q, 2)
	for _, r := range OrthonormalizeInPlace(q) {
		if !(r > RankTol*scale) {
			// After a (near-)zero pivot the later Householder columns mix
			// in an arbitrary direction, so redo the factorization by
			// Gram–Schmidt, padding the dependent columns.
			return gramSchmidtPad(a, prefer, scale)
		}
	}
	return q, 0
}

// gramSchmidtPad orthonormalizes the columns of a in order (two
// Gram–Schmidt passes each, which is orthogonal to working precision); a
// column whose residual is at most RankTol·scale is replaced by the first
// unit vector from prefer, then 0..d−1, that is not in the span of the
// columns so far.
func gramSchmidtPad(a mat.Matrix, prefer []int, scale float64) (*mat.Dense, int) {
	d, k := a.Dims()
	q := mat.NewDense(d, k, nil)
	g := q.RawMatrix()
	col := make([]float64, d)
	orth := func(upto int) float64 {
		for range 2 {
			for c := range upto {
				var dot float64
				for t := range d {
					dot += g.Data[t*g.Stride+c] * col[t]
				}
				for t := range d {
					col[t] -= dot * g.Data[t*g.Stride+c]
				}
			}
		}
		return floats.Norm(col, 2)
	}
	set := func(j int, nrm float64) {
		for t := range d {
			g.Data[t*g.Stride+j] = col[t] / nrm
		}
	}
	candidates := make([]int, 0, len(prefer)+d)
	candidates = append(candidates, prefer...)
	for i := range d {
		candidates = append(candidates, i)
	}
	padded := 0
	for j := range k {
		mat.Col(col, j, a)
		if nrm := orth(j); nrm > RankTol*scale && scale > 0 {
			set(j, nrm)
			continue
		}
		placed := false
		for _, i := range candidates {
			if i < 0 || i >= d {
				continue
			}
			clear(col)
			col[i] = 1
			if nrm := orth(j); nrm > 0.5 {
				set(j, nrm)
				placed = true
				break
			}
		}
		if !placed {
			// Unreachable: k ≤ d unit vectors always complete a basis.
			panic("linalg.Orthonormalize: could not complete the basis")
		}
		padded++
	}
	return q, padded
}

// FixSigns flips each column of x so that its entry of largest magnitude
// (the first one on ties) is positive. Eigen- and singular vectors are
// defined up to sign; a fixed convention makes outputs comparable across
// runs and methods.
func FixSigns(x *mat.Dense) {
	g := x.RawMatrix()
	for j := 0; j < g.Cols; j++ {
		best, bi := 0.0, 0
		for i := 0; i < g.Rows; i++ {
			if v := math.Abs(g.Data[i*g.Stride+j]); v > best {
				best, bi = v, i
			}
		}
		if g.Data[bi*g.Stride+j] < 0 {
			blas64.Scal(-1, blas64.Vector{N: g.Rows, Inc: g.Stride, Data: g.Data[j:]})
		}
	}
}

// TopEigen returns the eigenvectors of the symmetric matrix s for its k
// largest eigenvalues as the columns of an n×k matrix, largest first, each
// signed by FixSigns, and those eigenvalues (decreasing). It fails for k
// outside 1..n, and with ErrNoConvergence (wrapped) if the decomposition
// does not converge.
func TopEigen(s mat.Symmetric, k int) (*mat.Dense, []float64, error) {
	n := s.SymmetricDim()
	if k < 1 || k > n {
		return nil, nil, fmt.Errorf("%d eigenvectors requested from a %d×%d matrix", k, n, n)
	}
	var eig mat.EigenSym
	if !eig.Factorize(s, true) {
		return nil, nil, fmt.Errorf("symmetric eigendecomposition: %w", ErrNoConvergence)
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	vals := eig.Values(nil) // ascending
	out := mat.NewDense(n, k, nil)
	top := make([]float64, k)
	for j := range k {
		src := n - 1 - j
		for i := range n {
			out.Set(i, j, vecs.At(i, src))
		}
		top[j] = vals[src]
	}
	FixSigns(out)
	return out, top, nil
}
