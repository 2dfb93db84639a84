// The amplification-by-shuffling bound private Oja relies on: Liu, Kong,
// Jain and Oh (seed 002), Theorem D.1 (L556–560), quoted from Feldman,
// McMillan and Talwar, "Hiding among the clones" (FOCS 2021), Theorems 3.1
// and 3.8, in the explicit form of spec dppca.md §1 ("Shuffling
// amplification") and the calibration of §3 ([CHOICE] steps 1–3). Pure
// functions of public numbers: they read no data.

package dppca

import (
	"fmt"
	"math"
)

// ShuffleMaxLocalEps caps the local ε0 of each step: the classical Gaussian
// mechanism (Lemma 2.4) that makes a step an (ε0, δ0) local randomizer
// holds for ε0 < 1 only (spec §3, "cap at ε0 → 1").
const ShuffleMaxLocalEps = 0.999

// shuffleDeltaMargin multiplies the δ0-term of Theorem 3.8,
// (e^ε + 1)(1 + e^−ε0/2)·n·δ0, whose constant the spec asks to check
// against [30] and which we could not check against the paper's text here:
// a 4× margin costs about 2% of noise (δ0 enters α only through
// √ln(1.25/δ0)).
const shuffleDeltaMargin = 4

// ShuffleLocalEpsLimit is the largest local ε0 for which the bound holds
// for n records at δ: ln(n/(16·ln(4/δ))) (the reference code's condition,
// stricter than the paper's ln(2/δ)). It is ≤ 0 when n < 16·ln(4/δ):
// then no ε0 > 0 is covered.
func ShuffleLocalEpsLimit(n int, delta float64) float64 {
	return math.Log(float64(n) / (16 * math.Log(4/delta)))
}

// ShuffledEps returns the central ε of n adaptive ε0-DP local randomizers
// run on a uniformly shuffled input, at the shuffling's δ:
//
//	ε = ln(1 + b/d′·(a′ + c′)),  a′ = 8·√(e^ε0·ln(4/δ)/n),  c′ = 8·e^ε0/n,
//	b = 1 − e^−ε0,  d′ = 1 + e^−ε0/(1 + a′ + c′),
//
// valid for 0 < ε0 ≤ ShuffleLocalEpsLimit(n, δ); outside it, or for
// parameters that are not finite, it returns an error. It is increasing in
// ε0 and decreasing in n. (At n = 1e6, δ = 1e-7: ε0 = 1/2 gives ε ≈ 0.0106,
// ε0 = 1 gives ε ≈ 0.026; spec §3.)
func ShuffledEps(n int, eps0, delta float64) (float64, error) {
	if n < 1 || !(delta > 0 && delta < 1) || !(eps0 > 0) || math.IsInf(eps0, 0) {
		return 0, fmt.Errorf("dppca shuffle bound: need n ≥ 1, 0 < delta < 1 and a finite eps0 > 0 (got n=%d, eps0=%v, delta=%v)", n, eps0, delta)
	}
	if lim := ShuffleLocalEpsLimit(n, delta); eps0 > lim {
		return 0, fmt.Errorf("dppca shuffle bound: eps0=%v exceeds ln(n/(16·ln(4/δ))) = %.4g at n=%d, delta=%v: the bound does not hold", eps0, lim, n, delta)
	}
	return shuffledEps(float64(n), eps0, delta), nil
}

// shuffledEps is the formula of ShuffledEps without the checks.
func shuffledEps(n, eps0, delta float64) float64 {
	e0 := math.Exp(eps0)
	a := 8 * math.Sqrt(e0*math.Log(4/delta)/n)
	c := 8 * e0 / n
	b := -math.Expm1(-eps0)
	d := 1 + math.Exp(-eps0)/(1+a+c)
	return math.Log1p(b / d * (a + c))
}

// shuffleMaxEps is the largest central ε the bound certifies for n records
// at δ (the shuffling's δ), with ε0 at its cap min(ShuffleMaxLocalEps,
// ShuffleLocalEpsLimit); 0 when no ε0 > 0 is covered.
func shuffleMaxEps(n int, delta float64) float64 {
	e0 := min(ShuffleMaxLocalEps, ShuffleLocalEpsLimit(n, delta))
	if !(e0 > 0) {
		return 0
	}
	return shuffledEps(float64(n), e0, delta)
}

// ShuffleCalibration is the calibration of private Oja with shuffling for
// a target (ε, δ) on n records (spec §3 [CHOICE]): the shuffling bound at
// δ̂ = δ/2 with the largest local ε0 < 1 whose ε̂ is ≤ ε, and δ0 small
// enough that the δ0-term of Theorem 3.8 is ≤ δ/2. Every step then adds
// Gaussian noise of Multiplier·(2β) to its gradient clipped to β, and the
// shuffled run is (ε̂ ≤ ε, δ̂ + δ/2 = δ)-DP.
type ShuffleCalibration struct {
	Records     int     // n, the number of steps (public)
	Eps, Delta  float64 // the target
	LocalEps    float64 // ε0 of each step
	LocalDelta  float64 // δ0 of each step
	ShuffleEps  float64 // ε̂, the bound at ε0 (≤ Eps)
	ShuffleDelt float64 // δ̂ = Delta/2
	// Multiplier is α = √(2·ln(1.25/δ0))/ε0, the Gaussian std per unit of
	// the step's ℓ2 sensitivity 2β.
	Multiplier float64
}

// ShuffleRegimeError refuses a target (ε, δ) outside the shuffling bound's
// regime ε = O(√(ln(n/δ)/n)) (Lemma 3.1): at n records the bound certifies
// at most MaxEps. MinRecords..MaxRecords is the range of record counts at
// which the bound reaches Eps (MaxRecords = 0: no count does).
type ShuffleRegimeError struct {
	Eps, Delta, MaxEps     float64
	Records                int
	MinRecords, MaxRecords int
}

func (e *ShuffleRegimeError) Error() string {
	s := fmt.Sprintf("the shuffling bound (Feldman, McMillan and Talwar, Thm 3.8) certifies at most eps=%.4g for n=%d records at delta=%v (local eps0 < 1), so eps=%v is outside its regime eps = O(√(ln(n/δ)/n))",
		e.MaxEps, e.Records, e.Delta, e.Eps)
	if e.MaxRecords > 0 {
		return s + fmt.Sprintf("; it reaches eps=%v only for %d ≤ n ≤ %d records", e.Eps, e.MinRecords, e.MaxRecords)
	}
	return s + fmt.Sprintf("; it reaches eps=%v for no n at delta=%v", e.Eps, e.Delta)
}

// CalibrateShuffle inverts the shuffling bound for planning: the local
// (ε0, δ0) and noise multiplier that make n shuffled private-Oja steps
// (ε, δ)-DP, or a *ShuffleRegimeError when ε exceeds what the bound
// certifies at n (then a larger ε buys nothing: use DP-PCA or Eq. 7).
// ε and δ must be in (0, 1). It reads no data.
func CalibrateShuffle(eps, delta float64, n int) (ShuffleCalibration, error) {
	if n < 1 || n > MaxRows || !(eps > 0 && eps < 1) || !(delta > 0 && delta < 1) {
		return ShuffleCalibration{}, fmt.Errorf("dppca shuffle calibration: need 1 ≤ n ≤ 2^30, 0 < eps < 1 and 0 < delta < 1 (got n=%d, eps=%v, delta=%v)", n, eps, delta)
	}
	dHat := delta / 2
	cap0 := min(ShuffleMaxLocalEps, ShuffleLocalEpsLimit(n, dHat))
	// The formula is evaluated in floating point: a relative 1e-9 of slack
	// keeps the certified ε̂ below the target whatever its rounding.
	maxEps := 0.0
	if cap0 > 0 {
		maxEps = shuffledEps(float64(n), cap0, dHat)
	}
	if !(eps <= maxEps) {
		lo, hi := shuffleRegime(eps, dHat)
		return ShuffleCalibration{}, &ShuffleRegimeError{Eps: eps, Delta: delta, MaxEps: maxEps,
			Records: n, MinRecords: lo, MaxRecords: hi}
	}
	// Bisect for the largest ε0 in (0, cap0] whose bound is ≤ ε (the bound
	// increases in ε0 and is 0 at 0). The formula is evaluated in floating
	// point: a relative 1e-9 of slack keeps the certified ε̂ below the
	// target whatever its rounding.
	fits := func(e0 float64) bool { return shuffledEps(float64(n), e0, dHat)*(1+1e-9) <= eps }
	lo, hi := 0.0, cap0
	for range 200 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	e0 := lo
	if !(e0 > 0) {
		return ShuffleCalibration{}, fmt.Errorf("dppca shuffle calibration: eps=%v is too small for n=%d records (the local eps0 underflows)", eps, n)
	}
	// δ0-term of Theorem 3.8 at most δ/2, evaluated at the target ε ≥ ε̂
	// (the term grows with ε), with the margin above.
	d0 := (delta / 2) / (shuffleDeltaMargin * float64(n) * (math.Exp(eps) + 1) * (1 + math.Exp(-e0)/2))
	return ShuffleCalibration{
		Records: n, Eps: eps, Delta: delta, LocalEps: e0, LocalDelta: d0,
		ShuffleEps: shuffledEps(float64(n), e0, dHat), ShuffleDelt: dHat,
		Multiplier: math.Sqrt(2*math.Log(1.25/d0)) / e0,
	}, nil
}

// shuffleRegime returns the range [lo, hi] of record counts n ≤ MaxRows at
// which the bound certifies ε at δ̂ (hi = 0: none). shuffleMaxEps rises
// with n while the validity cap ln(n/(16 ln(4/δ̂))) binds and falls after
// it, from nFull, the smallest n where the cap reaches ShuffleMaxLocalEps.
func shuffleRegime(eps, dHat float64) (lo, hi int) {
	nFull := int(math.Ceil(16 * math.Log(4/dHat) * math.Exp(ShuffleMaxLocalEps)))
	nFull = min(max(nFull, 1), MaxRows)
	reaches := func(n int) bool { return shuffleMaxEps(n, dHat) >= eps }
	if !reaches(nFull) {
		return 0, 0
	}
	// Smallest n ≤ nFull that reaches ε (the maximum rises up to nFull).
	a, b := 1, nFull
	for a < b {
		m := (a + b) / 2
		if reaches(m) {
			b = m
		} else {
			a = m + 1
		}
	}
	lo = a
	// Largest n ≥ nFull that reaches ε (the maximum falls after nFull).
	a, b = nFull, MaxRows
	for a < b {
		m := a + (b-a+1)/2
		if reaches(m) {
			a = m
		} else {
			b = m - 1
		}
	}
	return lo, a
}
