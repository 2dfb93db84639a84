package accounting

// μ-GDP ↔ (ε, δ) conversions.
//
// Dong, Roth and Su, "Gaussian Differential Privacy" (JRSS-B 2022), Cor. 2.13:
// a mechanism is μ-GDP iff it is (ε, δ(ε))-DP for every ε ≥ 0 with
// δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2). Spec: federated.md §0 (a).

import "math"

// erfcx returns the scaled complementary error function e^{x²}·erfc(x) for
// x ≥ −26 (beyond that e^{x²} overflows; callers never go there).
func erfcx(x float64) float64 {
	if x < 25 {
		// e^{x²} with x² split exactly into hi+lo so that the rounding of x²
		// (relative 1e-16, absolute up to 6e-14 at x=25) does not enter exp.
		hi := x * x
		lo := math.FMA(x, x, -hi)
		return math.Exp(hi) * math.Exp(lo) * math.Erfc(x)
	}
	// Asymptotic series 1/(x√π)·Σ (−1)^n (2n−1)!!/(2x²)^n; at x ≥ 25 the
	// terms fall below 1e-17 by n = 7.
	inv := 1 / (2 * x * x)
	sum, term := 1.0, 1.0
	for n := 1; n <= 9; n++ {
		term *= -float64(2*n-1) * inv
		sum += term
	}
	return sum / (x * math.SqrtPi)
}

// mills returns the Mills ratio R(x) = Φ(−x)/φ(x) = √(π/2)·erfcx(x/√2).
func mills(x float64) float64 {
	return math.Sqrt(math.Pi/2) * erfcx(x/math.Sqrt2)
}

// millsGap returns 1 − x·R(x) = −R'(x) > 0, the integrand of
// R(a) − R(b) = ∫_a^b (1 − xR(x)) dx.
func millsGap(x float64) float64 {
	if x < 30 {
		return 1 - x*mills(x)
	}
	// 1 − xR(x) = Σ_{n≥1} (−1)^{n+1} (2n−1)!!/x^{2n}; direct subtraction
	// would lose log10(x²) digits.
	inv := 1 / (x * x)
	sum, term := 0.0, -1.0
	for n := 1; n <= 10; n++ {
		term *= -float64(2*n-1) * inv
		sum += term
	}
	return sum
}

// Five-point Gauss–Legendre nodes and weights on [−1, 1].
var (
	glNodes   = [5]float64{0, -0.5384693101056831, 0.5384693101056831, -0.906179845938664, 0.906179845938664}
	glWeights = [5]float64{0.5688888888888889, 0.47862867049936647, 0.47862867049936647, 0.23692688505618908, 0.23692688505618908}
)

// millsDiff returns R(a) − R(b) for a < b. When b−a is small the plain
// difference cancels, so it integrates the positive function 1 − xR(x)
// instead, with Gauss–Legendre panels no wider than 0.05.
func millsDiff(a, b float64) float64 {
	w := b - a
	if w > 0.5 {
		return mills(a) - mills(b)
	}
	panels := int(math.Ceil(w / 0.05))
	if panels < 1 {
		panels = 1
	}
	h := w / float64(panels)
	sum := 0.0
	for p := 0; p < panels; p++ {
		mid := a + (float64(p)+0.5)*h
		for i, x := range glNodes {
			sum += glWeights[i] * millsGap(mid+x*h/2)
		}
	}
	return sum * h / 2
}

// negligibleA is a value of a = ε/μ − μ/2 beyond which δ(ε) ≤ Φ(−a) is
// below the smallest positive float64 (Φ(−40) ≈ 3.7e-350), so δ is 0 as a
// float64. Returning it early also keeps ε/μ = +Inf (a tiny μ) out of the
// Mills-ratio difference, where Inf − Inf would give NaN.
const negligibleA = 40

// gdpDelta returns δ(ε) for μ-GDP, for μ > 0 finite and ε finite.
func gdpDelta(mu, eps float64) float64 {
	a := eps/mu - mu/2
	b := eps/mu + mu/2
	if a > negligibleA {
		return 0
	}
	const logSqrt2Pi = 0.9189385332046728 // ln √(2π)
	if a >= 0 || (mu <= 1 && a > -1) {
		// e^ε φ(b) = φ(a), so δ = φ(a)·(R(a) − R(b)): no e^ε, and the
		// difference is taken between two O(1/a) numbers, not two tails.
		// (With μ ≤ 1 and ε ≥ 0, a ≥ −1/2; only a negative ε, which no
		// conversion asks for, reaches the textbook branch with μ ≤ 1.)
		return math.Exp(-a*a/2 - logSqrt2Pi + math.Log(millsDiff(a, b)))
	}
	// a < 0 and μ > 1: δ ≥ δ(μ²/2) = 1/2 − e^{μ²/2}Φ(−μ) > 0.23, so the
	// textbook difference does not cancel; R(a) would overflow for a ≪ 0.
	// (A negative ε with μ ≤ 1 and a ≤ −1 also lands here: δ ≥ δ(0) is then
	// computed as a difference of two numbers near Φ(−a), exact to rounding
	// relative to 1, which is enough for a value no conversion asks for.)
	var second float64 // e^ε Φ(−b)
	if b > 0 {
		second = math.Exp(-a*a/2-logSqrt2Pi) * mills(b)
	} else {
		// δ ≥ 0 forces e^ε Φ(−b) ≤ Φ(−a) ≤ 1 with Φ(−b) ≥ 1/2, so e^ε ≤ 2.
		second = math.Exp(eps) * math.Erfc(b/math.Sqrt2) / 2
	}
	return math.Max(0, math.Erfc(a/math.Sqrt2)/2-second)
}

// GDPDelta returns δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), the exact δ at
// which a μ-GDP mechanism is (ε, δ)-DP. It returns NaN for NaN input or
// μ < 0, 0 for μ = 0 or ε = +Inf, and 1 for μ = +Inf. Results below the
// smallest float64 are 0. Should an evaluation ever produce NaN for valid
// input, it returns 1, the trivial bound, so that no caller reads a NaN as
// a small δ.
func GDPDelta(mu, eps float64) float64 {
	switch {
	case math.IsNaN(mu) || math.IsNaN(eps) || mu < 0:
		return math.NaN()
	case mu == 0 || math.IsInf(eps, 1):
		return 0
	case math.IsInf(mu, 1):
		return 1
	case math.IsInf(eps, -1):
		return 1
	}
	d := gdpDelta(mu, eps)
	if math.IsNaN(d) {
		return 1
	}
	return math.Min(1, d)
}

// GDPEps returns the smallest ε ≥ 0 (to within ~1e-15 relative, rounded up)
// such that a μ-GDP mechanism is (ε, δ)-DP. It returns NaN for NaN input,
// μ < 0 or δ < 0, 0 for μ = 0 or δ ≥ 1, and +Inf for δ = 0 with μ > 0 or
// when ε is beyond float64 (μ above ~1e154).
func GDPEps(mu, delta float64) float64 {
	switch {
	case math.IsNaN(mu) || math.IsNaN(delta) || mu < 0 || delta < 0:
		return math.NaN()
	case mu == 0 || delta >= 1:
		return 0
	case delta == 0 || math.IsInf(mu, 1):
		return math.Inf(1)
	}
	// A NaN δ(ε) (never expected) counts as too small: the safe side.
	tooSmall := func(eps float64) bool { return !(GDPDelta(mu, eps) <= delta) }
	if !tooSmall(0) {
		return 0
	}
	// The classic zCDP conversion of ρ = μ²/2 is a valid, larger ε.
	hi := ZCDPToEpsClassic(mu*mu/2, delta)
	for i := 0; tooSmall(hi); i++ {
		if i > searchSteps || math.IsInf(hi, 1) {
			return math.Inf(1)
		}
		hi = 2*hi + 1
	}
	lo := 0.0
	for i := 0; i < 200 && hi-lo > 1e-15*hi; i++ {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if tooSmall(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// MuForTarget returns the largest μ (to within ~1e-15 relative) such that a
// μ-GDP mechanism is (ε, δ)-DP: the Gaussian mechanism calibrated exactly to
// the target uses noise std = sensitivity/μ. The result satisfies
// GDPDelta(μ, ε) ≤ δ as computed. It returns NaN unless 0 < ε ≤ MaxEps and
// 0 < δ < 1, and 0 when no positive float64 μ meets the target.
func MuForTarget(eps, delta float64) float64 {
	if !validTarget(eps, delta) {
		return math.NaN()
	}
	ok := func(mu float64) bool { return GDPDelta(mu, eps) <= delta }
	// μ = √(2ρ*) from the classic zCDP inverse is sound, hence a lower end.
	lo := math.Sqrt(2 * RhoForTargetClassic(eps, delta))
	lo = shrinkUntil(ok, lo) // rounding may push the classic point a hair over
	return bisectUp(ok, lo)
}
