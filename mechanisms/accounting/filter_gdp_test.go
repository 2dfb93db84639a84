package accounting

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting/bignorm"
)

// TestPureToMu checks PureToMu against math/big: Φ(−μ/2) ≤ 1/(1+e^ε) (the
// condition G_μ(α*) ≤ α* that makes f_{ε,0} ≥ G_μ), tight to 1e-9, and the
// consequence the reduction promises: randomized response's privacy profile
// (the worst ε-DP mechanism) stays below the μ-GDP profile at every ε'.
func TestPureToMu(t *testing.T) {
	for _, eps := range []float64{1e-3, 0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 40} {
		mu := PureToMu(eps)
		q := bignorm.Exp(bignorm.New(eps))
		q.Add(q, bignorm.New(1))
		q.Quo(bignorm.New(1), q) // 1/(1+e^ε)
		if bignorm.Phi(bignorm.New(-mu/2)).Cmp(q) > 0 {
			t.Errorf("ε=%g: μ=%.17g is below the tight value (Φ(−μ/2) > 1/(1+e^ε))", eps, mu)
		}
		if bignorm.Phi(bignorm.New(-mu*(1-1e-9)/2)).Cmp(q) <= 0 {
			t.Errorf("ε=%g: μ=%.17g is not tight to 1e-9", eps, mu)
		}
		if eps > 10 {
			continue
		}
		// δ_RR(ε') = (e^ε − e^ε')/(1+e^ε) for ε' ≤ ε.
		for i := 0; i <= 20; i++ {
			e2 := eps * float64(i) / 20
			if e2/mu+mu/2 > 11.5 {
				break
			}
			rr := new(big.Float).Sub(bignorm.Exp(bignorm.New(eps)), bignorm.Exp(bignorm.New(e2)))
			rr.Mul(rr, q)
			if g := bignorm.GDPDelta(mu, e2); rr.Cmp(g) > 0 {
				t.Errorf("ε=%g, ε'=%g: randomized response δ=%s above the μ-GDP δ=%s", eps, e2, rr.Text('g', 8), g.Text('g', 8))
			}
		}
	}
	// Small ε: μ ≈ ε·√(π/2), 25 % more than the ε of zCDP's ρ = ε²/2.
	if r := PureToMu(1e-4) / 1e-4; math.Abs(r-math.Sqrt(math.Pi/2)) > 1e-6 {
		t.Errorf("PureToMu(ε)/ε = %g at small ε, want √(π/2)", r)
	}
	for _, c := range []struct{ in, want float64 }{{0, 0}, {-1, math.NaN()}, {701, math.Inf(1)}} {
		if got := PureToMu(c.in); !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("PureToMu(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}

// exactGDPCount is the largest n with δ_{√n·μ₁}(ε) ≤ δ, in math/big.
func exactGDPCount(t *testing.T, mu1 float64, b Budget) int {
	t.Helper()
	limit := big.NewFloat(b.Delta)
	fits := func(n int) bool {
		mu := math.Sqrt(float64(n)) * mu1
		if b.Eps/mu-mu/2 > 11 { // δ ≤ Φ(−11), below every δ here
			return true
		}
		return bignorm.GDPDelta(mu, b.Eps).Cmp(limit) <= 0
	}
	n := 0
	for fits(n+1) && n < 10000 {
		n++
	}
	return n
}

// TestGDPFilterCount: for Gaussian events the gdp accountant admits exactly
// as many as exact Gaussian DP composition allows (computed independently),
// and never fewer than the zcdp accountant.
func TestGDPFilterCount(t *testing.T) {
	for _, c := range []struct {
		budget     Budget
		eps, delta float64 // each event's calibration target
		gaussian   bool    // Gaussian zCDP event (else a GDP event calibrated exactly)
	}{
		{Budget{4.4, 1e-5}, 1, 1e-5, true},
		{Budget{1, 1e-6}, 0.1, 1e-7, true},
		{Budget{3, 1e-6}, 0.5, 1e-6, false},
		{Budget{8, 1e-9}, 2, 1e-9, true},
	} {
		ev := GdpFor(c.eps, c.delta)
		if c.gaussian {
			ev = GaussianZcdpFor(c.eps, c.delta)
		}
		count := func(m Mode) int {
			a, err := NewAccountant(m, c.budget)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for ; n < 10000; n++ {
				if err := a.Spend(ev); err != nil {
					if !errors.Is(err, ErrBudgetExceeded) {
						t.Fatal(err)
					}
					break
				}
			}
			return n
		}
		mu1 := ev.Mu
		if c.gaussian {
			mu1 = math.Sqrt(2 * ev.Rho)
		}
		gdp, zcdp, exact := count(ModeGDP), count(ModeZCDP), exactGDPCount(t, mu1, c.budget)
		if gdp != exact || zcdp > gdp {
			t.Errorf("%v, events %v: gdp admits %d, exact GDP %d, zcdp %d", c.budget, ev, gdp, exact, zcdp)
		}
	}
}

// TestGDPFilterEvents: what the gdp accountant composes and how.
func TestGDPFilterEvents(t *testing.T) {
	b := Budget{Eps: 2, Delta: 1e-6}
	a, err := NewAccountant(ModeGDP, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []Event{Approx(0.1, 1e-8), ZcdpFor(0.5, 1e-6), Zcdp(0.01)} {
		err := a.Check(ev)
		if err == nil || errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "register the dataset with the zcdp accountant") {
			t.Errorf("gdp accountant, %v: %v, want a refusal that names the zcdp accountant", ev, err)
		}
	}
	if _, err := Replay(ModeGDP, b, []Event{Approx(0.1, 1e-8)}); err == nil {
		t.Error("Replay(gdp) of an approximate event succeeded")
	}
	// Pure, GDP and Gaussian events add their μ²: a mixed session costs
	// GDPEps(√Σμ², δ).
	evs := []Event{Pure(0.3), GdpFor(0.5, 1e-6), GaussianZcdpFor(0.5, 1e-6)}
	if err := a.Spend(evs...); err != nil {
		t.Fatal(err)
	}
	mu := math.Sqrt(PureToMu(0.3)*PureToMu(0.3) + MuForTarget(0.5, 1e-6)*MuForTarget(0.5, 1e-6) + 2*RhoForTarget(0.5, 1e-6))
	if got, want := a.Spent().Eps, GDPEps(mu, 1e-6); math.Abs(got-want) > 1e-12*want || got < want {
		t.Errorf("mixed gdp session spent ε=%.17g, want %.17g", got, want)
	}
	if f := a.Filter(); !strings.HasPrefix(f, "GDP filter Σμ²=") || !strings.Contains(f, "of μ*²=") {
		t.Errorf("Filter() = %q", f)
	}
	if a.Remaining().Delta != b.Delta {
		t.Errorf("gdp Remaining δ = %g, want the budget's %g (no event spends δ outright)", a.Remaining().Delta, b.Delta)
	}
	// The state carries Σμ², round-trips, and resumes only in gdp mode.
	st := a.State()
	text, _ := st.MarshalText()
	if !strings.HasPrefix(string(text), "accounting-state/2 ") {
		t.Errorf("gdp state %s, want version 2", text)
	}
	var back State
	if err := back.UnmarshalText(text); err != nil || back != st {
		t.Fatalf("state %s did not round-trip: %v", text, err)
	}
	r, err := Resume(ModeGDP, b, back)
	if err != nil || r.Spent() != a.Spent() {
		t.Errorf("Resume(gdp) = %v, %v; want spent %v", r, err, a.Spent())
	}
	if _, err := Resume(ModeZCDP, b, back); err == nil {
		t.Error("Resume(zcdp) of a gdp state succeeded")
	}
	z, _ := NewAccountant(ModeZCDP, b)
	if err := z.Spend(evs...); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(ModeGDP, b, z.State()); err == nil {
		t.Error("Resume(gdp) of a zcdp state succeeded")
	}
	// The other modes' States do not change with the Gaussian mark.
	z2, _ := NewAccountant(ModeZCDP, b)
	if err := z2.Spend(Pure(0.3), GdpFor(0.5, 1e-6), ZcdpFor(0.5, 1e-6)); err != nil {
		t.Fatal(err)
	}
	if z.State() != z2.State() || strings.Contains(z.State().String(), "musq") {
		t.Errorf("zcdp state with a Gaussian mark %v, without %v", z.State(), z2.State())
	}
	// A Gaussian mark belongs to zCDP events only.
	bad := GdpFor(0.5, 1e-6)
	bad.Gaussian = true
	if bad.Validate() == nil {
		t.Error("a GDP event marked Gaussian validated")
	}
	// Receipts name the filter.
	for _, c := range []struct {
		m    Mode
		ev   Event
		want string
	}{
		{ModeGDP, GaussianZcdp(0.5), "GDP filter μ=1"},
		{ModeGDP, Approx(1, 1e-7), "GDP filter: not composable"},
		{ModeZCDP, Pure(1), "zCDP filter ρ=0.5"},
		{ModeZCDP, Approx(1, 1e-7), "zCDP filter ρ=0.5 + δ=1e-07"},
		{ModeBasic, Approx(1, 1e-7), "basic composition ε=1, δ=1e-07"},
	} {
		if got := c.m.Pricing(c.ev); got != c.want {
			t.Errorf("%v.Pricing(%v) = %q, want %q", c.m, c.ev, got, c.want)
		}
	}
}
