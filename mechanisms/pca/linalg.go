package pca

import (
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
)

// orthonormalize overwrites y with the thin Q factor of its Householder QR
// factorization with a non-negative R diagonal and returns that diagonal
// (linalg.OrthonormalizeInPlace). The sign convention makes Q a function
// of span and orientation only, which the incoherence analysis of the
// noisy power method relies on (orthogonal equivariance, spec §2).
func orthonormalize(y *mat.Dense) []float64 {
	return linalg.OrthonormalizeInPlace(y)
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
// positive (linalg.FixSigns).
func fixSigns(x *mat.Dense) { linalg.FixSigns(x) }
