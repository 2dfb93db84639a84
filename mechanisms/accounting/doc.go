// Package accounting holds the privacy measures, conversions and composition
// rules shared by every privnotes mechanism. It is pure math: no I/O, no
// randomness, no clocks.
//
// A mechanism reports its cost as an [Event] in its native measure:
//
//   - pure ε-DP (Laplace, sparse vector, exponential mechanism),
//   - approximate (ε, δ)-DP (stability-based steps),
//   - ρ-zCDP (Bun–Steinke 2016),
//   - μ-GDP (Dong–Roth–Su 2022), which is exact for the Gaussian mechanism.
//
// The conversions between measures are the standard ones:
//
//   - ρ-zCDP → (ε, δ): the classic ε = ρ + 2√(ρ ln(1/δ)) (Bun–Steinke 2016,
//     Prop. 1.3) and the tighter bound of Canonne, Kamath and Steinke (2020,
//     "The Discrete Gaussian for Differential Privacy", Prop. 12/Cor. 13),
//     δ = inf_{α>1} exp((α−1)(αρ−ε))·(1−1/α)^(α−1)/α, minimised numerically.
//   - μ-GDP → (ε, δ): the exact curve δ(ε) = Φ(−ε/μ+μ/2) − e^ε·Φ(−ε/μ−μ/2)
//     (Dong–Roth–Su, Cor. 2.13), evaluated through the Mills ratio so that
//     neither e^ε overflows nor the difference cancels.
//   - pure ε → ε²/2-zCDP (Bun–Steinke, Prop. 1.4); μ-GDP → μ²/2-zCDP.
//
// Every numerical inverse returns the side of the root that keeps the
// guarantee sound: an ε or δ reported for a cost is never smaller than the true
// bound's value by more than rounding, and a ρ or μ calibrated to a target
// never spends more than the target.
//
// Every function returns promptly for every float64 input (the searches are
// bounded, not only convergent), with an answer on the safe side or a
// documented sentinel: NaN for an invalid argument, +Inf for an ε beyond
// float64, 0 for a ρ or μ no positive float64 meets. Costs and targets
// above [MaxEps] (and ρ above [MaxRho], μ above [MaxMu]) are refused by
// [Event.Validate] with an error, hence by every Accountant; the inverses
// return NaN for such targets.
//
// An [Accountant] composes events for a session and refuses, before anything
// runs, a spend that would exceed the session's (ε, δ) budget. Its default
// mode composes in zCDP and is sound under fully adaptive composition
// (a privacy filter); see [Mode] for the other modes and their conditions,
// among them [ModeGDP], the Gaussian-DP filter (Smith–Thakurta 2022) that
// prices every event by a μ that dominates it ([PureToMu] for pure ε) and
// refuses events without one, and [ModeRDP], a Rényi-DP filter at one
// order fixed from the budget ([RDPOrder]) run together with the pure-ε
// filter, which charges pure events their tight Rényi curve ([PureRDP],
// [BoundedRangeRDP]) and pure sessions their basic composition.
// Its running totals are exact, and [Accountant.State] snapshots them in a
// form that [Resume] continues from and that encodes to text exactly, so a
// durable ledger need not replay its history to compose the next charge.
//
// [Neighbour] names the neighbouring relation a mechanism's sensitivity is
// computed under; it lives here because every mechanism shares it.
package accounting
