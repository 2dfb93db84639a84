// Package dppca implements DP-PCA of Liu, Kong, Jain and Oh, "DP-PCA:
// Statistically Optimal and Differentially Private PCA" (NeurIPS 2022,
// seed 002), and its building blocks, as compiled mechanisms:
//
//   - StableHistogram and StableMode: the stability-based histogram of
//     Lemma B.1 (sparse: only occupied bins exist, get noise and can be
//     released; ties go to the smallest bin id).
//   - TopEigenvalue: private top-eigenvalue estimation (Algorithm 4).
//   - Mean: private mean estimation (Algorithm 5).
//   - Oja: Oja's algorithm (Algorithm 1, non-private reference) and its
//     minibatch form.
//   - PrivateOja: minibatch private Oja (Eq. 7), the DP-SGD baseline.
//   - OjaShuffle (PlanOjaShuffle): private Oja with shuffling (Algorithm
//     2), one step per record in a secret random order, private through
//     amplification by shuffling; ShuffledEps and CalibrateShuffle are the
//     bound and its planning inverse. Unlike the other methods, its order
//     is secret (drawn from the noise sampler), not public randomness.
//   - Run (PlanDPPCA, Plan.Run): DP-PCA (Algorithm 3).
//
// A Plan runs on a matrix (Plan.Run) or on any rows.Source
// (Plan.RunSource), with the same result for the same rows: the shuffle
// reads rows by position (rows.RandomAccess), and a source without it is
// collected into memory first.
//
// The specification, with the paper's typos resolved and the practical
// constants, is shared/specs/dppca.md; comments cite its sections (§).
//
// # Privacy model
//
// Neighbouring data sets have the same number of rows n and differ in one
// row (replace-one, accounting.ReplaceOne); n is public under this relation
// (spec §1). Every algorithm partitions the rows by position after a
// data-independent shuffle (batches, halves, pairs, groups), which is what
// makes parallel composition across the single pass valid; under add/remove
// one insertion would shift every later index, so add/remove is refused.
//
// Data rules (public, identical for every function): a row holding a NaN or
// an infinity is replaced by the zero vector; a gradient A_i·w = x_i(x_iᵀw)
// that overflows is replaced by zero. No function reports how many rows were
// replaced. DP-PCA needs no clipping: its sensitivities come from
// truncation at privately estimated ranges (Algorithm 5); private Oja clips
// each gradient to the public norm bound Beta.
//
// Centring (spec §0): PCA needs A_i = (x_i − E x)(x_i − E x)ᵀ. If the rows
// are known to have mean zero (Options.Centred) or a public mean is given
// (Options.Mean), that is used; otherwise the records are the pair
// differences x̃_i = (x_{2i} − x_{2i−1})/√2, which have mean zero and
// covariance Σ and halve the number of records. Each row enters exactly one
// pair, so the transform is 1-stable. A non-private mean of the same data
// is never used.
//
// # Budget and calibration
//
// A Plan (PlanDPPCA, PlanPrivateOja) is data-free: it validates the
// options, computes every noise scale that does not depend on the data, and
// returns the exact accounting.Event the run costs, so a caller can charge
// a ledger first. With Options.PublicN (a row count declared by the data
// owner or released by a DP count, never the private n) it also checks
// feasibility: if n is too small for the requested (ε, δ, d, T) the plan
// fails, naming the n that would be needed, before any budget is charged.
// Without it, a run never fails on n: data with fewer rows than the
// minibatches need (Plan.MinRows) are padded with zero records, which
// keeps the run private (see Plan.MinRows) and its output's shape fixed.
//
// Every analyst parameter has documented bounds (MaxSteps, MinEps, MaxEps,
// MinDelta, MinTailK, MinLambda, MaxLambda, MinZeta, MaxGroups, MinBeta,
// MaxBeta), checked by the plan before anything is charged; the plan also
// checks Algorithm 5's noise std for every eigenvalue estimate the run can
// use (Λ̂ is clamped to [LambdaMin, MaxLambda]) and every minibatch size,
// so a run never fails or panics after its charge (project issue 10).
//
// Each DP-PCA step runs Algorithm 4 on the first half of its minibatch and
// Algorithm 5 on the second; the halves are disjoint under the
// data-independent assignment, so each spends the whole (ε, δ) of the step
// (parallel composition, beyond the paper; Options.PaperSplit gives each
// (ε/2, δ/2) as the paper does).
//
// CalibPaper (default) follows the paper: DP-PCA needs ε < 0.9 (Theorem 5.1,
// Lemma B.4), Eq. 7 needs ε < 1 (Lemma 2.4), the classical Gaussian
// mechanism and advanced composition. CalibAnalytic, marked "beyond the
// paper" in every note, keeps the same budget split but composes the d
// coordinate histograms of Algorithm 5 in approximate zCDP and calibrates
// Gaussian noise exactly with Gaussian DP (the analytic Gaussian mechanism);
// it is valid for every ε. Both cost accounting.Approx(ε, δ), except private
// Oja under CalibAnalytic, which costs accounting.GdpFor(ε, δ).
//
// # Floating point
//
// The noise is exact (mechanisms/noise, which also charges the rounding of
// a release onto its lattice), each record's own rounding (a clip factor,
// √d) is absorbed by a relative slack of 1e-9, and the rounding of the two
// noised float64 sums over records is bounded and charged (Casacuberta et
// al., arXiv 2207.10635: with a running sum, the computed sums of
// neighbours can differ by far more than Δ). Eq. 7's clipped gradient sum
// and Algorithm 5's truncated mean are accumulated in fixed blocks of 256
// records combined pairwise (rowpass.Pairwise), so every term passes
// through at most h roundings, h public (278 for both), and the noise is
// calibrated to Δ + 2·γ_h·Σ‖term‖ (Plan.RoundingExcess): 2·γ_h·⌊MaxRows/T⌋·Beta
// for Eq. 7, 2·γ_h·r√d on Algorithm 5's mean, whose terms are truncated in
// coordinates centred at the DP centres. MaxRows = 2^30 is public: the
// data registry refuses larger files and a run on more rows fails. At the
// bench shapes (d = 10, n = 1e6, T = 10) the charge raises private Oja's
// noise by 3.3e-6 and Algorithm 5's by 1.5e-9 (relative). The histograms
// of Algorithms 4 and 5 need no charge: each count is of a value computed
// from one group's or one record's data alone, so a neighbour moves at
// most one unit of count, rounding or not (see rounding.go).
//
// Noise comes from mechanisms/noise (a nil Options.Noise uses its
// cryptographic sampler); seeded samplers are for tests and benchmarks on
// public synthetic data. Results hold only DP outputs and public parameters.
package dppca
