package accounting

// Session accountant and privacy filter. Spec: ARCHITECTURE.md §5.
//
// ZCDP mode: Bun–Steinke 2016 (composition, pure → zCDP, approximate zCDP
// §8), converted by Canonne–Kamath–Steinke 2020; as a filter under fully
// adaptive composition: Whitehouse, Ramdas, Rogers and Wu, "Fully-Adaptive
// Composition in Differential Privacy" (ICML 2023, arXiv 2203.05481).
// Advanced mode: Kairouz, Oh and Viswanath, "The Composition Theorem for
// Differential Privacy" (ICML 2015), Thm 3.5 (heterogeneous events).

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
	// (Rogers–Roth–Ullman–Vadhan 2016), loosest of the three.
	ModeBasic
	// ModeAdvanced composes the same (ε_i, δ_i) as ModeBasic with the
	// heterogeneous advanced composition theorem of Kairouz–Oh–Viswanath
	// (Thm 3.5), using all the budget's δ left after Σδ_i as the slack δ':
	//   ε = min{ Σε_i,
	//            Σε_i·tanh(ε_i/2) + √(2 Σε_i² · ln(e + √(Σε_i²)/δ')),
	//            Σε_i·tanh(ε_i/2) + √(2 Σε_i² · ln(1/δ')) },   δ = Σδ_i + δ'
	// ((e^ε−1)/(e^ε+1) = tanh(ε/2); Dwork–Rothblum–Vadhan's Σε_i(e^ε_i − 1)
	// is looser). The theorem assumes the ε_i are fixed before the session
	// starts (adaptive choice of mechanisms, not of their budgets); use it to
	// reproduce papers that declare their per-step budgets up front, and
	// ModeZCDP for interactive sessions. When Σε_i is the smallest bound the
	// slack is not used and δ = Σδ_i.
	ModeAdvanced
)

var modeNames = [...]string{ModeZCDP: "zcdp", ModeBasic: "basic", ModeAdvanced: "advanced"}

// String returns "zcdp", "basic" or "advanced".
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads "zcdp", "basic" or "advanced" (case-insensitive).
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

func (s *exactSum) clone() exactSum {
	var c exactSum
	c.v.SetPrec(exactPrec)
	c.v.Set(&s.v)
	return c
}

// totals are the running sums every mode needs; the composed cost is a
// function of these alone.
type totals struct {
	rho      exactSum // ZCDP mode: Σρ_i
	apDelta  exactSum // ZCDP mode: Σδ of approximate events
	eps      exactSum // Basic/Advanced: Σε_i of the (ε, δ) targets
	delta    exactSum // Basic/Advanced: Σδ_i
	epsTanh  exactSum // Advanced: Σε_i·tanh(ε_i/2)
	epsSq    exactSum // Advanced: Σε_i²
	nonEmpty bool
}

func (t *totals) clone() totals {
	return totals{rho: t.rho.clone(), apDelta: t.apDelta.clone(), eps: t.eps.clone(), delta: t.delta.clone(),
		epsTanh: t.epsTanh.clone(), epsSq: t.epsSq.clone(), nonEmpty: t.nonEmpty}
}

func (t *totals) add(e Event) {
	t.nonEmpty = true
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
	if !t.nonEmpty {
		return Budget{}
	}
	switch m {
	case ModeBasic:
		return Budget{Eps: t.eps.float(), Delta: t.delta.float()}
	case ModeAdvanced:
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
	events []Event
	tot    totals
}

// NewAccountant returns an empty accountant. The budget needs ε > 0 finite
// and δ in [0, 1); ModeZCDP needs δ > 0 because a zCDP cost has no pure-ε
// guarantee (use ModeBasic for a pure-ε budget).
func NewAccountant(mode Mode, budget Budget) (*Accountant, error) {
	if mode < 0 || int(mode) >= len(modeNames) {
		return nil, fmt.Errorf("accounting: unknown accountant mode %d", int(mode))
	}
	if err := checkEps(budget.Eps); err != nil {
		return nil, fmt.Errorf("accounting: budget: %w", err)
	}
	if math.IsNaN(budget.Delta) || budget.Delta < 0 || budget.Delta >= 1 {
		return nil, fmt.Errorf("accounting: budget: δ must be in [0, 1), got %v", budget.Delta)
	}
	if mode == ModeZCDP && budget.Delta == 0 {
		return nil, errors.New("accounting: budget: the zcdp accountant needs δ > 0 to state a zCDP cost as (ε, δ); use the basic mode for a pure-ε budget")
	}
	return &Accountant{mode: mode, budget: budget}, nil
}

// Replay rebuilds an accountant from events already charged, e.g. read back
// from a durable ledger. Each event is validated, but the budget is not
// enforced: what was charged counts as spent even if it exceeds the budget
// (say, after a budget or mode change), and every later Check then refuses.
// The result does not depend on the order of events.
func Replay(mode Mode, budget Budget, events []Event) (*Accountant, error) {
	a, err := NewAccountant(mode, budget)
	if err != nil {
		return nil, err
	}
	for i, e := range events {
		if err := a.admissible(e); err != nil {
			return nil, fmt.Errorf("accounting: replay event %d: %w", i, err)
		}
		a.tot.add(e)
	}
	a.events = append([]Event(nil), events...)
	return a, nil
}

// Mode returns the accountant's composition rule.
func (a *Accountant) Mode() Mode { return a.mode }

// Budget returns the session's (ε, δ) cap.
func (a *Accountant) Budget() Budget { return a.budget }

// Spent returns the composed cost so far as an (ε, δ) guarantee. In
// ModeZCDP (and in ModeAdvanced when the advanced bound is the smaller) the
// guarantee is stated at the budget's δ, which then counts as spent whole.
func (a *Accountant) Spent() Budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mode.cost(&a.tot, a.budget.Delta)
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
	spent := a.mode.cost(&a.tot, a.budget.Delta)
	outright := a.tot.delta.float()
	if a.mode == ModeZCDP {
		outright = a.tot.apDelta.float()
	}
	return Budget{Eps: math.Max(0, a.budget.Eps-spent.Eps), Delta: math.Max(0, a.budget.Delta-outright)}
}

// Events returns a copy of the events spent so far, in spending order.
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
	_, err := a.check(events)
	return err
}

// Spend checks events and, if they fit, records all of them; otherwise it
// records none and returns Check's error.
func (a *Accountant) Spend(events ...Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, err := a.check(events)
	if err != nil {
		return err
	}
	a.tot = t
	a.events = append(a.events, events...)
	return nil
}

// admissible validates e and checks that this mode can compose it.
func (a *Accountant) admissible(e Event) error {
	if err := e.Validate(); err != nil {
		return err
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
		t.add(e)
	}
	return t, nil
}

func (a *Accountant) check(events []Event) (totals, error) {
	t, err := a.with(events)
	if err != nil {
		return totals{}, err
	}
	if len(events) == 0 {
		return t, nil
	}
	after := a.mode.cost(&t, a.budget.Delta)
	if within(after.Eps, a.budget.Eps) && within(after.Delta, a.budget.Delta) {
		return t, nil
	}
	var alone totals
	for _, e := range events {
		alone.add(e)
	}
	return totals{}, &ExceededError{
		Requested:  a.mode.cost(&alone, a.budget.Delta),
		Spent:      a.mode.cost(&a.tot, a.budget.Delta),
		Remaining:  a.remaining(),
		Budget:     a.budget,
		WouldSpend: after,
	}
}

func within(cost, limit float64) bool {
	return cost <= limit*(1+budgetTolerance)
}
