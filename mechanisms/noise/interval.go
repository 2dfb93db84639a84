// Confidence intervals of the samplers' noise: the half-width h such that
// a release y = x + Z (Z the lattice noise this package draws) has
// P(|y − x| > h) ≤ 1 − level. Only the public noise scale enters, so an
// interval is post-processing of public parameters, never of data.

package noise

import (
	"errors"
	"math"
)

// ErrLevel: a confidence level outside (0, 1).
var ErrLevel = errors.New("noise: the confidence level must be a number strictly between 0 and 1")

// tailMargin is the relative excess by which a computed tail probability
// is raised before it is compared with 1 − level. The float64 formulas
// below are accurate to a few ulps; the margin makes every comparison
// err toward the wider interval, so the tail of the half-width returned
// is at most 1 − level, and the half-width is the exact smallest one
// except when the exact tail lies within a relative 1e-12 of 1 − level.
const tailMargin = 1e-12

// checkLevel returns α = 1 − level (exact for level ≥ 0.5, Sterbenz).
func checkLevel(level float64) (float64, error) {
	if !(level > 0 && level < 1) {
		return 0, ErrLevel
	}
	return 1 - level, nil
}

// LaplaceTailSteps returns the smallest integer k ≥ 0 with
// P(|Z| > k) ≤ alpha for the discrete Laplace distribution on the
// integers, P(z) ∝ exp(−|z|/t) (DiscreteLaplaceInt(t)), alpha in (0, 1).
//
// Closed form: with q = e^(−1/t), P(z) = (1−q)/(1+q)·q^|z|, so
// P(|Z| > k) = 2q^(k+1)/(1+q), and P(|Z| > k) ≤ α iff
// k + 1 ≥ t·(ln(2/(1+q)) − ln α).
func LaplaceTailSteps(t uint64, alpha float64) uint64 {
	checkIntScale(t)
	tf := float64(t)
	// ln(2/(1+q)) = −log1p((q−1)/2), with q − 1 = expm1(−1/t), exact to
	// a few ulps even for t near 2^41 where q rounds to 1.
	c := -math.Log1p(math.Expm1(-1/tf) / 2)
	x := tf * (c - math.Log(alpha)) * (1 + tailMargin)
	if x <= 1 {
		return 0
	}
	return uint64(math.Ceil(x)) - 1
}

// GaussianTailSteps returns the smallest integer k ≥ 0 whose tail bound
// is at most alpha, for the discrete Gaussian on the integers,
// P(z) ∝ exp(−z²/(2s²)) (DiscreteGaussianInt(s)), alpha in (0, 1). The
// bound is the exact tail for s ≤ 2^12, summed term by term, and above
// that the upper bound P(|Z| > k) ≤ erfc(k/(s√2)): the sum over z > k of
// the decreasing e^(−z²/2s²) is at most its integral over [k, ∞), and the
// normaliser Σ_z e^(−z²/2s²) = s√(2π)·Σ_j e^(−2π²s²j²) (Poisson
// summation) is at least s√(2π). For the samplers' s ≥ 2^40 the bound
// exceeds the exact tail by a relative 1e-12 at most, which moves k by
// at most a few lattice steps out of 2^41.
func GaussianTailSteps(s uint64, alpha float64) uint64 {
	checkIntScale(s)
	if s <= 1<<12 {
		return gaussianTailStepsExact(s, alpha)
	}
	sf := float64(s) * math.Sqrt2
	tail := func(k uint64) float64 { return math.Erfc(float64(k)/sf) * (1 + tailMargin) }
	k := uint64(0)
	if x := sf * math.Erfcinv(alpha); x > 0 {
		k = uint64(math.Ceil(x))
	}
	for tail(k) > alpha {
		k++
	}
	for k > 0 && tail(k-1) <= alpha {
		k--
	}
	return k
}

// gaussianTailStepsExact sums the discrete Gaussian's weights up to 40·s,
// beyond which they are below e^(−800) (zero in float64).
func gaussianTailStepsExact(s uint64, alpha float64) uint64 {
	n := 40 * s
	sf := float64(s)
	w := make([]float64, n+1)
	for z := range w {
		f := float64(z) / sf
		w[z] = math.Exp(-f * f / 2)
	}
	// tails[k] = Σ_{z>k} w[z], summed from the smallest term up.
	tails := make([]float64, n+1)
	for z := n; z > 0; z-- {
		tails[z-1] = tails[z] + w[z]
	}
	norm := w[0] + 2*tails[0]
	for k := range tails {
		if 2*tails[k]/norm*(1+tailMargin) <= alpha {
			return uint64(k)
		}
	}
	return n
}

// LaplaceHalfWidth returns the half-width of the level confidence
// interval of one Laplace(b) sample (Sampler.Laplace, AddLaplace): the
// smallest multiple h of the lattice step of b with P(|Z| > h) ≤ 1 − level
// for the noise Z the sampler draws (scale b rounded up to the lattice).
// LaplaceHalfWidth(0, level) is 0. Its errors are ErrLevel and
// ErrScaleRange.
func LaplaceHalfWidth(b, level float64) (float64, error) {
	return halfWidth(b, level, LaplaceTailSteps)
}

// GaussianHalfWidth is LaplaceHalfWidth for Gaussian(sigma) noise
// (Sampler.Gaussian, AddGaussian): the smallest multiple h of the lattice
// step whose tail bound (GaussianTailSteps) is at most 1 − level.
func GaussianHalfWidth(sigma, level float64) (float64, error) {
	return halfWidth(sigma, level, GaussianTailSteps)
}

func halfWidth(scale, level float64, steps func(uint64, float64) uint64) (float64, error) {
	alpha, err := checkLevel(level)
	if err != nil {
		return 0, err
	}
	if err := CheckScale(scale); err != nil {
		return 0, err
	}
	if scale == 0 {
		return 0, nil
	}
	l := latticeFor(scale)
	// k < 2^52 steps (a tail at α ≥ 2^-1074 is reached below 745·2^41
	// steps), so k·step is exact.
	return float64(steps(l.units, alpha)) * l.step, nil
}

// RatioInterval returns a sound interval for the ratio S/C of an unknown
// sum S ∈ [s−hs, s+hs] and an unknown count C ∈ [c−hc, c+hc] of at least
// one unit, clipped to [lo, hi] (the bounds every clamped value, hence the
// mean, lies in). C is an integer ≥ 1, so it lies in
// [max(1, ⌈c−hc⌉), ⌊c+hc⌋]; over that box the ratio is monotone in each
// coordinate, so its range is spanned by the corners. When no integer ≥ 1
// is left the interval is [lo, hi].
// With both parts' intervals at level 1 − (1−L)/2 the union bound makes
// the result an interval of level L for the mean S/C.
func RatioInterval(s, hs, c, hc, lo, hi float64) (float64, float64) {
	c1, c2 := math.Max(math.Ceil(c-hc), 1), math.Floor(c+hc)
	if !(c2 >= c1) || math.IsNaN(s) {
		return lo, hi
	}
	s1, s2 := s-hs, s+hs
	rlo := math.Min(s1/c1, s1/c2)
	rhi := math.Max(s2/c1, s2/c2)
	// One division each: widen by an ulp so rounding never narrows it.
	rlo, rhi = math.Nextafter(rlo, math.Inf(-1)), math.Nextafter(rhi, math.Inf(1))
	return math.Min(math.Max(rlo, lo), hi), math.Max(math.Min(rhi, hi), lo)
}

// RankErrorBound returns the smallest k ≥ 0 such that, with probability at
// least level, the exponential mechanism over n candidates with weights
// ratio^(−loss) (ratio > 1; a loss is an integer distance) selects a
// candidate whose loss exceeds the least loss present by at most k. The
// candidates at loss ≥ L* + j weigh at most n·ratio^(−j) against the best
// one's ratio^(−L*), so P(loss > L* + k) ≤ n·ratio^(−(k+1)), which is at
// most 1 − level when k + 1 ≥ ln(n/(1−level))/ln ratio. It is a bound on
// ranks, not values: the value released depends on where the data lie.
func RankErrorBound(n int, ratio, level float64) (int, error) {
	alpha, err := checkLevel(level)
	if err != nil {
		return 0, err
	}
	if n < 1 || !(ratio > 1) || math.IsInf(ratio, 1) {
		return 0, errors.New("noise: the rank bound needs n ≥ 1 candidates and a finite weight ratio > 1")
	}
	// Lower ln ratio a little (the ratio may be rounded up), raise the
	// numerator: both err toward a larger k.
	x := math.Log(float64(n)/alpha) * (1 + tailMargin) / (math.Log(ratio) * (1 - tailMargin))
	if x <= 1 {
		return 0, nil
	}
	return int(math.Ceil(x)) - 1, nil
}
