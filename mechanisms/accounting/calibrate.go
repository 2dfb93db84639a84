package accounting

// Calibrating Gaussian releases to a target (ε, δ) under the dataset's
// accountant: one helper for every mechanism whose releases are Gaussians
// on the project's samplers (the tabular calls and the PCA methods), so
// that they cannot drift apart. Proofs: docs/accounting.md §3
// ("Calibration").

import "math"

// MuRoundDown keeps the ρ-equivalent of μ* (μ*²/2, through which the plans
// split and scale their noise) below μ*²/2 after rounding: every
// σ_i = Δ/√(2ρ_i) with Σρ_i ≤ ρ is then at least the σ of a μ*-GDP
// composition, whatever the half-ulp errors of the divisions and square
// roots along the way (relative 1e-16 each, far below the 1e-12 margin).
const MuRoundDown = 1 - 1e-12

// GaussianTarget returns, for Gaussian releases calibrated to (ε, δ), the
// zCDP-equivalent ρ the releases share (a release of ℓ2 sensitivity Δ given
// ρ_i gets σ = Δ/√(2ρ_i), which is √(2ρ_i)-GDP and ρ_i-zCDP; releases
// split ρ with Σρ_i ≤ ρ) and the event charged for them. ok is false when
// (ε, δ) cannot be calibrated.
//
// gdp false (every accountant but gdp): ρ = RhoForTarget(ε, δ) and the
// event is the Gaussian-marked ρ-zCDP event with the target.
//
// gdp true (the gdp accountant, which composes μ² exactly): ρ = μ*²/2
// (rounded down, MuRoundDown) with μ* = MuForTarget(ε, δ), the exact GDP
// μ whose (ε, δ(ε)) curve meets the target, and the event is GdpFor(ε, δ):
// the releases together are √(2ρ)-GDP ≤ μ*-GDP (Gaussian DP composes as
// Σμ_i²). About 7 % less noise than ρ* at ε = 1, δ = 1e-6.
func GaussianTarget(eps, delta float64, gdp bool) (rho float64, ev Event, ok bool) {
	if gdp {
		mu := MuForTarget(eps, delta)
		rho = mu * mu / 2 * MuRoundDown
		ev = GdpFor(eps, delta)
	} else {
		rho = RhoForTarget(eps, delta)
		ev = GaussianZcdp(rho).WithTarget(eps, delta)
	}
	return rho, ev, rho > 0 && !math.IsInf(rho, 0)
}
