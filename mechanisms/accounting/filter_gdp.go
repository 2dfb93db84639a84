package accounting

// The μ-GDP filter: ModeGDP admits events while Σμ_i² ≤ μ_B², where μ_B is
// the largest μ whose exact (ε, δ(ε)) curve meets the budget (MuForTarget).
//
// Sound under fully adaptive composition (each μ_i may be chosen after
// seeing earlier outputs): Smith and Thakurta, "Fully Adaptive Composition
// for Gaussian Differential Privacy" (2022, arXiv 2210.17520), and Koskela,
// Tobaben and Honkela, "Individual Privacy Accounting with Gaussian
// Differential Privacy" (ICLR 2023, arXiv 2209.15596), whose filter states
// the same condition. Both hypotheses are that every admitted step is μ_i-GDP given
// the past; this file prices each admitted event by a μ that provably
// dominates it (Dong, Roth and Su, "Gaussian Differential Privacy", JRSS-B
// 2022), and refuses events that have no GDP bound. Proofs:
// docs/accounting.md §3 "The gdp accountant".

import (
	"fmt"
	"math"
)

// maxPureForGDP is the largest pure ε the GDP filter prices: beyond it
// 1/(1+e^ε) underflows and PureToMu could not be rounded up reliably. A
// pure step of ε = 700 already exceeds every meaningful budget.
const maxPureForGDP = 700

// PureToMu returns the smallest μ such that every ε-DP mechanism is μ-GDP:
// μ = 2·Φ⁻¹(e^ε/(1+e^ε)) = −2·Φ⁻¹(1/(1+e^ε)), rounded up so that
// Φ(−μ/2) ≤ 1/(1+e^ε) holds with a relative margin of 1e-12. (An ε-DP mechanism is
// f_{ε,0}-DP, Dong–Roth–Su Prop. 2.5; f_{ε,0} ≥ G_μ reduces to the single
// point α* = 1/(1+e^ε), see docs/accounting.md.) It returns NaN for NaN or
// negative ε, 0 for ε = 0 and +Inf above ε = 700.
func PureToMu(eps float64) float64 {
	switch {
	case !(eps >= 0):
		return math.NaN()
	case eps == 0:
		return 0
	case eps > maxPureForGDP:
		return math.Inf(1)
	}
	// The condition Φ(−μ/2) ≤ q = 1/(1+e^ε), with Φ(−x) = erfc(x/√2)/2,
	// is evaluated where it is accurate: for small ε as
	// erf(μ/(2√2)) ≥ 1 − 2q = tanh(ε/2) (1 − 2q would cancel), else as
	// erfc(μ/(2√2)) ≤ 2q with q through e^{−ε} (no overflow). erf and erfc
	// are accurate to a few ulps, so each is demanded with a relative
	// margin of 1e-12, which moves μ far less than the budget tolerance.
	var ok func(m float64) bool
	if th := math.Tanh(eps / 2); th < 0.5 {
		ok = func(m float64) bool { return math.Erf(m/(2*math.Sqrt2)) >= th*(1+1e-12) }
	} else {
		em := math.Exp(-eps)
		twoQ := 2 * em / (1 + em)
		ok = func(m float64) bool { return math.Erfc(m/(2*math.Sqrt2)) <= twoQ*(1-1e-12) }
	}
	// ok is monotone (false at 0); bracket and bisect, returning the end
	// where it holds.
	lo, hi := 0.0, 1.0
	for i := 0; !ok(hi); i++ {
		if i > 64 {
			return math.Inf(1)
		}
		lo, hi = hi, 2*hi
	}
	for i := 0; i < 200 && hi-lo > 1e-15*hi; i++ {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// PureForMu returns the largest ε (to within ~1e-10 relative, rounded
// down) whose pure ε-DP steps are μ-GDP: PureToMu(PureForMu(μ)) ≤ μ. It
// inverts μ = 2Φ⁻¹(e^ε/(1+e^ε)), i.e. ε = ln(Φ(μ/2)/Φ(−μ/2)), computed as
// 2·atanh(erf(μ/(2√2))) where the erf is small and as ln(2/erfc − 1)
// beyond, then stepped down until PureToMu confirms it. It returns NaN for
// NaN or negative μ and 0 for μ = 0. Mechanisms that split a GDP budget
// between pure steps and Gaussian releases (the adaptive power method's
// sparse vector) calibrate their ε with it.
func PureForMu(mu float64) float64 {
	switch {
	case !(mu >= 0):
		return math.NaN()
	case mu == 0:
		return 0
	}
	x := mu / (2 * math.Sqrt2)
	var eps float64
	if e := math.Erf(x); e < 0.5 {
		eps = 2 * math.Atanh(e)
	} else {
		eps = math.Log(2/math.Erfc(x) - 1)
	}
	eps = math.Min(eps, maxPureForGDP)
	for i := 0; i < 200 && eps > 0 && !(PureToMu(eps) <= mu); i++ {
		eps *= 1 - 1e-10
	}
	if !(PureToMu(eps) <= mu) {
		return 0
	}
	return eps
}

// gdpPrice returns μ² of the μ that dominates e for the GDP filter, as an
// unevaluated product hi+lo (exact for GDP events, so that rounding never
// lowers a cost), or ok = false when e has no GDP bound.
//
//   - GDP event: μ², exact.
//   - ZCDP event marked Gaussian: 2ρ (exact). Such an event is a
//     composition of Gaussian releases on the project's samplers, each of
//     which is μ_i-GDP with μ_i² = 2ρ_i (mechanisms/noise calibrates its
//     slack so that the discrete Gaussian is dominated; see
//     noise.GaussianSlack), and Σμ_i² = 2ρ.
//   - pure ε: PureToMu(ε)².
//   - approximate (ε, δ) and other zCDP events: none. A δ > 0 guarantee
//     allows a failure event of probability δ that no μ-GDP bound permits,
//     and ρ-zCDP does not imply μ-GDP for any μ.
func (e Event) gdpPrice() (hi, lo float64, ok bool) {
	switch e.Kind {
	case GDP:
		hi, lo = squareUp(e.Mu)
		return hi, lo, true
	case ZCDP:
		if !e.Gaussian {
			return 0, 0, false
		}
		return 2 * e.Rho, 0, true // exact: ρ ≤ MaxRho
	case PureDP:
		mu := PureToMu(e.Eps)
		if math.IsInf(mu, 0) || math.IsNaN(mu) {
			return 0, 0, false
		}
		hi, lo = squareUp(mu)
		return hi, lo, true
	}
	return 0, 0, false
}

// squareUp returns hi+lo ≥ μ² for μ > 0: the exact product as an
// unevaluated sum (FMA), except where the low part falls into the
// subnormal range and may round down; there one more smallest subnormal
// keeps the sum on the safe side (and μ² > 0 even when μ² underflows).
func squareUp(mu float64) (hi, lo float64) {
	hi = mu * mu
	lo = math.FMA(mu, mu, -hi)
	if hi < 0x1p-960 {
		lo += math.SmallestNonzeroFloat64
	}
	return hi, lo
}

// gdpAdmissible explains why the GDP filter cannot compose e, or returns nil.
func gdpAdmissible(e Event) error {
	if _, _, ok := e.gdpPrice(); ok {
		return nil
	}
	why := "it has no μ-GDP bound"
	switch {
	case e.Kind == ApproxDP:
		why = "an (ε, δ) guarantee with δ > 0 has no μ-GDP bound"
	case e.Kind == ZCDP:
		why = "its mechanism is not a composition of Gaussian releases, and ρ-zCDP implies no μ-GDP bound"
	case e.Kind == PureDP:
		why = fmt.Sprintf("a pure ε above %d is beyond what the GDP filter prices", maxPureForGDP)
	}
	return fmt.Errorf("accounting: the gdp accountant composes μ-GDP costs and cannot compose this %s event (%s): %s; register the dataset with the zcdp accountant to run it", e.Kind, e, why)
}

// gdpMu returns √Σμ² rounded up from the exact sum.
func gdpMu(t *totals) float64 {
	s := t.muSq.float()
	s = math.Nextafter(s, math.Inf(1)) // the float64 nearest the sum may lie below it
	return math.Nextafter(math.Sqrt(s), math.Inf(1))
}

// Pricing describes, for receipts and `%budget`, the filter that prices e
// in mode m and the amount it charges, e.g. "GDP filter μ=0.2472" or
// "zCDP filter ρ=0.03056".
func (m Mode) Pricing(e Event) string {
	switch m {
	case ModeGDP:
		hi, lo, ok := e.gdpPrice()
		if !ok {
			return "GDP filter: not composable"
		}
		return fmt.Sprintf("GDP filter μ=%.4g", math.Sqrt(hi+lo))
	case ModeRDP:
		// The order comes from the budget, which a Mode does not know:
		// Accountant.Pricing states the amount.
		if _, ok := e.rdpPrice(2); !ok {
			return "Rényi filter: not composable"
		}
		return "Rényi filter at the data set's order"
	case ModeZCDP:
		s := fmt.Sprintf("zCDP filter ρ=%.4g", e.rho())
		if d := e.approxDelta(); d > 0 {
			s += fmt.Sprintf(" + δ=%.4g", d)
		}
		return s
	default:
		return fmt.Sprintf("basic composition ε=%.4g, δ=%.4g", e.Eps, e.Delta)
	}
}

// Filter describes the accountant's filter and where its running total
// stands in the filter's own measure, for `%budget`: "GDP filter
// Σμ²=0.978 of μ*²=1.009", "zCDP filter Σρ=0.431 of ρ*=0.52" or "basic
// composition Σε=1.3, Σδ=2e-06". μ* and ρ* are the largest totals the
// budget admits (MuForTarget, RhoForTarget at the δ left for conversion).
func (a *Accountant) Filter() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch a.mode {
	case ModeGDP:
		ms := MuForTarget(a.budget.Eps, a.budget.Delta)
		return fmt.Sprintf("GDP filter Σμ²=%.4g of μ*²=%.4g", a.tot.muSq.float(), ms*ms)
	case ModeRDP:
		alpha := a.tot.order
		s := fmt.Sprintf("Rényi filter at α=%.4g Σρ(α)=%.4g of B=%.4g", alpha, a.tot.rdp.float(), rdpBound(alpha-1, a.budget.Eps, a.budget.Delta))
		if a.tot.impure == 0 {
			s += fmt.Sprintf("; pure ε-DP filter Σε=%.4g of ε=%.4g", a.tot.pureEps.float(), a.budget.Eps)
		}
		return s
	case ModeZCDP:
		s := fmt.Sprintf("zCDP filter Σρ=%.4g", a.tot.rho.float())
		if conv := a.budget.Delta - a.tot.apDelta.float(); conv > 0 {
			s += fmt.Sprintf(" of ρ*=%.4g", RhoForTarget(a.budget.Eps, conv))
		}
		return s
	default:
		return fmt.Sprintf("basic composition Σε=%.4g, Σδ=%.4g", a.tot.eps.float(), a.tot.delta.float())
	}
}

// Pricing describes, for receipts, the amount the accountant charges for e
// in its own measure; it is Mode.Pricing with the rdp accountant's order,
// e.g. "Rényi filter ρ(α=5.711)=0.06423 (pure ε=0.3)".
func (a *Accountant) Pricing(e Event) string {
	if a.mode != ModeRDP {
		return a.mode.Pricing(e)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := e.rdpPrice(a.tot.order)
	if !ok {
		return "Rényi filter: not composable"
	}
	s := fmt.Sprintf("Rényi filter ρ(α=%.4g)=%.4g", a.tot.order, r)
	if e.Kind == PureDP {
		s += fmt.Sprintf(" (pure ε=%.4g)", e.Eps)
	}
	return s
}
