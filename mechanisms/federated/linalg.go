package federated

// Linear algebra shared by the federated coordinators (DPS-PCA here, Private
// FedRep in mechanisms/fedrep): thin QR with a positive diagonal and explicit
// rank-deficiency handling, row-sparsity truncation, top-k eigenvectors.

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// rankTol is the relative size of an R diagonal entry below which a column is
// treated as linearly dependent on the previous ones.
const rankTol = 1e-12

// Orthonormalize returns the thin Q factor (d×k) of the Householder QR
// factorisation of a (d×k, k ≤ d), with column signs chosen so that the
// diagonal of R is non-negative (Q is then a function of a alone, not of
// the QR routine's sign convention), and the number of columns it had to
// pad.
//
// Rank deficiency: a column whose R diagonal entry is below 1e-12·‖a‖_F
// (every column when a = 0) carries no direction of a; QR would return an
// arbitrary unit vector there, or NaNs if normalised by hand. Such a column
// is replaced by the first unit vector e_i, i taken from prefer and then
// from 0, 1, …, d−1, that is not in the span of the other columns, made
// orthogonal to them. With prefer = the row support of a, the result keeps
// that support. The result always has k orthonormal columns.
func Orthonormalize(a mat.Matrix, prefer []int) (*mat.Dense, int) {
	d, k := a.Dims()
	if k > d {
		panic(fmt.Sprintf("federated.Orthonormalize: %d×%d matrix has more columns than rows", d, k))
	}
	q := mat.DenseCopyOf(a)
	scale := mat.Norm(q, 2)
	g := q.RawMatrix()
	tau := make([]float64, k)
	work := make([]float64, 1)
	lapack64.Geqrf(g, tau, work, -1)
	work = make([]float64, max(int(work[0]), k))
	lapack64.Geqrf(g, tau, work, len(work))
	rdiag := make([]float64, k)
	for j := range k {
		rdiag[j] = g.Data[j*g.Stride+j]
	}
	lapack64.Orgqr(g, tau, work, -1)
	if int(work[0]) > len(work) {
		work = make([]float64, int(work[0]))
	}
	lapack64.Orgqr(g, tau, work, len(work))

	deficient := false
	for j, r := range rdiag {
		if !(math.Abs(r) > rankTol*scale) {
			deficient = true
			break
		}
		if r < 0 {
			for i := range d {
				g.Data[i*g.Stride+j] = -g.Data[i*g.Stride+j]
			}
		}
	}
	if !deficient {
		return q, 0
	}
	// After a (near-)zero pivot the later Householder columns mix in an
	// arbitrary direction, so redo the factorisation by Gram–Schmidt with
	// reorthogonalisation, padding the dependent columns.
	return gramSchmidtPad(a, prefer, scale)
}

// gramSchmidtPad orthonormalises the columns of a in order (two Gram–Schmidt
// passes each, which is orthogonal to working precision); a column whose
// residual is below rankTol·scale is replaced by the first unit vector from
// prefer, then 0..d−1, that is not in the span of the columns so far.
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
		if nrm := orth(j); nrm > rankTol*scale && scale > 0 {
			set(j, nrm)
			continue
		}
		placed := false
		for _, i := range candidates {
			if i < 0 || i >= d {
				continue
			}
			for t := range col {
				col[t] = 0
			}
			col[i] = 1
			if nrm := orth(j); nrm > 0.5 {
				set(j, nrm)
				placed = true
				break
			}
		}
		if !placed {
			// Unreachable: k ≤ d unit vectors always complete a basis.
			panic("federated.Orthonormalize: could not complete the basis")
		}
		padded++
	}
	return q, padded
}

// TruncateRows keeps the s rows of v with the largest Euclidean norms and
// zeroes the others, in place (ties go to the lower row index). It returns
// the kept row indices in increasing order. s ≥ number of rows keeps all.
func TruncateRows(v *mat.Dense, s int) []int {
	d, _ := v.Dims()
	idx := make([]int, d)
	norms := make([]float64, d)
	for i := range d {
		idx[i] = i
		norms[i] = floats.Norm(v.RawRowView(i), 2)
	}
	if s >= d {
		return idx
	}
	sort.SliceStable(idx, func(a, b int) bool { return norms[idx[a]] > norms[idx[b]] })
	keep := append([]int(nil), idx[:max(s, 0)]...)
	sort.Ints(keep)
	kept := make([]bool, d)
	for _, i := range keep {
		kept[i] = true
	}
	for i := range d {
		if !kept[i] {
			row := v.RawRowView(i)
			for j := range row {
				row[j] = 0
			}
		}
	}
	return keep
}

// TopIndices returns the indices of the s largest entries of x in increasing
// index order (ties go to the lower index).
func TopIndices(x []float64, s int) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] > x[idx[b]] })
	keep := append([]int(nil), idx[:min(max(s, 0), len(x))]...)
	sort.Ints(keep)
	return keep
}

// errEigen signals a failed symmetric eigendecomposition, which happens only
// for non-finite input.
var errEigen = errors.New("symmetric eigendecomposition did not converge")

// TopEigenvectors returns the eigenvectors of the symmetric matrix s for its
// k largest eigenvalues as the columns of an n×k matrix, largest first, each
// column signed so that its largest-magnitude entry is positive.
func TopEigenvectors(s mat.Symmetric, k int) (*mat.Dense, error) {
	n := s.SymmetricDim()
	if k < 1 || k > n {
		return nil, fmt.Errorf("federated: %d eigenvectors requested from a %d×%d matrix", k, n, n)
	}
	var eig mat.EigenSym
	if !eig.Factorize(s, true) {
		return nil, errEigen
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs) // ascending eigenvalues
	out := mat.NewDense(n, k, nil)
	for j := range k {
		src := n - 1 - j
		best, sign := 0.0, 1.0
		for i := range n {
			if v := vecs.At(i, src); math.Abs(v) > best {
				best = math.Abs(v)
				sign = math.Copysign(1, v)
			}
		}
		for i := range n {
			out.Set(i, j, sign*vecs.At(i, src))
		}
	}
	return out, nil
}
