// Package noise draws the noise of every privnotes mechanism: discrete
// Gaussian and discrete Laplace noise on a power-of-two lattice, sampled
// exactly with integer arithmetic from crypto/rand.
//
// # Why not math.Exp and NormFloat64
//
// Textbook floating-point samplers leak: the set of doubles x + noise can
// produce depends on x, so single outputs can reveal the input (Mironov,
// CCS 2012), and precision-based attacks break most mitigations (Haney et
// al., arXiv 2207.13793). This package instead follows Canonne, Kamath and
// Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020,
// arXiv 2004.00010), the construction OpenDP uses for floats.
//
// # Construction
//
// For a noise scale s (sigma for Gaussian, b for Laplace) the lattice step is
// the power of two
//
//	step = 2^(floor(log2 s) - 40),  so  s/step ∈ [2^40, 2^41).
//
// The step depends only on the public scale. A release of m query values
// x ∈ R^m is
//
//  1. round: x̄_i = step · RoundToEven(x_i/step), computed exactly (a
//     power-of-two scaling and an integer rounding);
//  2. noise: Z_i independent, either the discrete Gaussian on Z with
//     P(z) ∝ exp(-z²/(2S²)) or the discrete Laplace with P(z) ∝ exp(-|z|/S),
//     where S = ceil(s/step) ∈ [2^40, 2^41] is the scale in steps, rounded up;
//  3. output: y_i = fl(x̄_i + Z_i·step), the float64 nearest the exact
//     lattice value (ties to even), clamped to ±MaxFloat64.
//
// # Soundness
//
// Rounding moves each coordinate by at most step/2, so for neighbouring
// inputs x, x' the rounded vectors satisfy
//
//	‖x̄ - x̄'‖₂ <= ‖x - x'‖₂ + step·√m <= Δ₂ + GaussianSlack(s, m),
//	‖x̄ - x̄'‖₁ <= ‖x - x'‖₁ + step·m  = Δ₁ + LaplaceSlack(s, m).
//
// In lattice units the shift v = (x̄ - x̄')/step is an integer vector. For
// integer shifts CKS20 show that the discrete Gaussian of parameter S has
// D_α(N_Z(0,S²) ‖ N_Z(v_i,S²)) <= α v_i²/(2S²); Rényi divergences of
// independent coordinates add, so the m-dimensional release has
// D_α <= α‖v‖²/(2S²), which is
// ρ-zCDP with ρ = (Δ₂+slack)²/(2 (S·step)²) <= (Δ₂+slack)²/(2s²): exactly the
// guarantee of the continuous Gaussian mechanism with sensitivity
// Δ₂ + slack, and the rounding up of S only lowers ρ. For the discrete
// Laplace, P(z)/P(z+v) <= exp(|v|/S) per coordinate, so the release is
// ε-DP with ε = (Δ₁+slack)/(S·step) <= (Δ₁+slack)/s. Step 3 is a fixed
// function of the exact lattice value x̄ + Z·step, hence post-processing.
//
// # Gaussian DP
//
// The discrete Gaussian is not exactly μ-GDP at μ = ‖v‖/S (Dong, Roth and
// Su's Gaussian DP; the accountant's gdp mode needs it). For one coordinate
// with integer shift v ≥ 1, write Y ~ N_Z(0, S²), p_k = P[Y ≥ k] and
// g(k) = −Φ⁻¹(p_k). The privacy loss is monotone in Y, so the trade-off
// curve of (Y, Y+v) is piecewise linear with vertices at the tests
// "reject when Y ≥ k": (P[Y ≥ k], P[Y+v < k]) = (p_k, 1 − p_{k−v}); G_μ is
// convex, so the pair is μ-GDP iff every vertex lies on or above G_μ, that
// is Φ(g(k−v)) ≥ Φ(g(k) − μ), i.e. μ ≥ g(k) − g(k−v) for every integer k (exactly the CKS20 Thm 7 privacy
// profile, in trade-off form). Comparing the sum of the decreasing function
// e^{−z²/2S²} over z ≥ k ≥ 1 with its integrals over [k, ∞) and [k−1, ∞),
// and using the symmetry p_k = 1 − p_{1−k}, gives
// (k−1)/S − η ≤ g(k) ≤ k/S + η for all k, where η ≤ 1.3·τ accounts for the
// normaliser Σ_z e^{−z²/2S²} = S√(2π)(1+τ), 0 ≤ τ ≤ 3e^{−2π²S²} (Poisson
// summation). Hence the pair is μ-GDP with μ = (v + 1 + 2ηS)/S ≤
// (v + 1 + 10⁻⁷)/S for every S ≥ 1 (the samplers use S ≥ 2^40). Independent
// coordinates compose as GDP: μ² = Σ(|v_i| + c)²/S² ≤ (‖v‖ + c√m)²/S²
// (c = 1 + 10⁻⁷). With the rounding (‖v‖ ≤ Δ₂/step + √m) a release is
// μ-GDP for μ = (Δ₂ + (2 + 10⁻⁷)·step·√m)/s, below (Δ₂ + GaussianSlack)/s
// since GaussianSlack charges 3·step·√m. TestDiscreteGaussianGDP checks the
// bound against the exact profile evaluated with math/big.
//
// GaussianScale and LaplaceScale solve s >= z·(Δ₂ + slack(s)) and
// s >= (Δ₁ + slack(s))/ε for the least s (rounded up), so mechanisms that
// use them get the accounting of the continuous mechanism at sensitivity
// Δ; the price is noise larger by a relative z·√m·2^-40 at most (z the
// noise multiplier; 1/ε for Laplace, with m in place of √m).
//
// # Why 40 bits
//
// The slack is at most 2^-40·√m of the scale (2e-10 for a 200×200
// matrix), so calibration is unchanged in any printed digit. Every
// noise magnitude below 2^11·s is an integer below 2^52 times the step, so
// Z·step is an exact float64 and the output needs one IEEE addition, which
// rounds the exact sum; larger magnitudes (probability below e^-2047 for
// the Laplace, below e^-(2^21) for the Gaussian) take an exact math/big
// path computing the same function.
// Scales are accepted in [MinScale, MaxScale] = [2^-900, 2^900], where the
// step is a normal float64; outputs are never NaN or ±Inf and every output
// is an integer multiple of the step (a float64 whose ulp exceeds the step
// is a multiple of it).
//
// # Failing before the charge
//
// The samplers and GaussianScale/LaplaceScale panic on invalid input: a
// mechanism that reaches them with a bad scale after charging its release
// has a bug, and a panic there is a failure whose occurrence may depend on
// the data. Plans therefore calibrate with GaussianScaleChecked and
// LaplaceScaleChecked (or test a scale with CheckScale), which return
// errors with fixed texts (ErrSensitivity, ErrMultiplier, ErrCount,
// ErrCoarse, ErrScaleRange) instead, before anything is charged; a scale
// they return is accepted by every sampler.
//
// # What "exact" means
//
// Given ideal random bits, the integer samplers return the discrete
// Gaussian and discrete Laplace distributions exactly: every random
// decision is U < num/den for a uniform U, read lazily from random bits,
// and integers num <= den < 2^55, decided by comparing 4-bit blocks of U
// with the binary expansion of num/den (CKS20 Algorithms 1–3, with
// Bernoulli(exp(-γ)) built from Bernoulli(γ/k)). No floating-point value
// enters an accept/reject decision. Loops end with probability one; no
// count is capped, so no tail is truncated. The samplers are not constant
// time: their running time depends on the noise drawn (not on the data),
// which leaks about the noise through timing (Jin et al., arXiv
// 2112.05307); host side channels are outside the threat model.
//
// # Randomness
//
// New (and the zero Sampler) reads crypto/rand in 16 KiB blocks; each
// concurrent caller gets its own block, and every byte is used once.
// NewSeeded draws from a ChaCha8 stream keyed by the seed, for tests and
// benchmarks only: it is not exposed to notebook cells (the interpreter's
// symbol tables never include this package). StdNormal, FillStdNormal and
// Uniform are public randomness (random starting vectors), continuous and
// not privacy primitives: never add them to private values.
package noise
