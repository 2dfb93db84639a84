package accounting

// Session accountant and privacy filter. Spec: ARCHITECTURE.md §5.
//
// ZCDP mode: Bun–Steinke 2016 (composition, pure → zCDP, approximate zCDP
// §8), converted by Canonne–Kamath–Steinke 2020; as a filter under fully
// adaptive composition: Whitehouse, Ramdas, Rogers and Wu, "Fully-Adaptive
// Composition in Differential Privacy" (ICML 2023, arXiv 2203.05481).
// Basic mode: as a filter, Rogers, Roth, Ullman and Vadhan, "Privacy
// Odometers and Filters: Pay-as-you-Go Composition" (NeurIPS 2016).
// GDP mode: the Gaussian-DP filter of Smith and Thakurta (2022); see
// filter_gdp.go.
// Legacy advanced rule (verification of old ledgers only): Kairouz, Oh and
// Viswanath, "The Composition Theorem for Differential Privacy" (ICML 2015),
// Thm 3.5 (heterogeneous events).

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync"
)

// Mode is the composition rule of an Accountant.
type Mode int

const (
	// ModeZCDP (default) sums zCDP costs: ρ of zCDP events, μ²/2 of GDP
	// events, ε²/2 of pure and approximate events; the δ's of approximate
	// events add (δ-approximate zCDP). The total is stated at the budget's δ:
	// ε = ZCDPToEps(Σρ, D − Σδ_i). Sound as a filter under fully adaptive
	// composition (each cost may depend on earlier outputs). Needs D > 0.
	ModeZCDP Mode = iota
	// ModeBasic sums ε and δ of each event's (ε, δ): pure and approximate
	// events as they are, zCDP and GDP events through the target they were
	// calibrated to (events without a target are refused). This is the
	// "paper" accounting; sound under fully adaptive composition
	// (Rogers–Roth–Ullman–Vadhan 2016), and the loosest.
	ModeBasic
	// ModeAdvanced is kept only for datasets registered with it by earlier
	// versions, and composes exactly as ModeBasic. It used to apply the
	// heterogeneous advanced composition theorem of Kairouz–Oh–Viswanath
	// (Thm 3.5) as a filter, but that theorem assumes every ε_i is fixed
	// before the session starts, while an analyst picks each call's ε after
	// seeing earlier results, a setting that needs filters of its own
	// (Rogers–Roth–Ullman–Vadhan 2016): as used it was unsound. Basic
	// composition is sound under fully adaptive choice and never smaller,
	// so an old dataset only becomes more conservative. New registrations
	// must not use it (the ledger refuses them); LegacyAdvancedVerifier
	// audits the charges recorded under the old rule.
	ModeAdvanced
	// ModeGDP sums the squares of the μ-GDP costs that dominate each event
	// (GDP events: μ; zCDP events marked Gaussian: √(2ρ); pure events:
	// PureToMu(ε)) and states the total at the budget's δ through the exact
	// GDP curve: ε = GDPEps(√Σμ_i², D). Events with no GDP bound
	// (approximate events, unmarked zCDP events) are refused. Sound as a
	// filter under fully adaptive composition (Smith–Thakurta 2022); the
	// tightest mode for Gaussian-only sessions. Needs D > 0.
	ModeGDP
	// ModeRDP is a Rényi-DP filter at one order α₀ = RDPOrder(budget),
	// fixed before anything is spent, together with the pure-ε filter: it
	// sums each event's Rényi divergence at α₀ (pure ε: randomized
	// response's curve, the tight one for every ε-DP mechanism; bounded
	// range: also at most αε²/8; zCDP: αρ; GDP: αμ²/2) and, while every
	// event is pure, Σε_i, and states the total as the smaller of
	// ε = Σr_i + ln(1−1/α₀) + (ln(1/D) − ln α₀)/(α₀−1) at δ = D and Σε_i at
	// δ = 0. Approximate events are refused. It admits every session the
	// zcdp accountant admits (up to 10⁻⁵ relative in the Rényi budget) and
	// charges pure and bounded-range events less. Sound as a filter under
	// fully adaptive composition (Feldman–Zrnic 2021, Lécuyer 2021; see
	// rdp.go). Needs D > 0.
	ModeRDP
)

// modeLegacyAdvanced is the rule ModeAdvanced enforced before it became
// basic composition. Only LegacyAdvancedVerifier builds an accountant with
// it; it is not a Mode anyone can name or parse.
const modeLegacyAdvanced Mode = -1

var modeNames = [...]string{ModeZCDP: "zcdp", ModeBasic: "basic", ModeAdvanced: "advanced", ModeGDP: "gdp", ModeRDP: "rdp"}

// String returns "zcdp", "basic", "advanced", "gdp" or "rdp".
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	if m == modeLegacyAdvanced {
		return "advanced (legacy rule)"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads "zcdp", "basic", "advanced", "gdp" or "rdp" (case-insensitive). It still
// accepts "advanced", which stored schemas of earlier versions name.
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("accounting: unknown accountant mode %q: use one of %s", s, strings.Join(modeNames[:], ", "))
}

// Budget is an (ε, δ) pair: a session's cap, or a cost expressed in (ε, δ).
type Budget struct{ Eps, Delta float64 }

func (b Budget) String() string { return fmt.Sprintf("ε=%.6g, δ=%.6g", b.Eps, b.Delta) }

// budgetTolerance is the relative slack when comparing a cost with the
// budget, so that a spend calibrated to exactly the remainder passes despite
// rounding in the sums and conversions.
const budgetTolerance = 1e-12

// ErrBudgetExceeded is matched by errors.Is for every *ExceededError.
var ErrBudgetExceeded = errors.New("BudgetExceeded")

// ExceededError is the refusal of a spend. All four values are (ε, δ):
// Requested is the cost of the refused events alone under the accountant's
// mode, Spent and Remaining describe the session before the refusal (they
// are unchanged by it), and WouldSpend is what Spent would have become.
type ExceededError struct {
	Requested, Spent, Remaining, Budget Budget
	WouldSpend                          Budget
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("BudgetExceeded: requested %s; spent %s; remaining %s of %s",
		e.Requested, e.Spent, e.Remaining, e.Budget)
}

// Is makes errors.Is(err, ErrBudgetExceeded) true.
func (e *ExceededError) Is(target error) bool { return target == ErrBudgetExceeded }

// exactSum adds float64s without rounding (2200 bits hold any sum of fewer
// than 2^100 doubles), so the composed cost is the same whatever the order
// of the events: the ledger may replay them in any order.
type exactSum struct{ v big.Float }

const exactPrec = 2200

func (s *exactSum) add(x float64) {
	if s.v.Prec() == 0 {
		s.v.SetPrec(exactPrec)
	}
	var t big.Float
	t.SetFloat64(x)
	s.v.Add(&s.v, &t)
}

func (s *exactSum) float() float64 {
	f, _ := s.v.Float64()
	return f
}

// floatUp returns the sum rounded up to a float64.
func (s *exactSum) floatUp() float64 {
	f, acc := s.v.Float64()
	if acc == big.Below {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

func (s *exactSum) clone() exactSum {
	var c exactSum
	c.v.SetPrec(exactPrec)
	c.v.Set(&s.v)
	return c
}

// totals are the running sums every mode needs; the composed cost is a
// function of these alone.
type totals struct {
	n       int64    // events composed
	rho     exactSum // ZCDP mode: Σρ_i
	apDelta exactSum // ZCDP mode: Σδ of approximate events
	eps     exactSum // Basic/Advanced: Σε_i of the (ε, δ) targets
	delta   exactSum // Basic/Advanced: Σδ_i
	epsTanh exactSum // legacy advanced rule only: Σε_i·tanh(ε_i/2)
	epsSq   exactSum // legacy advanced rule only: Σε_i²
	muSq    exactSum // GDP mode only: Σμ_i² of the dominating μ's
	order   float64  // RDP mode only: the Rényi order α₀ (0 in the other modes)
	rdp     exactSum // RDP mode only: Σ of the Rényi divergences at α₀
	pureEps exactSum // RDP mode only: Σε_i of the pure events
	impure  int64    // RDP mode only: events that are not pure ε-DP
}

func (t *totals) clone() totals {
	return totals{n: t.n, rho: t.rho.clone(), apDelta: t.apDelta.clone(), eps: t.eps.clone(), delta: t.delta.clone(),
		epsTanh: t.epsTanh.clone(), epsSq: t.epsSq.clone(), muSq: t.muSq.clone(),
		order: t.order, rdp: t.rdp.clone(), pureEps: t.pureEps.clone(), impure: t.impure}
}

// add composes e. Only the GDP mode sums μ² and only the RDP mode its
// Rényi and pure sums, so that the totals (and the State) of the other
// modes are exactly those of earlier versions; the caller has checked that
// e is admissible in mode m.
func (t *totals) add(e Event, m Mode) {
	if m == ModeGDP {
		hi, lo, _ := e.gdpPrice()
		t.muSq.add(hi)
		t.muSq.add(lo)
	}
	if m == ModeRDP {
		r, _ := e.rdpPrice(t.order)
		t.rdp.add(r)
		if e.Kind == PureDP {
			t.pureEps.add(e.Eps)
		} else {
			t.impure++
		}
	}
	t.n++
	t.rho.add(e.rho())
	t.apDelta.add(e.approxDelta())
	if e.HasTarget() {
		t.eps.add(e.Eps)
		t.delta.add(e.Delta)
		t.epsTanh.add(e.Eps * math.Tanh(e.Eps/2))
		t.epsSq.add(e.Eps * e.Eps)
	}
}

// cost is the composed (ε, δ) of the totals under mode m with budget δ cap D.
func (m Mode) cost(t *totals, D float64) Budget {
	if t.n == 0 {
		return Budget{}
	}
	switch m {
	case ModeBasic, ModeAdvanced:
		return Budget{Eps: t.eps.float(), Delta: t.delta.float()}
	case modeLegacyAdvanced:
		// Kairouz–Oh–Viswanath Thm 3.5 with all the δ left after Σδ_i as
		// the slack δ', never worse than Σε_i ((e^ε−1)/(e^ε+1) = tanh(ε/2)):
		//   ε = min{ Σε_i,
		//            Σε_i·tanh(ε_i/2) + √(2 Σε_i² · ln(e + √(Σε_i²)/δ')),
		//            Σε_i·tanh(ε_i/2) + √(2 Σε_i² · ln(1/δ')) },  δ = Σδ_i + δ'
		// exactly as earlier versions enforced it; see LegacyAdvancedVerifier.
		sumEps, sumDelta := t.eps.float(), t.delta.float()
		best := Budget{Eps: sumEps, Delta: sumDelta}
		if slack := D - sumDelta; slack > 0 {
			head, sq := t.epsTanh.float(), t.epsSq.float()
			e1 := head + math.Sqrt(2*sq*math.Log(math.E+math.Sqrt(sq)/slack))
			e2 := head + math.Sqrt(2*sq*-math.Log(slack))
			if e := math.Min(e1, e2); e < best.Eps {
				best = Budget{Eps: e, Delta: D}
			}
		}
		return best
	case ModeGDP:
		return Budget{Eps: GDPEps(gdpMu(t), D), Delta: D}
	case ModeRDP:
		return rdpCost(t, D)
	default: // ModeZCDP
		rho, apDelta := t.rho.float(), t.apDelta.float()
		conv := D - apDelta
		if conv <= 0 {
			return Budget{Eps: math.Inf(1), Delta: apDelta}
		}
		return Budget{Eps: ZCDPToEps(rho, conv), Delta: D}
	}
}

// Accountant composes a session's privacy costs and refuses spends that
// would exceed its budget. It is safe for concurrent use.
type Accountant struct {
	mu     sync.Mutex
	mode   Mode
	budget Budget
	events []Event // spent since NewAccountant, Replay or Resume
	tot    totals
	// spent caches mode.cost(&tot) (valid when cached): Spend has just
	// computed it, and Spent and Remaining after a Spend, as a ledger's
	// receipt asks, need not repeat a numerical conversion.
	spent  Budget
	cached bool
}

// cost returns the composed cost of a's totals; a.mu is held.
func (a *Accountant) cost() Budget {
	if !a.cached {
		a.spent, a.cached = a.mode.cost(&a.tot, a.budget.Delta), true
	}
	return a.spent
}

// NewAccountant returns an empty accountant. The budget needs ε > 0 finite
// and δ in [0, 1); ModeZCDP needs δ > 0 because a zCDP cost has no pure-ε
// guarantee (use ModeBasic for a pure-ε budget).
func NewAccountant(mode Mode, budget Budget) (*Accountant, error) {
	if mode < 0 || int(mode) >= len(modeNames) {
		return nil, fmt.Errorf("accounting: unknown accountant mode %d", int(mode))
	}
	return newAccountant(mode, budget)
}

// LegacyAdvancedVerifier returns an empty accountant whose Check and Spend
// apply the rule that ModeAdvanced enforced before it became basic
// composition: Kairouz–Oh–Viswanath's Thm 3.5 on the (ε_i, δ_i) targets with
// the budget's δ left after Σδ_i as slack, never worse than Σε_i. That rule
// is not sound when the ε_i are chosen adaptively, so nothing may be
// admitted with it. It exists for audits: replaying an old ledger's charges
// through it confirms that each was admitted by the rule in force when it
// was recorded. Every spend that ModeAdvanced admits now also passes it (its
// cost is never larger than the basic sum), so a ledger continued by this
// version still verifies. Its State equals that of any other mode.
func LegacyAdvancedVerifier(budget Budget) (*Accountant, error) {
	return newAccountant(modeLegacyAdvanced, budget)
}

func newAccountant(mode Mode, budget Budget) (*Accountant, error) {
	// A budget's ε is not capped by MaxEps: a cap above every possible
	// cost is harmless (no search depends on it), and budgets registered
	// before the cap existed must keep working.
	if math.IsNaN(budget.Eps) || math.IsInf(budget.Eps, 0) || budget.Eps <= 0 {
		return nil, fmt.Errorf("accounting: budget: ε must be a positive finite number, got %v", budget.Eps)
	}
	if math.IsNaN(budget.Delta) || budget.Delta < 0 || budget.Delta >= 1 {
		return nil, fmt.Errorf("accounting: budget: δ must be in [0, 1), got %v", budget.Delta)
	}
	if (mode == ModeZCDP || mode == ModeGDP || mode == ModeRDP) && budget.Delta == 0 {
		return nil, fmt.Errorf("accounting: budget: the %s accountant needs δ > 0 to state its cost as (ε, δ); use the basic mode for a pure-ε budget", mode)
	}
	a := &Accountant{mode: mode, budget: budget}
	if mode == ModeRDP {
		a.tot.order = RDPOrder(budget)
	}
	return a, nil
}

// Replay rebuilds an accountant from events already charged, e.g. read back
// from a durable ledger. Each event is validated, but the budget is not
// enforced: what was charged counts as spent even if it exceeds the budget
// (say, after a budget or mode change), and every later Check then refuses.
// The result does not depend on the order of events. Resume does the same
// from a State in constant time.
func Replay(mode Mode, budget Budget, events []Event) (*Accountant, error) {
	a, err := NewAccountant(mode, budget)
	if err != nil {
		return nil, err
	}
	for i, e := range events {
		if err := a.admissible(e); err != nil {
			return nil, fmt.Errorf("accounting: replay event %d: %w", i, err)
		}
		a.tot.add(e, a.mode)
	}
	a.events = append([]Event(nil), events...)
	return a, nil
}

// Mode returns the accountant's composition rule (ModeAdvanced for a
// LegacyAdvancedVerifier).
func (a *Accountant) Mode() Mode {
	if a.mode == modeLegacyAdvanced {
		return ModeAdvanced
	}
	return a.mode
}

// Budget returns the session's (ε, δ) cap.
func (a *Accountant) Budget() Budget { return a.budget }

// Spent returns the composed cost so far as an (ε, δ) guarantee. In
// ModeZCDP (and in ModeAdvanced when the advanced bound is the smaller) the
// guarantee is stated at the budget's δ, which then counts as spent whole.
func (a *Accountant) Spent() Budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cost()
}

// Remaining returns, for display, the budget's ε minus Spent's ε and the
// budget's δ minus the δ's that events spend outright (approximate events in
// ModeZCDP; every event's δ in the other modes), both clamped at 0. In
// ModeZCDP a later spend of ε_r does not cost exactly ε_r; use Check.
func (a *Accountant) Remaining() Budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.remaining()
}

func (a *Accountant) remaining() Budget {
	spent := a.cost()
	outright := a.tot.delta.float()
	switch a.mode {
	case ModeZCDP:
		outright = a.tot.apDelta.float()
	case ModeGDP, ModeRDP:
		outright = 0
	}
	return Budget{Eps: math.Max(0, a.budget.Eps-spent.Eps), Delta: math.Max(0, a.budget.Delta-outright)}
}

// Events returns a copy of the events spent so far, in spending order: since
// NewAccountant, Replay (including the replayed ones) or Resume (excluding
// those the State summarises; State().Events() counts all).
func (a *Accountant) Events() []Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Event(nil), a.events...)
}

// Preview returns what Spent would be after spending events, without
// checking the budget or recording anything.
func (a *Accountant) Preview(events ...Event) (Budget, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, err := a.with(events)
	if err != nil {
		return Budget{}, err
	}
	return a.mode.cost(&t, a.budget.Delta), nil
}

// Check returns nil if spending all events would keep the composed cost
// within the budget (with a relative tolerance of 1e-12), an *ExceededError
// if it would not, and another error if an event is invalid or cannot be
// composed in this mode. It records nothing.
func (a *Accountant) Check(events ...Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _, err := a.check(events)
	return err
}

// Spend checks events and, if they fit, records all of them; otherwise it
// records none and returns Check's error.
func (a *Accountant) Spend(events ...Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, after, err := a.check(events)
	if err != nil {
		return err
	}
	a.tot = t
	a.spent, a.cached = after, len(events) > 0
	a.events = append(a.events, events...)
	return nil
}

// NeedsDelta reports whether mode m states its totals at a δ > 0 (zCDP,
// GDP and the Rényi filter convert to (ε, δ) there), so that a budget or
// a block without δ must compose by the basic rule instead.
func (m Mode) NeedsDelta() bool { return m == ModeZCDP || m == ModeGDP || m == ModeRDP }

// Composes reports why the accountant of mode m can never compose e (an
// approximate (ε, δ) event has no μ-GDP or Rényi bound), or returns nil.
// It depends on the event's kind only, not on a budget or a spend, so an
// executor can refuse such a call when it plans it, before any charge.
func (m Mode) Composes(e Event) error {
	switch m {
	case ModeGDP:
		return gdpAdmissible(e)
	case ModeRDP:
		return rdpAdmissible(e, 2) // whether an event has a Rényi price does not depend on the order
	}
	return nil
}

// admissible validates e and checks that this mode can compose it.
func (a *Accountant) admissible(e Event) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if a.mode == ModeGDP {
		return gdpAdmissible(e)
	}
	if a.mode == ModeRDP {
		return rdpAdmissible(e, a.tot.order)
	}
	if a.mode != ModeZCDP && !e.HasTarget() {
		return fmt.Errorf("accounting: the %s accountant composes (ε, δ) costs, and this %s event (%s) has no calibration target; build it with ZcdpFor/GdpFor or set its Eps and Delta", a.mode, e.Kind, e)
	}
	return nil
}

// with returns the totals after adding events (the accountant's own are
// untouched).
func (a *Accountant) with(events []Event) (totals, error) {
	for _, e := range events {
		if err := a.admissible(e); err != nil {
			return totals{}, err
		}
	}
	t := a.tot.clone()
	for _, e := range events {
		t.add(e, a.mode)
	}
	return t, nil
}

// check returns the totals after events and their cost, or the refusal.
func (a *Accountant) check(events []Event) (totals, Budget, error) {
	t, err := a.with(events)
	if err != nil {
		return totals{}, Budget{}, err
	}
	if len(events) == 0 {
		return t, Budget{}, nil
	}
	after := a.mode.cost(&t, a.budget.Delta)
	if within(after.Eps, a.budget.Eps) && within(after.Delta, a.budget.Delta) {
		return t, after, nil
	}
	alone := totals{order: a.tot.order}
	for _, e := range events {
		alone.add(e, a.mode)
	}
	return totals{}, Budget{}, &ExceededError{
		Requested:  a.mode.cost(&alone, a.budget.Delta),
		Spent:      a.cost(),
		Remaining:  a.remaining(),
		Budget:     a.budget,
		WouldSpend: after,
	}
}

// admits reports whether Check(e) would return nil, exactly, without
// building the refusal or the composed cost when only the answer is
// needed: under zcdp it asks whether the conversion is within the budget
// (zcdpEpsAtMost), which usually stops early. The searches of Fits call
// it about 25 times each.
func (a *Accountant) admits(e Event) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, err := a.with([]Event{e})
	if err != nil {
		return false
	}
	if a.mode != ModeZCDP {
		after := a.mode.cost(&t, a.budget.Delta)
		return within(after.Eps, a.budget.Eps) && within(after.Delta, a.budget.Delta)
	}
	// mode.cost's zcdp branch, asked only whether its ε is within the
	// budget: its δ is the budget's own, and no δ left for the conversion
	// is an ε of +Inf, never within.
	conv := a.budget.Delta - t.apDelta.float()
	return conv > 0 && zcdpEpsAtMost(t.rho.float(), conv, a.budget.Eps*(1+budgetTolerance))
}

func within(cost, limit float64) bool {
	return cost <= limit*(1+budgetTolerance)
}
