package pca

// Error bars of the power methods' eigenvalue estimates (issue 28, item
// 1). npm releases the top k singular values of its last noisy product
// Y = C·X + G (X the d×p orthonormal iterate before the last step, G the
// last step's d×p Gaussian noise); adaptive releases ‖v + g‖, v = C_θ·x
// the filtered product of its last step and g its d Gaussian coordinates.
// Weyl's inequality for singular values (|σ_j(A + G) − σ_j(A)| ≤ ‖G‖₂ for
// every j; for a vector, the triangle inequality) bounds each released
// value's distance to the value the same last step would give without its
// noise, σ_j(C·X) or ‖C_θ·x‖, by the noise's norm. A level bound on that
// norm from public parameters alone is then an interval that holds for
// every released value at once. What it covers is that noise-free value
// of the same iterate, not λ_j(C): the iterate's own error (how far X is
// from the top eigenvectors) depends on the data's eigengap, which is not
// public. One side does reach λ_j: σ_j(C·X) ≤ σ_j(C)·‖X‖₂ = λ_j(C) for an
// orthonormal X (and ‖C_θ·x‖ ≤ λ₁(C_θ) ≤ λ₁(C), as C_θ ≼ C), so the
// interval's lower end is also a lower confidence bound on the true
// eigenvalue.
//
// Two tail bounds on ‖G‖₂, G an r×c matrix of independent coordinates,
// each σ²-subgaussian (the discrete Gaussian of std σ is: Canonne, Kamath
// and Steinke 2020), both exceeded with probability ≤ α = 1 − level; the
// smaller is used (both are fixed numbers, so the smaller is exceeded
// with probability ≤ α too):
//
//   - Frobenius: ‖G‖₂ ≤ ‖G‖_F, and exp(t·γ²) = E_Z exp(√(2t)·γ·Z) for a
//     standard normal Z gives E exp(t·γ²/σ²) ≤ (1 − 2t)^(−1/2), the χ²₁
//     moment generating function. So ‖G‖_F²/σ² obeys every Chernoff bound
//     of χ²_m, m = r·c, among them Laurent and Massart's (2000, Lemma 1):
//     P(χ²_m ≥ m + 2√(m·u) + 2u) ≤ e^(−u). With u = ln(1/α):
//     h_F = σ·√(m + 2√(m·u) + 2u).
//   - Rectangular matrix Gaussian series (Tropp 2015, Corollary 4.2.1 via
//     the Hermitian dilation; the proof uses the coefficients only through
//     E exp(θγ) ≤ exp(θ²σ²/2)): with v = σ²·max(r, c),
//     P(‖G‖₂ ≥ t) ≤ (r + c)·exp(−t²/(2v)), so
//     h_T = σ·√(2·max(r, c)·ln((r + c)/α)).
//
// For a vector (c = 1) h_F is the chi bound, near σ(√r + √(2u)), and
// nearly exact; h_F also wins for narrow d×p iterates, h_T for wide ones
// (TestNoiseNormCoverage measures how conservative each is).

import (
	"math"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// NoiseNormHalfWidth is a level bound on the spectral norm of an r×c
// matrix (a vector when c = 1) of independent σ²-subgaussian coordinates
// of std std: min(h_F, h_T) above. NaN outside the domain.
func NoiseNormHalfWidth(r, c int, std, level float64) float64 {
	if r < 1 || c < 1 || !(level > 0 && level < 1) || !(std >= 0) {
		return math.NaN()
	}
	u := -math.Log1p(-level) // ln(1/α), accurate for level near 0 too
	m := float64(r) * float64(c)
	frob := std * math.Sqrt(m+2*math.Sqrt(m*u)+2*u)
	tropp := std * math.Sqrt(2*float64(max(r, c))*(math.Log(float64(r)+float64(c))+u))
	return math.Min(frob, tropp)
}

// ValueError is the public description of the noise behind the released
// eigenvalue estimates of npm and adaptive (including gap="auto" and the
// centred runs), in units of the scaled rows (norms ≤ 1): multiply Std and
// Excess by clip² for the data's units.
type ValueError struct {
	// Rows×Cols is the shape of the last step's noisy product: d×p
	// (npm), d×1 (adaptive).
	Rows, Cols int
	// Std is the std of each of its Gaussian coordinates; for adaptive
	// the largest any threshold θ̂ of the grid (and, for gap="auto", any
	// run) may give, so the bound holds whichever one the run picked.
	Std float64
	// Excess bounds, in the spectral norm, how far the computed product
	// lies from the exact one (the float64 sums, RoundingExcess) plus the
	// rounding of each coordinate onto the noise lattice (half a step
	// each, √(Rows·Cols)·step/2 in all).
	Excess float64
}

// ValueError returns the noise description of the plan's eigenvalue
// estimates; ok is false for a method that releases none from a last
// noisy step (gauss has its own, SpectralHalfWidth; ppm-entry none).
func (pl *Plan) ValueError() (e ValueError, ok bool) {
	switch pl.Method {
	case MethodNPM:
		e = ValueError{Rows: pl.D, Cols: pl.P, Std: pl.NoiseStd}
		e.Excess = pl.RoundingExcess + latticeExcess(pl.D*pl.P, pl.NoiseStd)
		return e, true
	case MethodAdaptive:
		plans := pl.cands // gap="auto": every run's; otherwise the plan itself
		if len(plans) == 0 {
			plans = []*Plan{pl}
		}
		e = ValueError{Rows: pl.D, Cols: 1}
		for _, c := range plans {
			for _, s := range c.gridStds {
				e.Std = math.Max(e.Std, s)
			}
			// Per unit of θ̂ ≤ 1: the excess at the largest threshold.
			e.Excess = math.Max(e.Excess, c.RoundingExcess)
		}
		e.Excess += latticeExcess(pl.D, e.Std)
		return e, true
	}
	return ValueError{}, false
}

// latticeExcess is the spectral-norm bound √m·step/2 on rounding m
// coordinates onto the lattice of noise std std (the lattice step grows
// with the std, so the largest std's step bounds every smaller one's).
func latticeExcess(m int, std float64) float64 {
	if !(std > 0) {
		return 0
	}
	return math.Sqrt(float64(m)) * noise.LatticeStep(std) / 2
}

// HalfWidth is the level half-width that holds for every released
// eigenvalue estimate at once, in the scaled units: NoiseNormHalfWidth
// plus the excess.
func (e ValueError) HalfWidth(level float64) float64 {
	return NoiseNormHalfWidth(e.Rows, e.Cols, e.Std, level) + e.Excess
}
