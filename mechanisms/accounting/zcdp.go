package accounting

// zCDP ↔ (ε, δ) conversions.
//
// Classic: Bun and Steinke, "Concentrated Differential Privacy: Simplifications,
// Extensions, and Lower Bounds" (TCC 2016), Prop. 1.3.
// Tight: Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
// Privacy" (NeurIPS 2020, arXiv 2004.00010), Prop. 12 applied to the Rényi
// curve α ↦ αρ of a ρ-zCDP mechanism (their Cor. 13). Spec: federated.md §0,
// power_methods.md §2/§4 "Calibrate to a target".

import (
	"math"
	"sync"
)

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
	f := noNaN(objective)
	t0 = scanCentre(t0)
	lo, hi := t0-scanHalfWidth, t0+scanHalfWidth
	bestT, best := t0, f(t0)
	for t := lo; t <= hi; t += scanStep {
		if v := f(t); v < best {
			bestT, best = t, v
		}
	}
	v, _ := refineCell(f, bestT, best, math.NaN())
	return v
}

// noNaN is objective with NaN (∞·0 at extreme orders) read as +Inf: "no
// bound here".
func noNaN(objective func(float64) float64) func(float64) float64 {
	return func(t float64) float64 {
		v := objective(t)
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		return v
	}
}

// scanCentre is the centre of a scan from t0. Outside |t| ≤ 600, e^t
// overflows products; no useful order lies there. A NaN start (only from
// an input no caller passes) scans around α = 2.
func scanCentre(t0 float64) float64 {
	if math.IsNaN(t0) {
		t0 = 0
	}
	return math.Max(-600+scanHalfWidth, math.Min(600-scanHalfWidth, t0))
}

// refineCell refines the grid cell around bestT by golden-section search
// and returns the least of best and the values it evaluates. For a limit
// that is not NaN it stops at the first value at or below limit (below
// is then true and the value is that one, not the least).
func refineCell(f func(float64) float64, bestT, best, limit float64) (min float64, below bool) {
	a, b := bestT-scanStep, bestT+scanStep
	const invPhi = 0.6180339887498949
	c := b - invPhi*(b-a)
	d := a + invPhi*(b-a)
	fc, fd := f(c), f(d)
	if fc <= limit || fd <= limit {
		return math.Min(fc, fd), true
	}
	for i := 0; i < 200 && b-a > goldenTol; i++ {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - invPhi*(b-a)
			fc = f(c)
			if fc <= limit {
				return fc, true
			}
		} else {
			a, c, fc = c, d, fd
			d = a + invPhi*(b-a)
			fd = f(d)
			if fd <= limit {
				return fd, true
			}
		}
	}
	return math.Min(best, math.Min(fc, fd)), false
}

// cksMinimize is minimize1D of cksEps(rho, L, ·) from t0, with the same
// result bit for bit, at a fraction of the cost; and, for a limit that is
// not NaN, it stops as soon as the answer to "is the result ≤ limit?" is
// known (below; min is then meaningless). ρ > 0 and 0 < δ < 1.
//
// Why the result is the same: minimize1D keeps the first grid point of
// least value (or t0) and refines the cell around it. The objective is
// unimodal in t: with α = 1 + e^t its derivative in α is
// ρ − (L − ln α)/(α−1)², which increases while α < e^L (the fraction is
// positive and decreasing) and is positive after, so it changes sign at
// most once. The scan here starts at the middle of the grid (the classic
// optimum, near the CKS one) and walks out on each side until a value
// exceeds one already seen on the other side of it by far more than the
// rounding of an evaluation (below 1e-14 relative plus 1e-11, see
// cksFar); by unimodality every grid point further out has a larger
// value still, so it could neither be kept by minimize1D's scan nor
// answer "≤ limit" when no value seen did. The refinement is then
// minimize1D's own, from the same point.
//
// Why stopping early is exact: minimize1D's result is the least value it
// evaluates (the golden section only ever drops the larger of its inner
// points), so the first value at or below limit settles the answer.
func cksMinimize(rho, L, t0, limit float64) (min float64, below bool) {
	f := noNaN(func(t float64) float64 { return cksEps(rho, L, t) })
	t0 = scanCentre(t0)
	v0 := f(t0)
	if v0 <= limit {
		return v0, true
	}
	lo, hi := t0-scanHalfWidth, t0+scanHalfWidth
	// The grid points exactly as minimize1D's loop accumulates them.
	var tsBuf, vsBuf [2*scanHalfWidth/scanStep + 8]float64
	ts := tsBuf[:0]
	for t := lo; t <= hi; t += scanStep {
		ts = append(ts, t)
	}
	vs := vsBuf[:len(ts)]
	mid := len(ts) / 2
	// Walk right from mid, then left from mid−1; [first, last] is what
	// was evaluated. seen is the least value evaluated on the other side
	// of the point being walked to (t0 counts where it lies).
	last := len(ts) - 1
	seen := math.Inf(1)
	if t0 < ts[mid] {
		seen = v0
	}
	for i := mid; i < len(ts); i++ {
		vs[i] = f(ts[i])
		if vs[i] <= limit {
			return vs[i], true
		}
		if cksFar(vs[i], seen) {
			last = i
			break
		}
		seen = math.Min(seen, vs[i])
	}
	first := 0
	seen = math.Inf(1)
	for i := mid; i <= last; i++ {
		seen = math.Min(seen, vs[i])
	}
	if t0 > ts[mid-1] {
		seen = math.Min(seen, v0)
	}
	for i := mid - 1; i >= 0; i-- {
		vs[i] = f(ts[i])
		if vs[i] <= limit {
			return vs[i], true
		}
		if cksFar(vs[i], seen) {
			first = i
			break
		}
		seen = math.Min(seen, vs[i])
	}
	bestT, best := t0, v0
	for i := first; i <= last; i++ {
		if vs[i] < best {
			bestT, best = ts[i], vs[i]
		}
	}
	return refineCell(f, bestT, best, limit)
}

// cksFar reports whether the computed cksEps value v is above the computed
// value seen by far more than both may be off: an evaluation's error is
// below 10u(|ε| + 1300) (u = 2⁻⁵³; the terms that cancel,
// log1p(e^−t) ≤ 631 for t ≥ −630 and (L − ln α)/(α−1) with L ≤ 745, are
// bounded), about 1.1e-15|ε| + 1.5e-12, so the margin of 1e-9 relative
// plus 1e-9 holds with room. Then the true objective is larger at v's
// point than at seen's, and every computed value further out is larger
// than seen. +Inf (an overflow) is never far: the walk goes on.
func cksFar(v, seen float64) bool {
	return v-seen > 1e-9*(math.Abs(v)+math.Abs(seen)+1)
}

// zcdpEpsAtMost reports whether ZCDPToEps(rho, delta) ≤ limit, exactly
// (the tests compare the two), stopping at the first bound that settles
// it (cksMinimize).
func zcdpEpsAtMost(rho, delta, limit float64) bool {
	switch {
	case math.IsNaN(rho) || math.IsNaN(delta) || rho < 0 || delta < 0,
		rho == 0 || delta >= 1,
		delta == 0 || math.IsInf(rho, 1),
		math.IsNaN(limit) || limit < 0:
		// Special values, and a negative limit (which the clamp at 0
		// decides): as ZCDPToEps computes them.
		return ZCDPToEps(rho, delta) <= limit
	}
	// ZCDPToEps is max(min(cksMinimize(…), classic), 0) and limit ≥ 0.
	if ZCDPToEpsClassic(rho, delta) <= limit {
		return true
	}
	L := -math.Log(delta)
	t0 := 0.5 * (math.Log(L) - math.Log(rho))
	_, below := cksMinimize(rho, L, t0, limit)
	return below
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
	eps, _ := cksMinimize(rho, L, t0, math.NaN())     // minimize1D's value (a NaN limit never stops it)
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
// at δ: ρ* = (√(ln(1/δ)+ε) − √ln(1/δ))², rounded down so that
// ZCDPToEpsClassic(ρ*, δ) ≤ ε holds as computed. It returns NaN unless
// 0 < ε ≤ MaxEps and 0 < δ < 1.
func RhoForTargetClassic(eps, delta float64) float64 {
	if !validTarget(eps, delta) {
		return math.NaN()
	}
	L := -math.Log(delta)
	// Written as ε²/(√(L+ε)+√L)² to avoid cancellation when ε ≪ L.
	s := math.Sqrt(L+eps) + math.Sqrt(L)
	rho := eps * eps / (s * s)
	return shrinkUntil(func(r float64) bool { return ZCDPToEpsClassic(r, delta) <= eps }, rho)
}

// RhoForTarget returns the largest ρ (to within ~1e-15 relative) with
// ZCDPToEps(ρ, δ) ≤ ε: the zCDP budget a mechanism may spend to meet the
// target (ε, δ) under the tight conversion. It returns NaN unless
// 0 < ε ≤ MaxEps and 0 < δ < 1, and 0 when ε is so small that no positive
// float64 ρ meets it.
func RhoForTarget(eps, delta float64) float64 {
	if !validTarget(eps, delta) {
		return math.NaN()
	}
	key := [2]uint64{math.Float64bits(eps), math.Float64bits(delta)}
	rhoMemo.Lock()
	rho, ok := rhoMemo.m[key]
	rhoMemo.Unlock()
	if ok {
		return rho
	}
	rho = rhoForTarget(eps, delta)
	rhoMemo.Lock()
	if rhoMemo.m == nil || len(rhoMemo.m) >= rhoMemoSize {
		rhoMemo.m = make(map[[2]uint64]float64)
	}
	rhoMemo.m[key] = rho
	rhoMemo.Unlock()
	return rho
}

// rhoMemo remembers RhoForTarget's answers. The search costs about half a
// millisecond, and every plan of a Gaussian call asks it (the cell's
// pre-check, the plan, a refusal's search for what fits), usually with
// the same public (ε, δ). It is emptied when full.
var rhoMemo struct {
	sync.Mutex
	m map[[2]uint64]float64
}

const rhoMemoSize = 4096

// rhoForTarget is RhoForTarget's search.
func rhoForTarget(eps, delta float64) float64 {
	ok := func(rho float64) bool { return zcdpEpsAtMost(rho, delta, eps) }
	lo := RhoForTargetClassic(eps, delta) // sound for the classic bound, hence for the tight one
	lo = shrinkUntil(ok, lo)              // rounding may push the classic point a hair over
	return bisectUp(ok, lo)
}

// searchSteps bounds the doubling and shrinking loops of the searches: the
// float64 exponents span 2098 binades, so any start reaches either end of
// the range (or 0) within this many halvings or doublings. The bound, not
// the inputs, guarantees that every search returns.
const searchSteps = 2200

// shrinkUntil returns x, or the first of x·(1−f) with f = 1e-12, 2e-12,
// 4e-12, … up to 1/2 per step for which ok holds, or 0 if none does
// (ok(0) must hold). A start that is not a positive finite number (NaN from
// an overflow upstream) gives 0: the safe end.
func shrinkUntil(ok func(float64) bool, x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		return 0
	}
	f := 1e-12
	for range searchSteps {
		if ok(x) {
			return x
		}
		x *= 1 - f
		f = math.Min(2*f, 0.5)
		if x < math.SmallestNonzeroFloat64 {
			return 0
		}
	}
	return 0
}

// bisectUp returns the largest x (within ~1e-15 relative) with ok(x), given
// ok(lo), ok(0) and ok monotone (true then false) on [0, ∞). The result
// always satisfies ok, so it is sound whatever the rounding. It brackets the
// answer by powers of two first, galloping and then bisecting on the
// exponent, so that a start far below the answer (a classic inverse that
// underflowed to 0 or a subnormal) costs about 25 evaluations of ok, not one
// per binade in between; then it bisects within the bracketing binade.
func bisectUp(ok func(float64) bool, lo float64) float64 {
	const minExp, maxExp = -1075, 1024 // 2^-1075 rounds to 0, 2^1024 to +Inf
	loE := minExp                      // ok(2^loE) holds
	if lo > 0 {
		loE = math.Ilogb(lo) // 2^loE ≤ lo, so ok(2^loE) by monotonicity
	}
	// Gallop: 2^(loE+1), 2^(loE+2), 2^(loE+4), … until ok fails.
	hiE := loE + 1
	for step := 1; hiE < maxExp && ok(math.Ldexp(1, hiE)); step *= 2 {
		loE, hiE = hiE, min(hiE+2*step, maxExp)
	}
	for hiE-loE > 1 {
		m := loE + (hiE-loE)/2
		if ok(math.Ldexp(1, m)) {
			loE = m
		} else {
			hiE = m
		}
	}
	lo = math.Max(lo, math.Ldexp(1, loE))
	hi := math.Ldexp(1, hiE) // !ok(hi), or +Inf
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
// (Bun–Steinke 2016, Prop. 1.4). NaN for NaN or negative input; +Inf when
// ε²/2 overflows (above ~1.9e154), which is the sound side.
func PureToRho(eps float64) float64 {
	if !(eps >= 0) {
		return math.NaN()
	}
	return eps * eps / 2
}

// BoundedRangeToRho returns ε²/8: an ε-bounded-range mechanism (the
// exponential mechanism) is ε²/8-zCDP (Cesar and Rogers 2021, Lemma 3.2,
// after Durfee and Rogers 2019). The product rounds as PureToRho's (the
// division by 8 is exact).
func BoundedRangeToRho(eps float64) float64 {
	if !(eps >= 0) {
		return math.NaN()
	}
	return eps * eps / 8
}

// validTarget reports whether (ε, δ) is a target the inverses calibrate to:
// 0 < ε ≤ MaxEps (which also rules out NaN and +Inf) and 0 < δ < 1.
func validTarget(eps, delta float64) bool {
	return eps > 0 && eps <= MaxEps && delta > 0 && delta < 1
}
