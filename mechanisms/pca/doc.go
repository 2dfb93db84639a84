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
// Power-method variants outside Methods (they take other inputs):
//
//   - PPMEntry (ppm_entry.go): Hardt–Price Figure 3 on a symmetric matrix
//     whose ENTRIES are the private units (entry-level DP, noise ∝ ‖X‖_∞);
//     not for row-level DP of a data matrix. LowRank (lra.go): its rank-2k
//     approximation B = X_L·Y_{L+1}ᵀ (Cor. 4.3). StreamingPower (spm.go):
//     the streaming power method of Figure 2, NOT private (a baseline).
//
// Data rules (public, identical for every method): each row a is scaled by
// min(1/Clip, 1/‖a‖), so it enters with norm at most 1 (rows longer than
// Clip are shortened to Clip, then all rows are divided by Clip); a row
// holding a NaN or an infinity is replaced by the zero vector and so
// contributes nothing. No method reports how many rows were clipped or
// dropped: such counts are not differentially private. The estimand is the
// PCA of the clipped data.
//
// Data: a run reads its rows as a stream, a rows.Source (Plan.RunSource;
// Plan.Run and the method functions wrap a matrix with rows.FromDense),
// one scan per pass over the data, with memory bounded by a chunk of rows
// whatever their number: every row's scale (and the adaptive method's row
// norm) is recomputed from the row in each pass rather than stored. The
// number of rows is private and enters no message; a run on more than
// MaxRows rows fails. Results are bit identical however a source cuts its
// rows into batches.
//
// Failures: every analyst parameter has documented bounds (MaxIters,
// MinEps, MaxEps, MinDelta, MinClip, MaxClip, MaxGaussDim,
// MaxIterateEntries), checked by the plan before anything is charged, and
// every noise scale is calibrated there with the error-returning
// noise.GaussianScaleChecked; inside the bounds a run on any data of 1 to
// MaxRows rows returns a release (project issue 10).
//
// Privacy: every method has a data-free planning step (PlanNoisyPower,
// PlanAdaptive, PlanAnalyzeGauss, or PlanMethod by name) that validates the options
// and returns the exact accounting.Event the run will cost, so a caller can
// charge a ledger before any data is read. The run functions repeat the same
// validation. Calibration CalibZCDP (default) spends exactly the zCDP ρ whose
// tight conversion is the target (ε, δ); CalibGDP (npm, gauss, adaptive, for
// datasets under the gdp accountant) spends exactly the μ*-GDP whose exact
// curve is the target and costs that GDP event; CalibPaper reproduces the
// papers' noise formulas and costs (ε, δ) as an approximate-DP event. Results hold
// only differentially private outputs and public parameters.
//
// Floating point: the noise is exact (mechanisms/noise, which also charges
// the rounding of the release onto its lattice); each row's own rounding
// is absorbed by a relative slack of 1e-9 on the sensitivity; and the
// rounding of the float64 sums over rows (Casacuberta et al., arXiv
// 2207.10635: with a running sum the computed sums of neighbours can differ
// by Δ + ~2n²·2^-53) is bounded and charged. Every sum that is released
// with noise (the Gram matrix, C·X, the adaptive filtered product) is
// accumulated in fixed blocks of 256 rows combined by pairwise summation
// (rowpass.Pairwise: the Gram matrix and C·X through the row kernels of
// mechanisms/internal/linalg, the filtered product in this package, all
// of which scale each row to the unit ball before any product so that no
// finite row can overflow them), so each term passes through at
// most h roundings, h public: h = d + 280 for npm, 280 for gauss, 285 for
// adaptive. Each entry is then within γ_h = h·2^-53/(1 − h·2^-53) of Σ of
// the per-row term majorants, whose ℓ2 norms are at most r (√p for npm, 1 for gauss, θ for
// adaptive); by the triangle inequality the computed releases of two
// neighbours differ by at most Δ + 2·γ_h·MaxRows·r, and the noise is
// calibrated to that (Plan.RoundingExcess). MaxRows = 2^30 is public: the
// data registry refuses larger files, and a run on more rows fails. The
// charge raises the noise by 0.014% for npm at d = 100, p = 5, 0.005% for
// gauss at d = 31 and 0.003% for adaptive at d = 20 (replace-one). The
// iterate X of npm is a computed Q factor whose deviation from
// orthonormality (O(d·p·2^-53)) is absorbed by the 1e-9 slack; it is not
// verified at run time.
//
// Noise comes from mechanisms/noise; a nil Options.Noise uses its
// cryptographic sampler. A seeded sampler gives reproducible runs for tests
// and benchmarks on public synthetic data.
//
// The specification, with the papers' typos resolved, is
// shared/specs/power_methods.md (npm, adaptive) and dppca.md §8 (gauss).
package pca
