package accounting

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

func mustAccountant(t *testing.T, mode Mode, b Budget) *Accountant {
	t.Helper()
	a, err := NewAccountant(mode, b)
	if err != nil {
		t.Fatalf("NewAccountant(%v, %v): %v", mode, b, err)
	}
	return a
}

func asExceeded(t *testing.T, err error) *ExceededError {
	t.Helper()
	var ex *ExceededError
	if !errors.As(err, &ex) {
		t.Fatalf("want *ExceededError, got %v", err)
	}
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("errors.Is(%v, ErrBudgetExceeded) = false", err)
	}
	return ex
}

// Spending exactly the budget is allowed; one more tiny event is refused.
func TestFilterExactBoundary(t *testing.T) {
	budget := Budget{Eps: 1, Delta: 1e-6}
	rhoStar := RhoForTarget(1, 1e-6)
	cases := []struct {
		name   string
		mode   Mode
		spends [][]Event
		tiny   Event
	}{
		{"zcdp one calibrated event", ModeZCDP, [][]Event{{ZcdpFor(1, 1e-6)}}, Zcdp(1e-12)},
		{"zcdp three thirds", ModeZCDP, [][]Event{{Zcdp(rhoStar / 3)}, {Zcdp(rhoStar / 3), Zcdp(rhoStar - 2*(rhoStar/3))}}, Pure(1e-6)},
		{"zcdp gaussian+pure", ModeZCDP, [][]Event{{Gdp(math.Sqrt(rhoStar))}, {Pure(math.Sqrt(rhoStar))}}, Gdp(1e-6)},
		{"basic pure 0.3+0.7", ModeBasic, [][]Event{{Pure(0.3)}, {Pure(0.7)}}, Pure(1e-9)},
		{"basic approx", ModeBasic, [][]Event{{Approx(0.25, 2.5e-7)}, {Approx(0.75, 7.5e-7)}}, Approx(1e-9, 1e-18)},
		{"basic calibrated zcdp+gdp", ModeBasic, [][]Event{{ZcdpFor(0.5, 5e-7)}, {GdpFor(0.5, 5e-7)}}, Pure(1e-9)},
		{"basic ten tenths", ModeBasic, [][]Event{{Pure(0.1), Pure(0.1), Pure(0.1), Pure(0.1), Pure(0.1)}, {Pure(0.1), Pure(0.1), Pure(0.1), Pure(0.1), Pure(0.1)}}, Pure(1e-9)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := mustAccountant(t, c.mode, budget)
			for _, s := range c.spends {
				if err := a.Spend(s...); err != nil {
					t.Fatalf("Spend(%v) within budget: %v", s, err)
				}
			}
			spent := a.Spent()
			if relErr(spent.Eps, budget.Eps) > 1e-9 {
				t.Errorf("Spent() = %v, want ε ≈ %g", spent, budget.Eps)
			}
			if err := a.Check(c.tiny); err == nil {
				t.Errorf("Check(%v) after spending the whole budget: nil, want BudgetExceeded", c.tiny)
			} else {
				asExceeded(t, err)
			}
		})
	}
}

func TestRefusedSpendLeavesStateUnchanged(t *testing.T) {
	for _, mode := range []Mode{ModeZCDP, ModeBasic, ModeAdvanced} {
		a := mustAccountant(t, mode, Budget{Eps: 1, Delta: 1e-6})
		if err := a.Spend(Pure(0.1)); err != nil { // zCDP: ρ=0.005, ε≈0.45 at δ=1e-6
			t.Fatal(err)
		}
		spent, rem, evs := a.Spent(), a.Remaining(), a.Events()
		// The first event fits alone, the pair does not: all or nothing.
		err := a.Spend(Pure(0.1), Pure(5))
		ex := asExceeded(t, err)
		if a.Spent() != spent || a.Remaining() != rem || len(a.Events()) != len(evs) {
			t.Errorf("%v: refused Spend changed state: spent %v→%v, remaining %v→%v, %d→%d events",
				mode, spent, a.Spent(), rem, a.Remaining(), len(evs), len(a.Events()))
		}
		if ex.Spent != spent || ex.Remaining != rem || ex.Budget != a.Budget() {
			t.Errorf("%v: error reports spent %v remaining %v budget %v; accountant has %v %v %v",
				mode, ex.Spent, ex.Remaining, ex.Budget, spent, rem, a.Budget())
		}
		if !(ex.WouldSpend.Eps > 1) {
			t.Errorf("%v: WouldSpend = %v, want ε > 1", mode, ex.WouldSpend)
		}
		// An invalid event is an error, not a refusal, and changes nothing.
		err = a.Spend(Pure(-1))
		if err == nil || errors.Is(err, ErrBudgetExceeded) {
			t.Errorf("%v: Spend(Pure(-1)) = %v, want a validation error", mode, err)
		}
		if len(a.Events()) != 1 {
			t.Errorf("%v: invalid Spend recorded an event", mode)
		}
	}
}

func TestExceededErrorReport(t *testing.T) {
	a := mustAccountant(t, ModeBasic, Budget{Eps: 1, Delta: 1e-6})
	if err := a.Spend(Approx(0.6, 4e-7)); err != nil {
		t.Fatal(err)
	}
	ex := asExceeded(t, a.Check(Pure(0.3), Approx(0.2, 1e-7)))
	want := ExceededError{
		Requested:  Budget{0.5, 1e-7},
		Spent:      Budget{0.6, 4e-7},
		Remaining:  Budget{0.4, 6e-7},
		Budget:     Budget{1, 1e-6},
		WouldSpend: Budget{1.1, 5e-7},
	}
	for _, p := range []struct {
		name      string
		got, want Budget
	}{{"Requested", ex.Requested, want.Requested}, {"Spent", ex.Spent, want.Spent},
		{"Remaining", ex.Remaining, want.Remaining}, {"Budget", ex.Budget, want.Budget},
		{"WouldSpend", ex.WouldSpend, want.WouldSpend}} {
		if relErr(p.got.Eps, p.want.Eps) > 1e-12 || relErr(p.got.Delta, p.want.Delta) > 1e-12 {
			t.Errorf("%s = %v, want %v", p.name, p.got, p.want)
		}
	}
	msg := ex.Error()
	wantMsg := "BudgetExceeded: requested ε=0.5, δ=1e-07; spent ε=0.6, δ=4e-07; remaining ε=0.4, δ=6e-07 of ε=1, δ=1e-06"
	if msg != wantMsg {
		t.Errorf("Error() =\n%q, want\n%q", msg, wantMsg)
	}
}

func TestConcurrentSpendNeverExceeds(t *testing.T) {
	for _, mode := range []Mode{ModeZCDP, ModeBasic} {
		budget := Budget{Eps: 5, Delta: 1e-6}
		a := mustAccountant(t, mode, budget)
		ev := Pure(0.1)
		if mode == ModeZCDP {
			ev = Zcdp(RhoForTarget(5, 1e-6) / 50)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted := 0
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					err := a.Spend(ev)
					if err == nil {
						mu.Lock()
						accepted++
						mu.Unlock()
					} else if !errors.Is(err, ErrBudgetExceeded) {
						t.Errorf("unexpected error: %v", err)
					}
					_ = a.Spent() // readers race with writers too
				}
			}()
		}
		wg.Wait()
		if accepted != 50 || len(a.Events()) != 50 {
			t.Errorf("%v: %d spends accepted, %d events; want exactly 50 (budget / cost)", mode, accepted, len(a.Events()))
		}
		if s := a.Spent(); !within(s.Eps, budget.Eps) || !within(s.Delta, budget.Delta) {
			t.Errorf("%v: concurrent spends exceeded the budget: %v", mode, s)
		}
	}
}

// One Gaussian of total μ = 1 spent as 100 pieces of μ = 0.1, each calibrated
// to (ε_i, δ_i = 1e-7): the anchors' 44.7 under basic composition, 4.728
// under zCDP, 31.28 under Kairouz–Oh–Viswanath with δ' = 1e-5 (the legacy
// advanced rule, which ModeAdvanced no longer applies: it is basic now).
func TestModesCompareOnGaussianPieces(t *testing.T) {
	epsI := GDPEps(0.1, 1e-7)
	piece := Gdp(0.1).WithTarget(epsI, 1e-7)
	events := make([]Event, 100)
	for i := range events {
		events[i] = piece
	}
	cases := []struct {
		mode   Mode
		legacy bool // LegacyAdvancedVerifier instead of NewAccountant
		budget Budget
		want   Budget
		tol    float64 // absolute on ε
	}{
		{ModeZCDP, false, Budget{50, 1e-5}, Budget{4.728, 1e-5}, 5e-4},
		{ModeBasic, false, Budget{50, 1e-5}, Budget{44.708, 1e-5}, 5e-4},
		{ModeAdvanced, false, Budget{50, 1e-5}, Budget{44.708, 1e-5}, 5e-4},
		{ModeAdvanced, false, Budget{50, 2e-5}, Budget{44.708, 1e-5}, 5e-4}, // basic: the slack is not used
		{ModeAdvanced, true, Budget{50, 1e-5}, Budget{44.708, 1e-5}, 5e-4},  // no slack left: falls back to Σε
		{ModeAdvanced, true, Budget{50, 2e-5}, Budget{31.284, 2e-5}, 5e-4},  // KOV with δ' = 1e-5
	}
	for _, c := range cases {
		a := mustAccountant(t, c.mode, c.budget)
		if c.legacy {
			var err error
			if a, err = LegacyAdvancedVerifier(c.budget); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Spend(events...); err != nil {
			t.Fatalf("%v: %v", c.mode, err)
		}
		got := a.Spent()
		if math.Abs(got.Eps-c.want.Eps) > c.tol || relErr(got.Delta, c.want.Delta) > 1e-12 {
			t.Errorf("%v (legacy %v) budget %v: Spent() = %v, want %v", c.mode, c.legacy, c.budget, got, c.want)
		}
		if a.Mode() != c.mode {
			t.Errorf("Mode() = %v, want %v", a.Mode(), c.mode)
		}
	}
}

// The legacy advanced rule admits every spend ModeAdvanced (basic) admits,
// and more: that is what lets ledger verification accept old charges and
// the charges this version adds after them.
func TestLegacyAdvancedVerifier(t *testing.T) {
	budget := Budget{Eps: 4, Delta: 1e-5}
	legacy, err := LegacyAdvancedVerifier(budget)
	if err != nil {
		t.Fatal(err)
	}
	adv := mustAccountant(t, ModeAdvanced, budget)
	step := ZcdpFor(0.1, 1e-7)
	// 40 steps of ε=0.1 fill the basic budget of 4 (up to the 1e-12
	// tolerance); both rules admit them.
	for i := range 40 {
		if err := adv.Spend(step); err != nil {
			t.Fatalf("advanced (basic) step %d: %v", i, err)
		}
		if err := legacy.Spend(step); err != nil {
			t.Fatalf("legacy step %d: %v", i, err)
		}
	}
	asExceeded(t, adv.Check(step))
	// The legacy rule admitted more: KOV Thm 3.5's
	// Σε_i·tanh(ε_i/2) + √(2Σε_i²·ln(e + √(Σε_i²)/δ')) with 45 steps and
	// δ' = 1e-5 − 45e-7 is ≈ 3.47 < 4 (its ln(1/δ') form gives ≈ 3.53).
	for i := range 5 {
		if err := legacy.Spend(step); err != nil {
			t.Fatalf("legacy step %d: %v", 40+i, err)
		}
	}
	n, e := 45.0, 0.1
	slack := 1e-5 - n*1e-7
	sq := n * e * e
	want := math.Min(n*e*math.Tanh(e/2)+math.Sqrt(2*sq*math.Log(math.E+math.Sqrt(sq)/slack)),
		n*e*math.Tanh(e/2)+math.Sqrt(2*sq*-math.Log(slack)))
	if got := legacy.Spent(); relErr(got.Eps, want) > 1e-12 || got.Delta != 1e-5 {
		t.Errorf("legacy Spent() = %v, want ε=%.6g, δ=1e-5", got, want)
	}
	if legacy.State() == adv.State() {
		t.Error("States of 45 and 40 events compare equal")
	}
	basic := mustAccountant(t, ModeBasic, budget)
	if _, err := LegacyAdvancedVerifier(Budget{Eps: 0, Delta: 1e-5}); err == nil {
		t.Error("LegacyAdvancedVerifier accepted a zero budget")
	}
	if err := basic.Spend(legacy.Events()...); err == nil {
		t.Error("basic composition admitted 45 steps of 0.1 in ε=4")
	}
}

func TestZCDPModeComposition(t *testing.T) {
	a := mustAccountant(t, ModeZCDP, Budget{Eps: 10, Delta: 1e-6})
	evs := []Event{Zcdp(0.01), Gdp(0.2), Pure(0.1), Approx(0.3, 4e-7)}
	if err := a.Spend(evs...); err != nil {
		t.Fatal(err)
	}
	rho := 0.01 + 0.2*0.2/2 + 0.1*0.1/2 + 0.3*0.3/2
	want := Budget{Eps: ZCDPToEps(rho, 1e-6-4e-7), Delta: 1e-6}
	if got := a.Spent(); relErr(got.Eps, want.Eps) > 1e-12 || got.Delta != want.Delta {
		t.Errorf("Spent() = %v, want %v", got, want)
	}
	if got := a.Remaining(); relErr(got.Eps, 10-want.Eps) > 1e-12 || relErr(got.Delta, 6e-7) > 1e-12 {
		t.Errorf("Remaining() = %v, want ε=%g, δ=6e-7", got, 10-want.Eps)
	}
	// Approximate events that use up δ leave nothing to convert ρ at.
	ex := asExceeded(t, a.Check(Approx(0.1, 6e-7)))
	if !math.IsInf(ex.WouldSpend.Eps, 1) {
		t.Errorf("WouldSpend = %v, want ε=+Inf", ex.WouldSpend)
	}
}

func TestBasicModeNeedsTargets(t *testing.T) {
	for _, mode := range []Mode{ModeBasic, ModeAdvanced} {
		a := mustAccountant(t, mode, Budget{Eps: 1, Delta: 1e-6})
		for _, ev := range []Event{Zcdp(0.01), Gdp(0.1)} {
			err := a.Check(ev)
			if err == nil || errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "calibration target") {
				t.Errorf("%v: Check(%v) = %v, want an error asking for a calibration target", mode, ev, err)
			}
		}
		if err := a.Check(ZcdpFor(0.5, 5e-7)); err != nil {
			t.Errorf("%v: Check(ZcdpFor(0.5, 5e-7)) = %v", mode, err)
		}
	}
	z := mustAccountant(t, ModeZCDP, Budget{Eps: 1, Delta: 1e-6})
	if err := z.Check(Zcdp(0.01), Gdp(0.1)); err != nil {
		t.Errorf("zcdp mode refuses events without a target: %v", err)
	}
}

// The ledger rebuilds accountants from stored events in any order.
func TestReplayIsOrderIndependent(t *testing.T) {
	evs := []Event{Zcdp(0.013), Gdp(0.21), Pure(0.07), Approx(0.3, 1e-8), ZcdpFor(0.1, 1e-7),
		GdpFor(0.2, 1e-7), Pure(1e-3), Zcdp(1e-7), Approx(0.05, 2e-8), Pure(0.11)}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, mode := range []Mode{ModeZCDP, ModeBasic, ModeAdvanced} {
		var use []Event
		for _, e := range evs {
			if mode == ModeZCDP || e.HasTarget() {
				use = append(use, e)
			}
		}
		ref, err := Replay(mode, Budget{Eps: 5, Delta: 1e-5}, use)
		if err != nil {
			t.Fatal(err)
		}
		want := ref.Spent()
		for trial := 0; trial < 20; trial++ {
			perm := append([]Event(nil), use...)
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			b, err := Replay(mode, Budget{Eps: 5, Delta: 1e-5}, perm)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Spent(); got != want {
				t.Fatalf("%v: order changed Spent: %v vs %v", mode, got, want)
			}
		}
	}
}

func TestReplayOverBudget(t *testing.T) {
	a, err := Replay(ModeBasic, Budget{Eps: 1, Delta: 0}, []Event{Pure(0.8), Pure(0.8)})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Spent(); got.Eps != 1.6 {
		t.Errorf("replayed Spent() = %v, want ε=1.6", got)
	}
	if got := a.Remaining(); got != (Budget{}) {
		t.Errorf("Remaining() = %v, want zero", got)
	}
	asExceeded(t, a.Check(Pure(1e-9)))
	if _, err := Replay(ModeBasic, Budget{Eps: 1}, []Event{Pure(0.1), Zcdp(0.1)}); err == nil {
		t.Error("Replay accepted a zCDP event without target in basic mode")
	}
}

func TestNewAccountantValidates(t *testing.T) {
	bad := []struct {
		mode Mode
		b    Budget
	}{
		{ModeZCDP, Budget{1, 0}},
		{ModeBasic, Budget{0, 1e-6}},
		{ModeBasic, Budget{-1, 1e-6}},
		{ModeBasic, Budget{math.NaN(), 1e-6}},
		{ModeBasic, Budget{math.Inf(1), 1e-6}},
		{ModeBasic, Budget{1, 1}},
		{ModeBasic, Budget{1, -1e-9}},
		{ModeBasic, Budget{1, math.NaN()}},
		{Mode(7), Budget{1, 1e-6}},
	}
	for _, c := range bad {
		if _, err := NewAccountant(c.mode, c.b); err == nil {
			t.Errorf("NewAccountant(%v, %v) = nil error", c.mode, c.b)
		}
	}
	for _, m := range []Mode{ModeBasic, ModeAdvanced} {
		a := mustAccountant(t, m, Budget{1, 0}) // pure-ε budget
		if err := a.Spend(Pure(1)); err != nil {
			t.Errorf("%v pure budget: %v", m, err)
		}
		asExceeded(t, a.Check(Approx(1e-9, 1e-12)))
	}
}

func TestPreviewAndEmptySpend(t *testing.T) {
	a := mustAccountant(t, ModeZCDP, Budget{Eps: 1, Delta: 1e-6})
	if got := a.Spent(); got != (Budget{}) {
		t.Errorf("empty Spent() = %v", got)
	}
	if err := a.Spend(); err != nil {
		t.Errorf("Spend() with no events: %v", err)
	}
	p, err := a.Preview(Zcdp(0.01))
	if err != nil || relErr(p.Eps, ZCDPToEps(0.01, 1e-6)) > 1e-12 {
		t.Errorf("Preview = %v, %v", p, err)
	}
	if len(a.Events()) != 0 {
		t.Error("Preview recorded an event")
	}
	big, err := a.Preview(Pure(100))
	if err != nil || !(big.Eps > 1) {
		t.Errorf("Preview beyond budget = %v, %v; want the cost and no error", big, err)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{ModeZCDP, ModeBasic, ModeAdvanced, ModeGDP, ModeRDP} {
		got, err := ParseMode(strings.ToUpper(m.String()))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMode("pld"); err == nil || !strings.Contains(err.Error(), "zcdp, basic, advanced, gdp, rdp") {
		t.Errorf("ParseMode(pld) error = %v, want the valid names listed", err)
	}
	var zero Mode
	if zero != ModeZCDP {
		t.Error("zero Mode is not ModeZCDP")
	}
}

func BenchmarkAccountantCheck(b *testing.B) {
	a, _ := NewAccountant(ModeZCDP, Budget{Eps: 10, Delta: 1e-6})
	for i := 0; i < 100; i++ {
		_ = a.Spend(Zcdp(0.001))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = a.Check(Zcdp(0.001))
	}
}

func BenchmarkReplay1000(b *testing.B) {
	evs := make([]Event, 1000)
	for i := range evs {
		evs[i] = Zcdp(1e-4 * float64(i%7+1))
	}
	for i := 0; i < b.N; i++ {
		_, _ = Replay(ModeZCDP, Budget{Eps: 10, Delta: 1e-6}, evs)
	}
}
