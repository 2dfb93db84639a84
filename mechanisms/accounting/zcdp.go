package accounting

// zCDP ↔ (ε, δ) conversions.
//
// Classic: Bun and Steinke, "Concentrated Differential Privacy: Simplifications,
// Extensions, and Lower Bounds" (TCC 2016), Prop. 1.3.
// Tight: Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
// Privacy" (NeurIPS 2020, arXiv 2004.00010), Prop. 12 applied to the Rényi
// curve α ↦ αρ of a ρ-zCDP mechanism (their Cor. 13). Spec: federated.md §0,
// power_methods.md §2/§4 "Calibrate to a target".

import "math"

// The optimal Rényi order is found by a coarse scan over t = ln(α−1) followed
// by a golden-section refinement. Working in t keeps α−1 resolvable both when
// the optimum is barely above 1 (huge ρ or δ near 1) and when it is ~1e7
// (tiny ρ, tiny δ).
const (
	scanHalfWidth = 30.0 // scan t0 ± 30, i.e. α−1 over 26 orders of magnitude each way
	scanStep      = 0.25
	goldenTol     = 1e-11 // in t; the objective is flat at its minimum, so ε is far more precise
)

// cksEps is the CKS ε at order α = 1 + e^t for a ρ-zCDP mechanism at
// L = ln(1/δ):  αρ + ln(1−1/α) + (L − ln α)/(α−1).
// ln(1−1/α) is written −log1p(e^−t) so that it keeps full relative precision
// when α is large.
func cksEps(rho, logInvDelta, t float64) float64 {
	a := math.Exp(t) // α − 1
	return (1+a)*rho - math.Log1p(math.Exp(-t)) + (logInvDelta-math.Log1p(a))/a
}

// cksLogDelta is ln δ at order α = 1 + e^t for a ρ-zCDP mechanism at ε:
// (α−1)(αρ − ε) + (α−1) ln(1−1/α) − ln α.
func cksLogDelta(rho, eps, t float64) float64 {
	a := math.Exp(t)
	return a*((1+a)*rho-eps) - a*math.Log1p(math.Exp(-t)) - math.Log1p(a)
}

// minimize1D returns min f over [t0−w, t0+w]: scan on a grid, then refine the
// best cell by golden-section search. The returned value is f at some point,
// so for our objectives (each t gives a valid bound) it is always sound.
func minimize1D(objective func(float64) float64, t0 float64) float64 {
	// NaN (∞·0 at extreme orders) counts as "no bound here".
	f := func(t float64) float64 {
		v := objective(t)
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		return v
	}
	// Outside |t| ≤ 600, e^t overflows products; no useful order lies there.
	t0 = math.Max(-600+scanHalfWidth, math.Min(600-scanHalfWidth, t0))
	lo, hi := t0-scanHalfWidth, t0+scanHalfWidth
	bestT, best := t0, f(t0)
	for t := lo; t <= hi; t += scanStep {
		if v := f(t); v < best {
			bestT, best = t, v
		}
	}
	a, b := bestT-scanStep, bestT+scanStep
	const invPhi = 0.6180339887498949
	c := b - invPhi*(b-a)
	d := a + invPhi*(b-a)
	fc, fd := f(c), f(d)
	for i := 0; i < 200 && b-a > goldenTol; i++ {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - invPhi*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + invPhi*(b-a)
			fd = f(d)
		}
	}
	return math.Min(best, math.Min(fc, fd))
}

// ZCDPToEpsClassic returns ε = ρ + 2√(ρ ln(1/δ)), the classic (ε, δ)
// guarantee of a ρ-zCDP mechanism. It returns NaN if ρ < 0, δ < 0 or either is
// NaN, +Inf if δ = 0 and ρ > 0, and 0 if ρ = 0 or δ ≥ 1.
func ZCDPToEpsClassic(rho, delta float64) float64 {
	switch {
	case math.IsNaN(rho) || math.IsNaN(delta) || rho < 0 || delta < 0:
		return math.NaN()
	case rho == 0 || delta >= 1:
		return 0
	case delta == 0:
		return math.Inf(1)
	}
	return rho + 2*math.Sqrt(rho*-math.Log(delta))
}

// ZCDPToEps returns the tight (Canonne–Kamath–Steinke) ε such that a ρ-zCDP
// mechanism is (ε, δ)-DP. It is never larger than ZCDPToEpsClassic. Special
// values as for ZCDPToEpsClassic; the result is clamped at 0.
func ZCDPToEps(rho, delta float64) float64 {
	switch {
	case math.IsNaN(rho) || math.IsNaN(delta) || rho < 0 || delta < 0:
		return math.NaN()
	case rho == 0 || delta >= 1:
		return 0
	case delta == 0 || math.IsInf(rho, 1):
		return math.Inf(1)
	}
	L := -math.Log(delta)
	// The classic bound is optimal at α−1 = √(L/ρ); the CKS optimum is near it.
	t0 := 0.5 * (math.Log(L) - math.Log(rho))
	eps := minimize1D(func(t float64) float64 { return cksEps(rho, L, t) }, t0)
	eps = math.Min(eps, ZCDPToEpsClassic(rho, delta)) // rounding guard only
	return math.Max(eps, 0)
}

// ZCDPToDelta returns the tight (Canonne–Kamath–Steinke) δ such that a ρ-zCDP
// mechanism is (ε, δ)-DP. It returns NaN for ρ < 0, ε < 0 or NaN input, 0 for
// ρ = 0, and a value in [0, 1] otherwise (0 when the true δ underflows).
func ZCDPToDelta(rho, eps float64) float64 {
	switch {
	case math.IsNaN(rho) || math.IsNaN(eps) || rho < 0 || eps < 0:
		return math.NaN()
	case rho == 0 || math.IsInf(eps, 1):
		return 0
	case math.IsInf(rho, 1):
		return 1
	}
	// The classic bound's optimal order is α = (ε+ρ)/(2ρ).
	a0 := (eps - rho) / (2 * rho)
	t0 := math.Log(math.Max(a0, 1e-6))
	logDelta := minimize1D(func(t float64) float64 { return cksLogDelta(rho, eps, t) }, t0)
	return math.Min(1, math.Exp(logDelta))
}

// RhoForTargetClassic returns the largest ρ whose classic conversion gives ε
// at δ: ρ* = (√(ln(1/δ)+ε) − √ln(1/δ))². It returns NaN unless ε > 0 and
// 0 < δ < 1.
func RhoForTargetClassic(eps, delta float64) float64 {
	if !validTarget(eps, delta) {
		return math.NaN()
	}
	L := -math.Log(delta)
	// Written as ε²/(√(L+ε)+√L)² to avoid cancellation when ε ≪ L.
	s := math.Sqrt(L+eps) + math.Sqrt(L)
	return eps * eps / (s * s)
}

// RhoForTarget returns the largest ρ (to within ~1e-15 relative) with
// ZCDPToEps(ρ, δ) ≤ ε: the zCDP budget a mechanism may spend to meet the
// target (ε, δ) under the tight conversion. It returns NaN unless ε > 0 and
// 0 < δ < 1.
func RhoForTarget(eps, delta float64) float64 {
	if !validTarget(eps, delta) {
		return math.NaN()
	}
	ok := func(rho float64) bool { return ZCDPToEps(rho, delta) <= eps }
	lo := RhoForTargetClassic(eps, delta) // sound for the classic bound, hence for the tight one
	lo = shrinkUntil(ok, lo)              // rounding may push the classic point a hair over
	return bisectUp(ok, lo)
}

// shrinkUntil returns lo, or the first of lo·(1−f) with f = 1e-12, 2e-12,
// 4e-12, … up to 1/2 per step, for which ok holds (ok(0) must hold).
func shrinkUntil(ok func(float64) bool, lo float64) float64 {
	for f := 1e-12; !ok(lo); f = math.Min(2*f, 0.5) {
		lo *= 1 - f
		if lo < math.SmallestNonzeroFloat64 {
			return 0
		}
	}
	return lo
}

// bisectUp returns the largest x (within ~1e-15 relative) with ok(x), given
// ok(lo) and ok monotone (true then false) on [lo, ∞).
func bisectUp(ok func(float64) bool, lo float64) float64 {
	hi := 2 * lo
	for i := 0; ok(hi); i++ {
		lo, hi = hi, 2*hi
		if i > 2100 || math.IsInf(hi, 1) {
			return lo
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-15*hi; i++ {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// PureToRho returns ε²/2: a pure ε-DP mechanism is ε²/2-zCDP
// (Bun–Steinke 2016, Prop. 1.4). NaN for NaN input.
func PureToRho(eps float64) float64 { return eps * eps / 2 }

func validTarget(eps, delta float64) bool {
	return eps > 0 && !math.IsInf(eps, 1) && delta > 0 && delta < 1
}
