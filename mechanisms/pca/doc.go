// Package pca implements differentially private principal component
// analysis by power methods, and the Analyze Gauss baseline.
//
// Methods (one file each):
//
//   - "npm" (npm.go): the private noisy power method of Hardt and Price
//     (2014), spectral Gaussian variant, for the top-k subspace of C = MᵀM.
//     Each of L iterations releases C·X + G with Gaussian G and
//     orthonormalizes; it releases the d×k basis.
//   - "adaptive" (adaptive.go): the adaptive power method of Nguyen, Ene and
//     Nguyen (2026), k = 1. Each iteration picks, with the sparse-vector
//     technique, a threshold θ so that few rows have score ‖a‖·|⟨a,x⟩| > θ,
//     drops those rows, and releases the filtered product plus noise scaled
//     to θ rather than to the worst-case row. It releases a unit vector and
//     the chosen thresholds.
//   - "gauss" (gauss.go): Analyze Gauss (Dwork, Talwar, Thakurta, Zhang
//     2014): one symmetric Gaussian perturbation of C, then its top-k
//     eigenvectors.
//
// Data rules (public, identical for every method): each row a is scaled by
// min(1/Clip, 1/‖a‖), so it enters with norm at most 1 (rows longer than
// Clip are shortened to Clip, then all rows are divided by Clip); a row
// holding a NaN or an infinity is replaced by the zero vector and so
// contributes nothing. No method reports how many rows were clipped or
// dropped: such counts are not differentially private. The estimand is the
// PCA of the clipped data.
//
// Privacy: every method has a data-free planning step (PlanNoisyPower,
// PlanAdaptive, PlanAnalyzeGauss, or PlanMethod by name) that validates the options
// and returns the exact accounting.Event the run will cost, so a caller can
// charge a ledger before any data is read. The run functions repeat the same
// validation. Calibration CalibZCDP (default) spends exactly the zCDP ρ whose
// tight conversion is the target (ε, δ); CalibPaper reproduces the papers'
// noise formulas and costs (ε, δ) as an approximate-DP event. Results hold
// only differentially private outputs and public parameters.
//
// Floating point: the noise is exact (mechanisms/noise), and each row's
// rounding is absorbed by a relative slack of 1e-9 on the sensitivity, but
// the float64 sums over rows are not exact: the computed sums of
// neighbouring data sets can differ by the sensitivity plus up to about
// 2n²·2^-53 (Casacuberta et al., arXiv 2207.10635): a relative excess of
// 2.2e-8 at n = 10^4 and 2.4e-4 at n = 2^20 that the accounting does not
// charge.
//
// Noise comes from mechanisms/noise; a nil Options.Noise uses its
// cryptographic sampler. A seeded sampler gives reproducible runs for tests
// and benchmarks on public synthetic data.
//
// The specification, with the papers' typos resolved, is
// shared/specs/power_methods.md (npm, adaptive) and dppca.md §8 (gauss).
package pca
