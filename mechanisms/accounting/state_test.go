package accounting

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Resuming from a State and spending the rest gives exactly the State and
// cost of replaying everything, in any order and any mode: the sums are
// exact, so the split point cannot matter.
func TestResumeEqualsReplay(t *testing.T) {
	evs := []Event{Zcdp(0.013), Gdp(0.21), Pure(0.07), Approx(0.3, 1e-8), ZcdpFor(0.1, 1e-7),
		GdpFor(0.2, 1e-7), Pure(1e-3), Zcdp(1e-7), Approx(0.05, 2e-8), Pure(0.11), Pure(5e-300)}
	budget := Budget{Eps: 50, Delta: 1e-5}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, mode := range []Mode{ModeZCDP, ModeBasic, ModeAdvanced} {
		var use []Event
		for _, e := range evs {
			if mode == ModeZCDP || e.HasTarget() {
				use = append(use, e)
			}
		}
		ref, err := Replay(mode, budget, use)
		if err != nil {
			t.Fatal(err)
		}
		for trial := range 10 {
			perm := append([]Event(nil), use...)
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			split := trial % (len(perm) + 1)
			head, err := Replay(mode, budget, perm[:split])
			if err != nil {
				t.Fatal(err)
			}
			text, _ := head.State().MarshalText()
			var st State
			if err := st.UnmarshalText(text); err != nil {
				t.Fatalf("%v: %s: %v", mode, text, err)
			}
			a, err := Resume(mode, budget, st)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Spend(perm[split:]...); err != nil {
				t.Fatalf("%v: spending the rest: %v", mode, err)
			}
			if a.State() != ref.State() || a.Spent() != ref.Spent() || a.Remaining() != ref.Remaining() {
				t.Errorf("%v split %d: resumed %v / %v, replayed %v / %v", mode, split, a.State(), a.Spent(), ref.State(), ref.Spent())
			}
			if got := a.State().Events(); got != int64(len(use)) {
				t.Errorf("Events() = %d, want %d", got, len(use))
			}
			if len(a.Events()) != len(perm)-split {
				t.Errorf("a resumed accountant holds %d events, want the %d spent since", len(a.Events()), len(perm)-split)
			}
		}
	}
	// The State does not depend on the mode: the ledger compares States
	// of accountants built with different rules (LegacyAdvancedVerifier).
	var states []State
	for _, mode := range []Mode{ModeBasic, ModeAdvanced, ModeZCDP} {
		a := mustAccountant(t, mode, budget)
		if err := a.Spend(Pure(0.1), ZcdpFor(0.2, 1e-7)); err != nil {
			t.Fatal(err)
		}
		states = append(states, a.State())
	}
	l, _ := LegacyAdvancedVerifier(budget)
	if err := l.Spend(Pure(0.1), ZcdpFor(0.2, 1e-7)); err != nil {
		t.Fatal(err)
	}
	states = append(states, l.State())
	for _, s := range states[1:] {
		if s != states[0] {
			t.Errorf("States differ across modes: %v vs %v", s, states[0])
		}
	}
}

// The text form writes the exact binary value: 0.1 is not 1/10 but
// 0x1.999999999999ap-4, whose big.Float 'p' form is 0x.ccccccccccccdp-3.
func TestStateTextIsExact(t *testing.T) {
	a := mustAccountant(t, ModeBasic, Budget{Eps: 1})
	if err := a.Spend(Pure(0.1), Pure(0.1), Pure(0.1)); err != nil {
		t.Fatal(err)
	}
	// 3 × 0x1.999999999999ap-4 needs 54 bits: a float64 sum would round
	// it, the exact sum keeps it. Computed independently with Python's
	// fractions.Fraction(0.1)*3, written as a hexadecimal fraction in
	// [1/2, 1): 0x.9999999999999cp-1.
	want := "eps=0x.9999999999999cp-1"
	if s := a.State().String(); !strings.Contains(s, want) || !strings.Contains(s, "events=3") {
		t.Errorf("State = %s, want %s", s, want)
	}
	if s := (State{}).String(); s != "accounting-state/1 events=0 rho=0 apdelta=0 eps=0 delta=0" {
		t.Errorf("zero State = %s", s)
	}
}

func TestStateTextRejects(t *testing.T) {
	good := "accounting-state/1 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0"
	var st State
	if err := st.UnmarshalText([]byte(good)); err != nil || st.String() != good {
		t.Fatalf("UnmarshalText(%q) = %v, %s", good, err, st.String())
	}
	tests := []struct {
		text, want string
	}{
		{"", `want "accounting-state/1"`},
		{"accounting-state/2 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0", `want "accounting-state/2" followed by events=…, rho=…, apdelta=…, eps=…, delta=…, musq=…`},
		{"accounting-state/4 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0", `want "accounting-state/1"`},
		{"accounting-state/3 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0", `want "accounting-state/3"`},
		{"accounting-state/2 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0 musq=0", "musq=0 is written in version 1"},
		{"accounting-state/1 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0", `want "accounting-state/1"`},
		{"accounting-state/1 events=1  rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0", `want "accounting-state/1"`},
		{"accounting-state/1 events=1 eps=0x.8p-2 apdelta=0 rho=0x.8p+0 delta=0", "field 2 is not rho="},
		{"accounting-state/1 events=-1 rho=0 apdelta=0 eps=0 delta=0", "bad event count"},
		{"accounting-state/1 events=01 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0", "bad event count"},
		{"accounting-state/1 events=1 rho=Inf apdelta=0 eps=0x.8p+0 delta=0", "not a finite sum"},
		{"accounting-state/1 events=1 rho=NaN apdelta=0 eps=0x.8p+0 delta=0", "not a finite sum"},
		{"accounting-state/1 events=1 rho=-0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0", "negative"},
		{"accounting-state/1 events=1 rho=0.125 apdelta=0 eps=0x.8p+0 delta=0", "not in canonical form"},
		{"accounting-state/1 events=1 rho=0x.10p-1 apdelta=0 eps=0x.8p+0 delta=0", "not in canonical form"},
		{"accounting-state/1 events=1 rho=0x.8p-2 apdelta=0x.8" + strings.Repeat("0", 600) + "1p+0 eps=0x.8p+0 delta=0", "not exact"},
		{"accounting-state/1 events=1 rho=0x.8p-2 apdelta=0x.8p-99999 eps=0x.8p+0 delta=0", "outside the range"},
		{"accounting-state/1 events=1 rho=0x.8p-2 apdelta=0x.8p+2000 eps=0x.8p+0 delta=0", "outside the range"},
		{"accounting-state/1 events=1 rho=zz apdelta=0 eps=0x.8p+0 delta=0", `"zz"`},
		{"accounting-state/1 events=0 rho=0x.8p-2 apdelta=0 eps=0 delta=0", "non-zero sums with no events"},
	}
	for _, tc := range tests {
		var s State
		err := s.UnmarshalText([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("UnmarshalText(%q) = %v, want an error containing %q", tc.text, err, tc.want)
		}
		if s != (State{}) {
			t.Errorf("UnmarshalText(%q) changed the State on error", tc.text)
		}
	}
	// Resume refuses what UnmarshalText would, and a bad budget.
	for _, c := range []struct {
		mode Mode
		b    Budget
		s    State
		want string
	}{
		{ModeBasic, Budget{Eps: 1}, State{events: -1}, "negative event count"},
		{ModeBasic, Budget{Eps: 1}, State{events: 0, rho: "0x.8p-2"}, "with no events"},
		{ModeBasic, Budget{Eps: 1}, State{events: 1, eps: "Inf"}, "not a finite sum"},
		{ModeZCDP, Budget{Eps: 1}, State{}, "needs δ > 0"},
		{ModeBasic, Budget{Eps: math.Inf(1)}, State{}, "positive finite"},
	} {
		if _, err := Resume(c.mode, c.b, c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resume(%v, %v, %+v) = %v, want %q", c.mode, c.b, c.s, err, c.want)
		}
	}
}
