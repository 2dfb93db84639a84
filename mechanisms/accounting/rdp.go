package accounting

// The Rényi-DP filter: ModeRDP composes every event's Rényi divergence at
// one order α₀, fixed from the budget before anything is spent, and also
// keeps the pure-ε sum; it admits a spend while either the Rényi sum stays
// within B(α₀) or, for sessions of pure events only, the ε sum stays
// within the budget's ε.
//
// Sources. Feldman and Zrnic, "Individual Privacy Accounting via a Rényi
// Filter" (NeurIPS 2021, arXiv 2008.11193), §3: at a fixed order α, a
// sequence of mechanisms whose RDP parameters ρ_t(α) are chosen adaptively
// (each may depend on earlier outputs) is (α, B)-RDP as long as
// Σ_t ρ_t(α) ≤ B almost surely; the proof is that
// exp((α−1)(L_t − Σ_{i≤t} ρ_i(α))) is a non-negative supermartingale under
// the first data set, L_t being the privacy loss. Lécuyer, "Practical
// Privacy Filters and Odometers with Rényi Differential Privacy" (2021,
// arXiv 2103.01379) runs one such filter per order over a finite set of
// orders and pays for the choice among them with a union bound on δ. Here
// the set is {α₀, ∞}; the order ∞ is the pure-ε filter (Rogers, Roth,
// Ullman and Vadhan 2016), whose privacy loss is bounded by Σε_i surely, so
// its share of δ is zero and α₀ keeps all of δ (docs/accounting.md §3
// "The rdp accountant" gives the proof). The conversion at α₀ is that of
// Canonne, Kamath and Steinke 2020, Prop. 12, which the proof applies
// pointwise.
//
// Curves (the RDP ρ(α) each event is charged, an upper bound at every
// order): pure ε-DP (also the exact curve of a discrete Laplace release
// whose neighbouring inputs differ by one lattice step): that of randomized
// response, the worst ε-DP pair for every Rényi order (any ε-DP pair is a
// post-processing of it); bounded range ε: the smaller of that and αε²/8
// (Cesar and Rogers 2021); ρ-zCDP (Gaussian or not): αρ; μ-GDP: αμ²/2.
// Approximate (ε, δ) events have no Rényi bound and are refused.

import (
	"fmt"
	"math"
	"strconv"
)

// rdpOrderBits is the precision, in significant bits, of α₀ − 1: the order
// is a short binary fraction so that every machine derives the same α₀
// from a budget (a ledger replays its charges and compares the totals
// exactly); the optimum is flat, and 8 bits cost under 10⁻⁵ of ρ*.
const rdpOrderBits = 8

// rdpPriceBits is the precision of each event's price: rounded up to 32
// significant bits after a relative margin of 10⁻¹² (the curves are
// accurate to a few ulps), so that machines whose math libraries differ in
// the last bit still compute the same price and the same exact sums.
const (
	rdpPriceBits   = 32
	rdpPriceMargin = 1e-12
)

// rdpBound returns B(α) = ε − ln(1−1/α) − (ln(1/δ) − ln α)/(α−1) for
// α = 1 + a: the largest Rényi divergence at order α that the conversion
// of Canonne, Kamath and Steinke (2020, Prop. 12) turns into (ε, δ)-DP.
// ln(1−1/α) is −log1p(1/a) and ln α is log1p(a), accurate at both ends.
func rdpBound(a, eps, delta float64) float64 {
	return eps + math.Log1p(1/a) - (-math.Log(delta)-math.Log1p(a))/a
}

// rdpEps is rdpBound's inverse in ε: the ε at which a mechanism that is
// (1+a, r)-RDP is (ε, δ)-DP, r + ln(1−1/α) + (ln(1/δ) − ln α)/(α−1).
func rdpEps(a, r, delta float64) float64 {
	return r - math.Log1p(1/a) + (-math.Log(delta)-math.Log1p(a))/a
}

// RDPOrder returns the Rényi order α₀ at which the rdp accountant composes
// for a budget (ε, δ), δ > 0: the order whose bound B(α) allows the largest
// zCDP-equivalent B(α)/α, so that a session of zCDP events is admitted
// as far as under the zcdp accountant (to 10⁻⁵ relative), with α₀ − 1
// rounded to 8 significant bits. It depends on the budget alone, never on
// what is spent. NaN for an invalid budget.
func RDPOrder(budget Budget) float64 {
	eps, delta := budget.Eps, budget.Delta
	if !(eps > 0) || math.IsInf(eps, 1) || !(delta > 0 && delta < 1) {
		return math.NaN()
	}
	perRho := func(a float64) float64 { return rdpBound(a, eps, delta) / (1 + a) }
	// The classic conversion's optimum α − 1 = √(ln(1/δ)/ρ) starts the search.
	t0 := 0.5 * (math.Log(-math.Log(delta)) - math.Log(RhoForTargetClassic(math.Min(eps, MaxEps), delta)))
	var bestT float64
	best := math.Inf(1)
	minimize1D(func(t float64) float64 {
		v := -perRho(math.Exp(t))
		if v < best {
			best, bestT = v, t
		}
		return v
	}, t0)
	// Round α − 1 to rdpOrderBits bits, keeping the better neighbour.
	frac, exp := math.Frexp(math.Exp(bestT))
	lo := math.Ldexp(math.Floor(math.Ldexp(frac, rdpOrderBits)), exp-rdpOrderBits)
	hi := math.Ldexp(math.Ceil(math.Ldexp(frac, rdpOrderBits)), exp-rdpOrderBits)
	a := lo
	if !(lo > 0) || perRho(hi) > perRho(lo) {
		a = hi
	}
	if !(a > 0) || math.IsInf(a, 0) {
		return 2
	}
	return 1 + a
}

// PureRDP returns the Rényi divergence of order α > 1 of randomized
// response with parameter ε,
//
//	ρ(α) = ln((e^{αε} + e^{−(α−1)ε})/(1 + e^ε))/(α − 1),
//
// the largest D_α over the pairs of output distributions of every ε-DP
// mechanism: every ε-DP pair is a post-processing of this one (the
// trade-off function of ε-DP is randomized response's, Dong, Roth and Su
// 2022, Prop. 2.5, and Blackwell's theorem), and Rényi divergence cannot
// grow by post-processing. It is also exactly the curve of a discrete
// Laplace release whose two inputs differ by one lattice step (its
// privacy loss takes the values ±ε with randomized response's
// probabilities). It lies below min(ε, αε²/2). Written as
// ε + (log1p(e^{−(2α−1)ε}) − log1p(e^{−ε}))/(α−1), which neither
// overflows nor loses ε's scale. NaN for ε < 0, α ≤ 1 or NaN.
func PureRDP(eps, alpha float64) float64 {
	if r, edge := rdpEdge(eps, alpha); edge {
		return r
	}
	a := alpha - 1
	r := eps + (math.Log1p(math.Exp(-(2*a+1)*eps))-math.Log1p(math.Exp(-eps)))/a
	return math.Max(0, math.Min(r, eps))
}

// rdpEdge is the value both Rényi curves take at the edges of their
// domain (edge set): NaN for ε < 0, α ≤ 1 or NaN; 0 at ε = 0; +Inf at
// ε = +Inf; and ε at α = +Inf (the order ∞ divergence of an ε-DP pair).
func rdpEdge(eps, alpha float64) (r float64, edge bool) {
	switch {
	case !(eps >= 0) || !(alpha > 1):
		return math.NaN(), true
	case eps == 0:
		return 0, true
	case math.IsInf(eps, 1):
		return math.Inf(1), true
	case math.IsInf(alpha, 1):
		return eps, true
	}
	return 0, false
}

// BoundedRangeRDP returns the largest Rényi divergence of order α > 1 over
// the pairs of output distributions of ε-bounded-range mechanisms (the
// exponential mechanism). For such a pair the privacy loss L lies in an
// interval [t−ε, t] with 0 ≤ t ≤ ε and E_Q[e^L] = 1; e^{αL} is convex in
// e^L, so E_Q[e^{αL}] = e^{(α−1)D_α} is largest when L sits on the two
// endpoints, i.e. for the binary pair with Q-mass q_t = (1 − e^{t−ε})/
// (e^t(1 − e^{−ε})) on loss t. As a function of u = e^t,
// E(u) = A·u^α + c·u^{α−1} with k = e^{−ε}, c = (1−k^α)/(1−k) and
// A = k^α − ck < 0, whose only critical point on u > 0 is the maximum
// u* = (α−1)(1−k^α)/(α(k−k^α)); the supremum over t ∈ [0, ε] is at u*
// clamped to [1, e^ε]. The result never exceeds PureRDP (an ε-BR mechanism
// is ε-DP) nor αε²/8 (Cesar and Rogers 2021). NaN for ε < 0, α ≤ 1 or NaN.
func BoundedRangeRDP(eps, alpha float64) float64 {
	if r, edge := rdpEdge(eps, alpha); edge {
		return r
	}
	a := alpha - 1
	// ln u* = ln(a/α) + ln(1 − e^{−αε}) + ε − ln(1 − e^{−aε}), through expm1.
	t := math.Log(a/alpha) + math.Log(-math.Expm1(-alpha*eps)) + eps - math.Log(-math.Expm1(-a*eps))
	t = math.Max(0, math.Min(eps, t))
	q := -math.Expm1(t-eps) / (math.Exp(t) * -math.Expm1(-eps))
	// E = q e^{αt} + (1−q) e^{α(t−ε)}, in logarithms: αt + ln(q + (1−q)e^{−αε}).
	r := (alpha*t + math.Log(q+(1-q)*math.Exp(-alpha*eps))) / a
	return math.Max(0, math.Min(r, eps))
}

// rdpCurveSlack bounds the absolute rounding error of PureRDP and
// BoundedRangeRDP at order 1+a: their last step divides a logarithm of a
// number of order 1 (error a few 1e-16) by a.
func rdpCurveSlack(a float64) float64 { return 4e-15 / a }

// rdpPrice returns the Rényi divergence at order α = 1+a that the rdp
// accountant charges for e, rounded up (rdpPriceBits), or ok = false when e
// has no Rényi bound (approximate events). Every event is charged at most
// α times its zCDP price e.rho() (ρ-zCDP is (α, αρ)-RDP at every order),
// so the rdp accountant admits whatever the zcdp accountant admits (up to
// the roundings of α₀ and of the prices); pure events are charged the
// smaller of that and PureRDP.
func (e Event) rdpPrice(alpha float64) (r float64, ok bool) {
	if e.Kind == ApproxDP {
		return 0, false
	}
	r = alpha * e.rho()
	if e.Kind == PureDP {
		curve := PureRDP(e.Eps, alpha)
		if e.BoundedRange {
			curve = math.Min(curve, BoundedRangeRDP(e.Eps, alpha))
		}
		r = math.Min(r, curve+rdpCurveSlack(alpha-1))
	}
	if math.IsNaN(r) {
		return 0, false
	}
	return roundUpBits(r*(1+rdpPriceMargin), rdpPriceBits), true
}

// roundUpBits returns the smallest float64 ≥ x with at most bits
// significant bits (x itself for 0 and +Inf), and the smallest positive
// such number for subnormal x.
func roundUpBits(x float64, bits int) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	frac, exp := math.Frexp(x)
	return math.Ldexp(math.Ceil(math.Ldexp(frac, bits)), exp-bits)
}

// rdpAdmissible explains why the rdp accountant cannot compose e, or
// returns nil.
func rdpAdmissible(e Event, alpha float64) error {
	if _, ok := e.rdpPrice(alpha); ok {
		return nil
	}
	return fmt.Errorf("accounting: the rdp accountant composes Rényi divergences and cannot compose this %s event (%s): an (ε, δ) guarantee with δ > 0 has no Rényi-DP bound; register the dataset with the zcdp accountant to run it", e.Kind, e)
}

// rdpCost is the composed cost of an rdp accountant's totals at the
// budget's δ: the smaller of the Rényi branch's ε at α₀ and, if every event
// was pure, Σε_i (then at δ = 0).
func rdpCost(t *totals, D float64) Budget {
	eps := rdpEps(t.order-1, t.rdp.floatUp(), D)
	if t.impure == 0 {
		if pure := t.pureEps.floatUp(); pure <= eps {
			return Budget{Eps: pure, Delta: 0}
		}
	}
	return Budget{Eps: math.Max(eps, 0), Delta: D}
}

// orderText is the exact text of a Rényi order (hexadecimal float).
func orderText(alpha float64) string { return strconv.FormatFloat(alpha, 'x', -1, 64) }

// parseOrder reads orderText's output back: a finite order above 1 in
// canonical form.
func parseOrder(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 1) || math.IsInf(v, 0) || orderText(v) != s {
		return 0, fmt.Errorf("bad Rényi order %q", s)
	}
	return v, nil
}
