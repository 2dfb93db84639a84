package tabular

import (
	"errors"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Gaussian thresholding for DP partition selection (Desfontaines, Voss,
// Gipson and Mandayam, "Differentially private partition selection",
// PoPETs 2022, §4; the Gaussian thresholding of Google's
// partition-selection library): a candidate partition whose count is n
// (rows, or users on user-level data) is released when n + Z ≥ τ, Z a
// discrete Gaussian. One unit adds at most 1 to the counts of at most Δ₀
// partitions (Δ∞ = 1, Δ₀ = max_groups, or twice that under replace-one).
//
// Counts are compared in units of 1/U of a row, so that the noise is
// exact (a discrete Gaussian on the integers of an integer scale) and
// its scale within 1/U of a row of the ideal.

// GaussianSelection is a planned Gaussian thresholding: a candidate with
// count n is released when U·n + Z ≥ Threshold, Z discrete Gaussian on
// the integers with P(z) ∝ exp(−z²/(2·Scale²)).
type GaussianSelection struct {
	Eps, Delta float64 // the selection's (ε, δ)
	Touched    int     // Δ₀
	Units      uint64  // U
	Scale      uint64  // σ in units of 1/U
	Threshold  int64   // τ in units of 1/U
	// NoiseDelta and TailDelta are the two parts of Delta: the Gaussian
	// noise on the partitions present in both neighbours is
	// (Eps, NoiseDelta)-DP, and a partition present in one neighbour only
	// is released with probability at most TailDelta/Touched.
	NoiseDelta, TailDelta float64
}

// ErrSelectionCalibrate: the selection's noise or threshold would not fit
// the sampler's integer scales for this (ε, δ).
var ErrSelectionCalibrate = errors.New("partition selection cannot be calibrated at this eps and delta (the noise or the threshold is beyond any count); raise eps or delta")

// PlanGaussianSelection calibrates the Gaussian thresholding to (ε, δ)
// for Δ₀ = touched partitions per change, in units of 1/units of a row.
// δ is split in halves, as Google's library does: δ_g = δ/2 for the noise
// and δ_t = δ/2 for the threshold.
//
// Noise: the counts of the partitions present in both neighbours move by
// at most U units in at most Δ₀ coordinates. The discrete Gaussian of
// integer scale S shifted by an integer v is ((v + 1 + 10⁻⁷)/S)-GDP
// (docs/accounting.md, "The discrete Gaussian"; the proof is in
// mechanisms/noise/doc.go), and Gaussian DP composes as μ² = Σμ_i² over
// the independent coordinates: with S = ⌈√Δ₀·(U + 2)/μ*⌉ and
// μ* = accounting.MuForTarget(ε, δ_g), the exact GDP curve through the
// target, the noisy counts are μ*-GDP, hence (ε, δ_g)-DP, and so is the
// released subset of those partitions (a post-processing).
//
// Threshold: a partition present in one neighbour only holds count 1 (U
// units) there and is released with probability P(Z ≥ τ − U). For an
// integer m ≥ 1 the discrete Gaussian tail is at most the continuous
// one at m − 1: Σ_{z≥m} e^(−z²/2σ²) ≤ ∫_{m−1}^∞ e^(−x²/2σ²)dx (each term
// is below the integral over [z−1, z]) and the normaliser
// Σ_z e^(−z²/2σ²) ≥ σ√(2π) (Poisson summation). So τ = U + 1 + ⌈σ_u·x⌉
// with Φ̄(x) ≤ δ_t/Δ₀ bounds that probability by δ_t/Δ₀, and by δ_t
// over the at most Δ₀ such partitions.
//
// Together: the released set is the product of two independent parts,
// the partitions in both neighbours ((ε, δ_g)-DP) and those in one only
// (whose output distributions are ∅ with probability ≥ 1 − δ_t on each
// side, and otherwise on disjoint supports: total variation ≤ δ_t, that
// is (0, δ_t)-DP both ways), so (ε, δ_g + δ_t) = (ε, δ)-DP by basic
// composition, under add-remove and replace-one alike.
func PlanGaussianSelection(eps, delta float64, touched int, units uint64) (*GaussianSelection, error) {
	if !(eps > 0) || eps > accounting.MaxEps {
		return nil, ErrEps
	}
	if !(delta > 0 && delta < 1) {
		return nil, ErrDelta
	}
	if touched < 1 || units < 1 {
		return nil, errors.New("partition selection needs Δ₀ ≥ 1 and a resolution ≥ 1")
	}
	g := &GaussianSelection{Eps: eps, Delta: delta, Touched: touched, Units: units}
	g.NoiseDelta, g.TailDelta = delta/2, delta/2
	mu := accounting.MuForTarget(eps, g.NoiseDelta)
	if !(mu > 0) || math.IsInf(mu, 0) {
		return nil, ErrSelectionCalibrate
	}
	// Rounded up twice: the relative 1e-12 covers the float64 errors of
	// the square root and the division, the ceiling keeps it an integer.
	s := math.Ceil(math.Sqrt(float64(touched)) * (float64(units) + 2) / mu * (1 + 1e-12))
	if !(s >= 1) || s > 1<<50 {
		return nil, ErrSelectionCalibrate
	}
	g.Scale = uint64(s)
	x := NormalTailQuantile(g.TailDelta / float64(touched))
	tau := float64(units) + 1 + math.Ceil(s*x)
	if !(tau >= 1) || tau > 1<<62 {
		return nil, ErrSelectionCalibrate
	}
	g.Threshold = int64(tau)
	return g, nil
}

// NormalTailQuantile is the least float64 x ≥ 0 with Φ̄(x) =
// P(N(0, 1) ≥ x) ≤ p as math.Erfc computes it, lifted by a relative
// 1e-9 (far above Erfc's error of a few ulps, so that the exact tail is
// below p too), for p in (0, 1/2]. A bisection on Erfc itself: Erfcinv
// loses the relative precision of p below about 1e-12 (it inverts 1 − p).
func NormalTailQuantile(p float64) float64 {
	tail := func(x float64) float64 { return math.Erfc(x/math.Sqrt2) / 2 }
	lo, hi := 0.0, 40.0 // Φ̄(40) < 1e-300
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if tail(mid) <= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi * (1 + 1e-9)
}

// ScaleRows and ThresholdRows are the noise's σ and the threshold in rows.
func (g *GaussianSelection) ScaleRows() float64 { return float64(g.Scale) / float64(g.Units) }

// ThresholdRows is the threshold τ in rows (or users): a candidate of
// that count is released about half the time.
func (g *GaussianSelection) ThresholdRows() float64 { return float64(g.Threshold) / float64(g.Units) }

// LaplaceSelectionThreshold is the threshold in rows of the Laplace
// thresholding at (ε, δ) with Δ₀ = touched (dsl/release's planSelection,
// before its rounding to units): 1 + (Δ₀/ε)·ln(Δ₀/δ). A candidate of that
// count is released about half the time.
func LaplaceSelectionThreshold(eps, delta float64, touched int) float64 {
	d0 := float64(touched)
	return 1 + d0/eps*math.Log(d0/delta)
}
