package jlclass

// The exact exponential mechanism of Variant A (seed 004, Algorithm 3 line
// 4, 004:L286; federated.md §3.3 and §3.5 "candidate-pool EM").
//
// Scores are integers: Q_c = Σ_i q_i(c) with q_i(c) ∈ [0, G], G =
// ScoreScale, each q_i a function of user i's records only. Under
// replace-one and under add/remove neighbours one user moves every Q_c by
// at most G, so the mechanism with P[c] ∝ exp(ε′·Q_c/(2G)) is ε′-DP
// (McSherry–Talwar), and ε′ ≤ ε.
//
// Sampling, exactly. ε′ = a/2^s is ε rounded down to a dyadic with at most
// 32 significant bits (emEps); with Δ_c = max_c′ Q_c′ − Q_c ≥ 0 and
// w_c = exp(−ε′Δ_c/(2G)) = exp(−a·Δ_c/2^(s+1)/G) ∈ (0, 1], the loop
//
//	repeat: c ← uniform on {0..K−1} (fair bits, rejection);
//	        accept c with probability w_c
//
// returns c with probability w_c/Σ w exactly: each round accepts c with
// probability w_c/K independently of the past. Acceptance is a product of
// exact Bernoulli draws of the noise package on integers: w_c =
// e^(−1)^I·exp(−r/den) with a·Δ_c = I·den + r, den = 2^(s+1)·G < 2^55
// (noise.Sampler.BernoulliExpNeg is exact for rational arguments). No
// floating-point number enters a probability. A round accepts with
// probability at least 1/K (the maximiser has w = 1), so the expected
// number of rounds is at most K. Limitation: the number of rounds, and so
// the running time, depends on the scores (a timing channel the billboard
// model does not cover); the release does not. A fixed number of rounds
// cannot be exact (bounded fair bits give dyadic probabilities, these are
// irrational) and its fallback would need a δ this pure-ε release does not
// have; padding rounds keeps the per-round cost's dependence on the score
// gaps (docs/threat-model.md, side channels).

import (
	"math"
	"math/bits"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// ScoreScale is G, the integer a user's score ranges over: a user's score
// of a candidate is ⌊G·(records the candidate classifies right)/m₀⌋.
const ScoreScale = 1 << 16

// maxShift bounds s so that den = 2^(s+1)·G stays below 2^55.
const maxShift = 37

// emEps returns ε′ = a/2^s ≤ ε, ε rounded down to at most 32 significant
// bits (fewer when ε < 2^−6, where s = maxShift caps the precision: a
// relative loss below 2^−17 down to ε = 1e-6). eps must be in [1e-6, 1e6].
func emEps(eps float64) (a uint64, s uint) {
	e := math.Ilogb(eps) // 2^e ≤ ε < 2^(e+1)
	sh := 31 - e
	sh = min(max(sh, 0), maxShift)
	a = uint64(math.Floor(math.Ldexp(eps, sh)))
	return a, uint(sh)
}

// EffectiveEps returns the ε′ ≤ ε the sampler runs at for a requested ε
// (exact: a/2^s is a float64).
func EffectiveEps(eps float64) float64 {
	a, s := emEps(eps)
	return math.Ldexp(float64(a), -int(s))
}

// sampleEM draws an index c ∈ [0, len(q)) with probability proportional to
// exp(ε′·q[c]/(2·ScoreScale)), ε′ = EffectiveEps(eps) times epsScale (1
// outside tests), exactly. The totals must be non-negative; len(q) ≥ 1.
func sampleEM(q []int64, eps float64, epsScale uint64, src *noise.Sampler) int {
	a, s := emEps(eps)
	a *= epsScale
	top := q[0]
	for _, v := range q {
		top = max(top, v)
	}
	den := uint64(ScoreScale) << (s + 1)
	for {
		c := uniformIndex(len(q), src)
		if acceptExp(a, uint64(top-q[c]), den, src) {
			return c
		}
	}
}

// acceptExp returns true with probability exp(−a·delta/den), den < 2^55,
// exactly: the integer part of the exponent is a run of Bernoulli(e^−1)
// draws (stopping at the first failure), the fraction one
// Bernoulli(exp(−r/den)).
func acceptExp(a, delta, den uint64, src *noise.Sampler) bool {
	if delta == 0 {
		return true
	}
	hi, lo := bits.Mul64(a, delta)
	var whole, r uint64
	if hi >= den {
		// exponent ≥ 2^64: probability below e^(−2^64); the run of
		// e^(−1) draws below would fail long before, so fail now.
		return false
	}
	whole, r = bits.Div64(hi, lo, den)
	for ; whole > 0; whole-- {
		if !src.BernoulliExpNeg(1, 1) {
			return false
		}
	}
	return src.BernoulliExpNeg(r, den)
}

// uniformIndex returns an integer uniform on [0, k), k ≥ 1, from fair bits
// by rejection (exact).
func uniformIndex(k int, src *noise.Sampler) int {
	if k <= 1 {
		return 0
	}
	nb := bits.Len(uint(k - 1))
	for {
		v := 0
		for range nb {
			v <<= 1
			if src.Bernoulli(1, 2) {
				v |= 1
			}
		}
		if v < k {
			return v
		}
	}
}
