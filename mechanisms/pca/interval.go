package pca

// Error bars of Analyze Gauss (issue 28, item 1): the released matrix is
// Ĉ = C + E with E symmetric, its entries independent discrete Gaussians
// of std σ on the diagonal and σ/√2 off it (frobeniusGaussian: std σ on
// v(C) = (C_ii, √2·C_ij)). Two facts give intervals that hold at a level
// for every eigenvalue at once and for the trace:
//
//   - Weyl's inequality: |λ_j(Ĉ) − λ_j(C)| ≤ ‖E‖₂ for every j.
//   - The matrix Gaussian series bound (Tropp, "An Introduction to Matrix
//     Concentration Inequalities", 2015, Theorem 4.1.1): for E = Σ γ_k A_k
//     with fixed symmetric d×d matrices A_k and independent standard
//     coefficients γ_k, P(‖E‖₂ ≥ t) ≤ 2d·exp(−t²/(2v)), v = ‖Σ A_k²‖₂.
//     Here A_ii = σ·e_ie_iᵀ and A_ij = (σ/√2)(e_ie_jᵀ + e_je_iᵀ), so
//     Σ A_k² = σ²(1 + (d − 1)/2)·I and v = σ²(d + 1)/2. The proof uses the
//     coefficients only through E[exp(θγ)] ≤ exp(θ²/2), which the discrete
//     Gaussian satisfies too (Canonne, Kamath and Steinke 2020: it is
//     σ²-subgaussian), so the bound holds for the samplers' noise.
//
// So with probability ≥ level every eigenvalue lies within
// h = σ·√((d + 1)·ln(2d/(1 − level))) of the released one; the trace's
// noise Σ E_ii is σ²d-subgaussian, so it lies within
// σ·√(2d·ln(2/(1 − level))). Both are conservative (the bound on ‖E‖ is
// about 1.9 times its typical size at d = 30, 95 %); both are functions of
// the plan's public σ and d: post-processing.

import "math"

// SpectralHalfWidth is the level half-width that holds for every
// eigenvalue of a d×d Analyze Gauss release of per-coordinate std std at
// once; NaN for a level outside (0, 1) or d < 1.
func SpectralHalfWidth(d int, std, level float64) float64 {
	if d < 1 || !(level > 0 && level < 1) || !(std >= 0) {
		return math.NaN()
	}
	return std * math.Sqrt(float64(d+1)*math.Log(2*float64(d)/(1-level)))
}

// TraceHalfWidth is the level half-width of the trace of a d×d Analyze
// Gauss release of per-coordinate std std; NaN outside the domain.
func TraceHalfWidth(d int, std, level float64) float64 {
	if d < 1 || !(level > 0 && level < 1) || !(std >= 0) {
		return math.NaN()
	}
	return std * math.Sqrt(2*float64(d)*math.Log(2/(1-level)))
}
