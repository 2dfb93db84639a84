package pca

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// PrincipalCosines returns the cosines of the principal angles between the
// column spans of u (d×k) and x (d×p), k ≤ p, in decreasing order (so the
// last one is cos θ_k, the cosine of the largest angle). Columns need not be
// orthonormal but must be linearly independent; both are orthonormalized
// first. The cosines are the singular values of UᵀX for orthonormal bases.
func PrincipalCosines(u, x mat.Matrix) ([]float64, error) {
	du, k := u.Dims()
	dx, p := x.Dims()
	if du != dx {
		return nil, fmt.Errorf("pca: principal angles need the same dimension, got %d and %d rows", du, dx)
	}
	if k > p {
		return nil, fmt.Errorf("pca: principal angles need k ≤ p, got k=%d columns in u and p=%d in x", k, p)
	}
	if k > du {
		return nil, fmt.Errorf("pca: u has %d columns but only %d rows", k, du)
	}
	qu, qx := cloneDense(u), cloneDense(x)
	orthonormalize(qu)
	orthonormalize(qx)
	var m mat.Dense
	m.Mul(qu.T(), qx)
	var svd mat.SVD
	if !svd.Factorize(&m, mat.SVDNone) {
		return nil, fmt.Errorf("pca: SVD of UᵀX did not converge")
	}
	c := svd.Values(nil)[:k]
	for i := range c {
		c[i] = math.Min(c[i], 1)
	}
	return c, nil
}

// SinThetaSq returns ‖sin Θ(U, X)‖²_F = Σ_i sin²θ_i over the k principal
// angles between span(u) (d×k) and span(x) (d×p, p ≥ k). For k = 1 it is
// sin² of the angle between the vectors, 1 − ⟨u,x⟩² for unit vectors. It is
// the error metric of the privnotes benchmarks; it panics on mismatched
// shapes, which is a programming error.
func SinThetaSq(u, x mat.Matrix) float64 {
	c, err := PrincipalCosines(u, x)
	if err != nil {
		panic(err)
	}
	s := 0.0
	for _, ci := range c {
		s += 1 - ci*ci
	}
	return math.Max(s, 0)
}

// TanTheta returns tan θ_k(U, X), the tangent of the largest principal
// angle, as used in the convergence analysis of the noisy power method
// (Hardt–Price 2014, Def. 2.1). It is +Inf when the spans are orthogonal.
func TanTheta(u, x mat.Matrix) (float64, error) {
	c, err := PrincipalCosines(u, x)
	if err != nil {
		return 0, err
	}
	ck := c[len(c)-1]
	if ck == 0 {
		return math.Inf(1), nil
	}
	return math.Sqrt(math.Max(1-ck*ck, 0)) / ck, nil
}
