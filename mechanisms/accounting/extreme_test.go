package accounting

// Every exported function must return promptly, and soundly, for every
// float64: issue 10's private_count(ds, eps=1e300, delta=1e-7) looped
// forever in RhoForTarget (ε² overflowed to +Inf, the classic starting point
// became NaN and the shrinking search never met its exit). The table test
// below runs each function on every pair of extreme values; the fuzz tests
// (go test -fuzz=FuzzXxx) search further and run their seed corpora, which
// hold the same extremes, in every plain `go test`.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// callLimit bounds one call. The functions answer in well under a
// millisecond; two seconds leaves room for a loaded 2-core machine while
// still catching the bug this guards against, an endless loop.
const callLimit = 2 * time.Second

// call runs f in a goroutine and fails the test if it panics or does not
// return within callLimit. (A call that hangs leaks its goroutine; the test
// has failed by then.)
func call[T any](t testing.TB, name string, f func() T) T {
	t.Helper()
	type result struct {
		v     T
		panic any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			r.panic = recover()
			done <- r
		}()
		r.v = f()
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Fatalf("%s panicked: %v", name, r.panic)
		}
		return r.v
	case <-time.After(callLimit):
		t.Fatalf("%s did not return within %v", name, callLimit)
	}
	panic("unreachable")
}

// extremes are the inputs every function is tried on: signed zeros and
// infinities, NaN, the smallest subnormal, values just inside and outside
// the accepted ranges, the point where ε² overflows, and the largest float.
var extremes = []float64{
	0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
	5e-324, -5e-324, 1e-300, 1e-12, 0.5, math.Nextafter(1, 0), 1, 2, 700,
	MaxEps, math.Nextafter(MaxEps, math.Inf(1)), 1.3e154, 1.4e154, 1e300,
	math.MaxFloat64, -1, -math.MaxFloat64,
}

func isNaN(x float64) bool { return math.IsNaN(x) }

// validProb reports whether δ is a valid (ε, δ)-DP δ argument of a
// conversion: a number in [0, ∞) (δ ≥ 1 is trivially met).
func validProb(d float64) bool { return d >= 0 }

// checkConversions runs the conversions on (x, y) and checks what must hold
// whatever the inputs: documented special values, the [0, 1] range of a δ,
// tight ≤ classic, and exact soundness of the inverses.
func checkConversions(t testing.TB, x, y float64) {
	t.Helper()
	args := fmt.Sprintf("(%v, %v)", x, y)
	// ρ-zCDP → ε at δ.
	classic := call(t, "ZCDPToEpsClassic"+args, func() float64 { return ZCDPToEpsClassic(x, y) })
	tight := call(t, "ZCDPToEps"+args, func() float64 { return ZCDPToEps(x, y) })
	if x >= 0 && validProb(y) {
		if isNaN(tight) || tight < 0 || isNaN(classic) || classic < 0 {
			t.Errorf("ZCDPToEps%s = %v, classic %v: want numbers ≥ 0", args, tight, classic)
		}
		if tight > classic {
			t.Errorf("ZCDPToEps%s = %v > classic %v", args, tight, classic)
		}
	} else if !isNaN(tight) || !isNaN(classic) {
		t.Errorf("ZCDPToEps%s = %v, classic %v: want NaN for invalid input", args, tight, classic)
	}
	// ρ-zCDP → δ at ε.
	d := call(t, "ZCDPToDelta"+args, func() float64 { return ZCDPToDelta(x, y) })
	if x >= 0 && y >= 0 {
		if !(d >= 0 && d <= 1) {
			t.Errorf("ZCDPToDelta%s = %v, want a value in [0, 1]", args, d)
		}
	} else if !isNaN(d) {
		t.Errorf("ZCDPToDelta%s = %v, want NaN", args, d)
	}
	// μ-GDP → δ at ε (any non-NaN ε) and → ε at δ.
	gd := call(t, "GDPDelta"+args, func() float64 { return GDPDelta(x, y) })
	if x >= 0 && !isNaN(y) {
		if !(gd >= 0 && gd <= 1) {
			t.Errorf("GDPDelta%s = %v, want a value in [0, 1]", args, gd)
		}
	} else if !isNaN(gd) {
		t.Errorf("GDPDelta%s = %v, want NaN", args, gd)
	}
	ge := call(t, "GDPEps"+args, func() float64 { return GDPEps(x, y) })
	if x >= 0 && validProb(y) {
		if isNaN(ge) || ge < 0 {
			t.Errorf("GDPEps%s = %v, want a number ≥ 0", args, ge)
		}
		// Sound: the ε reported really gives δ ≤ y on the exact curve.
		if !math.IsInf(ge, 1) && y < 1 {
			if back := GDPDelta(x, ge); !(back <= y) {
				t.Errorf("GDPDelta(%v, GDPEps%s = %v) = %v > δ", x, args, ge, back)
			}
		}
	} else if !isNaN(ge) {
		t.Errorf("GDPEps%s = %v, want NaN", args, ge)
	}
	// Inverses at the target (ε, δ) = (x, y).
	valid := x > 0 && x <= MaxEps && y > 0 && y < 1
	rho := call(t, "RhoForTarget"+args, func() float64 { return RhoForTarget(x, y) })
	rhoC := call(t, "RhoForTargetClassic"+args, func() float64 { return RhoForTargetClassic(x, y) })
	mu := call(t, "MuForTarget"+args, func() float64 { return MuForTarget(x, y) })
	if !valid {
		if !isNaN(rho) || !isNaN(rhoC) || !isNaN(mu) {
			t.Errorf("inverses of invalid target %s = ρ %v, classic %v, μ %v; want NaN", args, rho, rhoC, mu)
		}
		return
	}
	for name, v := range map[string]float64{"RhoForTarget": rho, "RhoForTargetClassic": rhoC, "MuForTarget": mu} {
		if isNaN(v) || v < 0 || math.IsInf(v, 0) {
			t.Errorf("%s%s = %v, want a finite number ≥ 0", name, args, v)
		}
	}
	// Exactly sound, no tolerance: a calibrated cost never exceeds the target.
	if e := ZCDPToEps(rho, y); !(e <= x) {
		t.Errorf("ZCDPToEps(RhoForTarget%s = %v) = %v > ε", args, rho, e)
	}
	if e := ZCDPToEpsClassic(rhoC, y); !(e <= x) {
		t.Errorf("ZCDPToEpsClassic(RhoForTargetClassic%s = %v) = %v > ε", args, rhoC, e)
	}
	if g := GDPDelta(mu, x); !(g <= y) {
		t.Errorf("GDPDelta(MuForTarget%s = %v, ε) = %v > δ", args, mu, g)
	}
	if rho < rhoC {
		t.Errorf("RhoForTarget%s = %v below the classic %v", args, rho, rhoC)
	}
}

func TestExtremeConversions(t *testing.T) {
	for _, x := range extremes {
		for _, y := range extremes {
			checkConversions(t, x, y)
		}
		r := call(t, fmt.Sprintf("PureToRho(%v)", x), func() float64 { return PureToRho(x) })
		if x >= 0 && !(r >= 0) || !(x >= 0) && !isNaN(r) {
			t.Errorf("PureToRho(%v) = %v", x, r)
		}
	}
}

// eventsFor builds one event of every constructor from the pair (x, y).
func eventsFor(x, y float64) []Event {
	return []Event{
		Pure(x), Approx(x, y), Zcdp(x), Gdp(x), Zcdp(x).WithTarget(y, 1e-6), Gdp(x).WithTarget(1, y),
		{Kind: ZCDP, Rho: 0.01, Eps: x, Delta: y}, {Kind: PureDP, Eps: x, Delta: y}, {Kind: Kind(7), Eps: x},
	}
}

// eventInRange reports whether Validate must accept e, from the documented
// ranges alone (the implied-target check aside).
func eventInRange(e Event) bool {
	eps := e.Eps > 0 && e.Eps <= MaxEps
	delta := e.Delta > 0 && e.Delta < 1
	switch e.Kind {
	case PureDP:
		return eps && e.Delta == 0 && e.Rho == 0 && e.Mu == 0
	case ApproxDP:
		return eps && delta && e.Rho == 0 && e.Mu == 0
	}
	return false
}

func TestExtremeEvents(t *testing.T) {
	for _, x := range extremes {
		for _, y := range extremes {
			args := fmt.Sprintf("(%v, %v)", x, y)
			zf := call(t, "ZcdpFor"+args, func() Event { return ZcdpFor(x, y) })
			gf := call(t, "GdpFor"+args, func() Event { return GdpFor(x, y) })
			evs := append(eventsFor(x, y), zf, gf)
			for _, e := range evs {
				name := fmt.Sprintf("%+v", e)
				err := call(t, "Validate "+name, func() error { return e.Validate() })
				if (e.Kind == PureDP || e.Kind == ApproxDP) && (err == nil) != eventInRange(e) {
					t.Errorf("Validate(%s) = %v", name, err)
				}
				if err == nil {
					checkValidEvent(t, e)
				}
				for _, d := range []float64{math.NaN(), -1, 0, 5e-324, 1e-6, 1, math.Inf(1)} {
					v := call(t, fmt.Sprintf("EpsAt(%v) of %s", d, name), func() float64 { return e.EpsAt(d) })
					if err == nil && validProb(d) && (isNaN(v) || v < 0) {
						t.Errorf("EpsAt(%v) of valid %s = %v", d, name, v)
					}
				}
				s := call(t, "String "+name, func() string { return e.String() })
				if s == "" {
					t.Errorf("empty String() for %s", name)
				}
			}
			// A target outside the accepted range is reported as such, not
			// as the NaN cost it calibrates to.
			if x > MaxEps && !math.IsInf(x, 1) && y > 0 && y < 1 {
				if err := zf.Validate(); err == nil || !strings.Contains(err.Error(), "largest accepted value") {
					t.Errorf("ZcdpFor%s.Validate() = %v, want the maximum named", args, err)
				}
			}
		}
	}
}

// checkValidEvent checks a validated event: its measures are in range and
// its target, if any, is implied.
func checkValidEvent(t testing.TB, e Event) {
	t.Helper()
	if e.Rho > MaxRho || e.Mu > MaxMu || e.Eps > MaxEps {
		t.Errorf("Validate accepted %+v beyond the maxima", e)
	}
	if (e.Kind == ZCDP || e.Kind == GDP) && e.HasTarget() {
		if got := e.EpsAt(e.Delta); !(got <= e.Eps*(1+targetSlack)) {
			t.Errorf("Validate accepted %+v whose cost gives ε=%v at its δ", e, got)
		}
	}
}

// budgetFits reports whether Spent is within the budget (with the
// accountant's tolerance).
func budgetFits(spent, budget Budget) bool {
	return spent.Eps <= budget.Eps*(1+budgetTolerance) && spent.Delta <= budget.Delta*(1+budgetTolerance)
}

// exerciseAccountant runs every method of a on events and checks the filter:
// after any successful Spend the composed cost is within the budget, a
// refusal changes nothing, and State round-trips through text and Resume.
func exerciseAccountant(t testing.TB, a *Accountant, events []Event, rounds int) {
	t.Helper()
	mode, budget := a.Mode(), a.Budget()
	for r := 0; r < rounds; r++ {
		for _, e := range events {
			name := fmt.Sprintf("%v %v: %+v", mode, budget, e)
			before := call(t, "State "+name, func() State { return a.State() })
			prev := call(t, "Preview "+name, func() error { _, err := a.Preview(e); return err })
			chk := call(t, "Check "+name, func() error { return a.Check(e) })
			err := call(t, "Spend "+name, func() error { return a.Spend(e) })
			if (chk == nil) != (err == nil) {
				t.Errorf("%s: Check %v but Spend %v", name, chk, err)
			}
			if prev != nil && err == nil {
				t.Errorf("%s: Preview refused (%v) what Spend accepted", name, prev)
			}
			if err != nil {
				call(t, "Error "+name, func() string { return err.Error() })
			}
			spent := call(t, "Spent "+name, func() Budget { return a.Spent() })
			call(t, "Remaining "+name, func() Budget { return a.Remaining() })
			if err == nil && !budgetFits(spent, budget) {
				t.Fatalf("%s: spent %v exceeds the budget after an accepted spend", name, spent)
			}
			if err != nil && a.State() != before {
				t.Fatalf("%s: refused spend (%v) changed the state", name, err)
			}
		}
	}
	st := call(t, "State", func() State { return a.State() })
	text, err := st.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := back.UnmarshalText(text); err != nil || back != st {
		t.Fatalf("State %s did not round-trip: %v", text, err)
	}
	res := call(t, "Resume", func() *Accountant {
		r, err := Resume(mode, budget, back)
		if err != nil {
			t.Errorf("Resume(%v, %v, %s): %v", mode, budget, text, err)
		}
		return r
	})
	if res == nil {
		t.FailNow()
	}
	if got, want := res.Spent(), a.Spent(); got != want && !(isNaN(got.Eps) && isNaN(want.Eps)) {
		t.Fatalf("resumed Spent %v, original %v", got, want)
	}
	if res.State() != st {
		t.Fatalf("resumed State %v, original %v", res.State(), st)
	}
}

func TestExtremeAccountant(t *testing.T) {
	for _, mode := range []Mode{ModeZCDP, ModeBasic, ModeAdvanced, ModeGDP, ModeRDP, Mode(-1), Mode(5)} {
		for _, x := range extremes {
			for _, y := range extremes {
				b := Budget{Eps: x, Delta: y}
				name := fmt.Sprintf("NewAccountant(%v, %v)", mode, b)
				res := call(t, name, func() *Accountant { a, _ := NewAccountant(mode, b); return a })
				okBudget := x > 0 && !math.IsInf(x, 1) && y >= 0 && y < 1 && mode >= 0 && mode <= ModeRDP && ((mode != ModeZCDP && mode != ModeGDP && mode != ModeRDP) || y > 0)
				if (res != nil) != okBudget {
					t.Errorf("%s accepted: %v, want %v", name, res != nil, okBudget)
				}
				if res == nil {
					continue
				}
				// A few events per budget keep the run short; the events
				// of every extreme pair go through one accountant below.
				exerciseAccountant(t, res, []Event{Pure(x), ZcdpFor(x, y), Approx(0.1, y), Gdp(y), GaussianZcdp(y)}, 2)
			}
		}
	}
	// The legacy rule, with every budget: it must return promptly and
	// never admit beyond its budget either (it does not resume: its State
	// is the plain totals).
	for _, x := range extremes {
		for _, y := range extremes {
			b := Budget{Eps: x, Delta: y}
			l := call(t, fmt.Sprintf("LegacyAdvancedVerifier(%v)", b), func() *Accountant { l, _ := LegacyAdvancedVerifier(b); return l })
			if l == nil {
				continue
			}
			for _, e := range []Event{Pure(x), ZcdpFor(x, y), Approx(0.1, y), ZcdpFor(0.01, 1e-9), Approx(y, 1e-9)} {
				err := call(t, fmt.Sprintf("legacy %v Spend %+v", b, e), func() error { return l.Spend(e) })
				if spent := l.Spent(); err == nil && !budgetFits(spent, b) {
					t.Errorf("legacy %v: spent %v after an accepted spend", b, spent)
				}
			}
		}
	}
	for _, mode := range []Mode{ModeZCDP, ModeBasic} {
		a := mustAccountant(t, mode, Budget{Eps: 10, Delta: 1e-6})
		var all []Event
		for _, x := range extremes {
			for _, y := range extremes {
				all = append(all, eventsFor(x, y)...)
			}
		}
		exerciseAccountant(t, a, all, 1)
		// Replay of the same (mostly invalid) events: an error or an
		// accountant, promptly.
		call(t, "Replay", func() error { _, err := Replay(mode, Budget{Eps: 10, Delta: 1e-6}, all); return err })
	}
	// Resume with every budget and a State holding large totals.
	big := mustAccountant(t, ModeZCDP, Budget{Eps: 1, Delta: 1e-6})
	for range 3 {
		big.tot.add(Pure(MaxEps), big.mode)
	}
	st := big.State()
	for _, x := range extremes {
		for _, y := range extremes {
			b := Budget{Eps: x, Delta: y}
			for _, mode := range []Mode{ModeZCDP, ModeBasic, ModeAdvanced} {
				a := call(t, fmt.Sprintf("Resume(%v, %v)", mode, b), func() *Accountant { a, _ := Resume(mode, b, st); return a })
				if a != nil && x <= MaxEps { // the totals hold ε ≥ 3·MaxEps
					if err := a.Check(Pure(1e-9)); !errors.Is(err, ErrBudgetExceeded) {
						t.Errorf("Resume(%v, %v) over budget: Check = %v", mode, b, err)
					}
				}
			}
		}
	}
}

// --- fuzz tests: run their seeds in `go test`, search with -fuzz ---------

func addPairs(f *testing.F) {
	for _, x := range extremes {
		for _, y := range extremes {
			f.Add(x, y)
		}
	}
}

// FuzzInverses: the inverses return promptly for any target and, for a
// valid one, never calibrate a cost above it.
func FuzzInverses(f *testing.F) {
	addPairs(f)
	f.Add(1e300, 1e-7) // issue 10's private_count(ds, eps=1e300, delta=1e-7)
	f.Fuzz(func(t *testing.T, eps, delta float64) {
		checkConversions(t, eps, delta)
	})
}

// fuzzEvent builds an event from fuzzed numbers: kind picks the
// constructor.
func fuzzEvent(kind uint8, x, y float64) Event {
	switch kind % 6 {
	case 0:
		return Pure(x)
	case 1:
		return Approx(x, y)
	case 2:
		return ZcdpFor(x, y)
	case 3:
		return GdpFor(x, y)
	case 4:
		return Zcdp(x)
	}
	return Gdp(x).WithTarget(y, 1e-6)
}

// FuzzAccountant: whatever the budget and the events, every call returns
// promptly, an accepted spend keeps the composed cost within the budget, a
// refused one changes nothing, and the State resumes exactly.
func FuzzAccountant(f *testing.F) {
	for _, x := range extremes {
		for _, y := range []float64{1e-6, 0, math.NaN(), 1e300, 5e-324} {
			f.Add(uint8(0), x, y, uint8(0), x, y, uint8(3))
			f.Add(uint8(0), 1.0, 1e-6, uint8(2), x, y, uint8(2))
			f.Add(uint8(1), x, 0.0, uint8(1), 0.1, y, uint8(4))
			f.Add(uint8(2), 3.0, y, uint8(3), x, 1e-7, uint8(1))
		}
	}
	f.Fuzz(func(t *testing.T, mode uint8, bEps, bDelta float64, kind uint8, x, y float64, n uint8) {
		m := Mode(mode % 3)
		a := call(t, "NewAccountant", func() *Accountant { a, _ := NewAccountant(m, Budget{bEps, bDelta}); return a })
		if a == nil {
			return
		}
		e := fuzzEvent(kind, x, y)
		exerciseAccountant(t, a, []Event{e, fuzzEvent(kind+1, y, x)}, int(n%8)+1)
	})
}

// FuzzStateText: decoding arbitrary text returns promptly with an error or
// a State that re-encodes to the same text and resumes.
func FuzzStateText(f *testing.F) {
	a, err := NewAccountant(ModeZCDP, Budget{Eps: 10, Delta: 1e-6})
	if err != nil {
		f.Fatal(err)
	}
	if err := a.Spend(Pure(0.5), ZcdpFor(0.3, 1e-7), Approx(0.1, 1e-8)); err != nil {
		f.Fatal(err)
	}
	f.Add(a.State().String())
	f.Add(State{}.String())
	f.Add("accounting-state/1 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0")
	f.Add("accounting-state/1 events=1 rho=Inf apdelta=0 eps=0x.8p+0 delta=0")
	f.Add("accounting-state/1 events=1 rho=-0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0")
	f.Add("accounting-state/1 events=1 rho=0x.8p-99999999999 apdelta=0 eps=0x.8p+0 delta=0")
	f.Add("accounting-state/1 events=1 rho=0x.8p+99999999999 apdelta=0 eps=0x.8p+0 delta=0")
	f.Add("accounting-state/1 events=0 rho=0x.8p-2 apdelta=0 eps=0 delta=0")
	f.Add("accounting-state/1 events=-1 rho=0 apdelta=0 eps=0 delta=0")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		var s State
		err := call(t, "UnmarshalText", func() error { return s.UnmarshalText([]byte(text)) })
		if err != nil {
			return
		}
		if s.String() != text {
			t.Fatalf("decoded %q, re-encoded %q", text, s.String())
		}
		call(t, "Resume", func() error {
			r, err := Resume(ModeZCDP, Budget{Eps: 1, Delta: 1e-6}, s)
			if err == nil {
				r.Spent()
				_ = r.Check(Pure(0.1))
			}
			return err
		})
	})
}
