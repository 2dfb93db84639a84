package accounting

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// rrDivergence is D_α of randomized response computed from its two output
// probabilities, independently of PureRDP's rewriting:
// ln(p^α q^(1−α) + q^α p^(1−α))/(α−1) with p = e^ε/(1+e^ε).
func rrDivergence(eps, alpha float64) float64 {
	p := 1 / (1 + math.Exp(-eps))
	q := 1 - p
	return math.Log(math.Pow(p, alpha)*math.Pow(q, 1-alpha)+math.Pow(q, alpha)*math.Pow(p, 1-alpha)) / (alpha - 1)
}

// discreteLaplaceDivergence is D_α(DL(0, S) ‖ DL(v, S)) for the discrete
// Laplace P(z) ∝ exp(−|z|/S), summed directly over the integers (the
// terms beyond |z| = 60·S·α are below 1e-25 of the total).
func discreteLaplaceDivergence(S float64, v int, alpha float64) float64 {
	r := math.Exp(-1 / S)
	norm := (1 - r) / (1 + r)
	lim := int(60*S*alpha) + v + 10
	sum := 0.0
	for z := -lim; z <= lim; z++ {
		lp := float64(-abs(z))/S + math.Log(norm)
		lq := float64(-abs(z-v))/S + math.Log(norm)
		sum += math.Exp(alpha*lp + (1-alpha)*lq)
	}
	return math.Log(sum) / (alpha - 1)
}

func abs(z int) int {
	if z < 0 {
		return -z
	}
	return z
}

// laplaceDivergence is Mironov's (2017, Prop. 6) closed form for the
// continuous Laplace mechanism of ε = Δ/b:
// ln(α/(2α−1)·e^((α−1)ε) + (α−1)/(2α−1)·e^(−αε))/(α−1).
func laplaceDivergence(eps, alpha float64) float64 {
	return math.Log(alpha/(2*alpha-1)*math.Exp((alpha-1)*eps)+(alpha-1)/(2*alpha-1)*math.Exp(-alpha*eps)) / (alpha - 1)
}

// brWorstDivergence is the largest D_α over the ε-bounded-range pairs,
// computed as the maximum over a fine grid of t ∈ [0, ε] of the binary
// pair whose privacy loss takes the values t and t − ε (the extreme
// points: for a loss in [t−ε, t] with E_Q[e^L] = 1, E_Q[e^(αL)] is convex
// in e^L and so largest on the endpoints). A lower bound on the supremum,
// within the grid's resolution.
func brWorstDivergence(eps, alpha float64) float64 {
	best := 0.0
	for i := 0; i <= 4000; i++ {
		t := eps * float64(i) / 4000
		q := -math.Expm1(t-eps) / (math.Exp(t) * -math.Expm1(-eps)) // Q's mass on the outcome of loss t
		if q < 0 || q > 1 {
			continue
		}
		v := math.Log(q*math.Exp(alpha*t)+(1-q)*math.Exp(alpha*(t-eps))) / (alpha - 1)
		best = math.Max(best, v)
	}
	return best
}

func TestPureRDPCurve(t *testing.T) {
	for _, eps := range []float64{1e-3, 0.05, 0.3, 1, 2.5, 8} {
		for _, alpha := range []float64{1.01, 1.5, 2, 5.711, 20, 300} {
			got := PureRDP(eps, alpha)
			want := rrDivergence(eps, alpha)
			if math.IsInf(want, 0) || math.IsNaN(want) { // pow overflows: skip the reference
				continue
			}
			if math.Abs(got-want) > 1e-9*want+rdpCurveSlack(alpha-1) {
				t.Errorf("PureRDP(%g, %g) = %.15g, randomized response %.15g", eps, alpha, got, want)
			}
			if got > alpha*eps*eps/2*(1+1e-12) || got > eps {
				t.Errorf("PureRDP(%g, %g) = %g above min(ε, αε²/2)", eps, alpha, got)
			}
			// The discrete Laplace of one lattice step is randomized
			// response; a shift of several steps lies between it and the
			// continuous Laplace curve, so PureRDP bounds every lattice.
			if alpha <= 5.711 && eps >= 0.05 && eps <= 2.5 {
				if dl := discreteLaplaceDivergence(1/eps, 1, alpha); math.Abs(dl-want) > 1e-9*want+1e-14 {
					t.Errorf("discrete Laplace ε=%g, one step, α=%g: %.12g, randomized response %.12g", eps, alpha, dl, want)
				}
				for _, v := range []int{2, 5} {
					dl := discreteLaplaceDivergence(float64(v)/eps, v, alpha)
					if lap := laplaceDivergence(eps, alpha); dl > got*(1+1e-9) || dl < lap*(1-1e-9) {
						t.Errorf("discrete Laplace ε=%g, %d steps, α=%g: %g outside [Laplace %g, PureRDP %g]", eps, v, alpha, dl, lap, got)
					}
				}
			}
		}
	}
	for _, c := range []struct{ eps, alpha float64 }{{-1, 2}, {math.NaN(), 2}, {1, 1}, {1, 0.5}, {1, math.NaN()}} {
		if v := PureRDP(c.eps, c.alpha); !math.IsNaN(v) {
			t.Errorf("PureRDP(%v, %v) = %v, want NaN", c.eps, c.alpha, v)
		}
	}
	if PureRDP(1, math.Inf(1)) != 1 || PureRDP(0, 3) != 0 || !math.IsInf(PureRDP(math.Inf(1), 3), 1) {
		t.Error("PureRDP's limits are wrong")
	}
}

// The prices the rdp accountant charges bound the worst case of each
// event's class at the order, and are not far above it.
func TestRDPPrices(t *testing.T) {
	for _, alpha := range []float64{1.5, 3, 5.711, 12} {
		for _, eps := range []float64{0.05, 0.3, 1, 3} {
			br, _ := BoundedRange(eps).rdpPrice(alpha)
			worst := brWorstDivergence(eps, alpha)
			if br < worst {
				t.Errorf("bounded range ε=%g, α=%g: charged %g below the worst pair's %g", eps, alpha, br, worst)
			}
			if br > worst*(1+1e-6) {
				t.Errorf("bounded range ε=%g, α=%g: charged %g, above the worst pair's %g", eps, alpha, br, worst)
			}
			if c := BoundedRangeRDP(eps, alpha); c > PureRDP(eps, alpha) || c > alpha*eps*eps/8*(1+1e-12) {
				t.Errorf("BoundedRangeRDP(%g, %g) = %g above PureRDP or αε²/8", eps, alpha, c)
			}
			pure, _ := Pure(eps).rdpPrice(alpha)
			if want := rrDivergence(eps, alpha); pure < want || pure > want*(1+1e-9) {
				t.Errorf("pure ε=%g, α=%g: charged %g, randomized response %g", eps, alpha, pure, want)
			}
		}
		for _, e := range []Event{Zcdp(0.01), GaussianZcdp(0.3), ZcdpFor(1, 1e-6), Gdp(0.4), GdpFor(0.5, 1e-7)} {
			r, ok := e.rdpPrice(alpha)
			if want := alpha * e.rho(); !ok || r < want || r > want*(1+1e-9) {
				t.Errorf("%v at α=%g: charged %g, %v; want α·ρ = %g", e, alpha, r, ok, want)
			}
		}
		if _, ok := Approx(0.1, 1e-7).rdpPrice(alpha); ok {
			t.Error("an approximate event has a Rényi price")
		}
	}
}

// RDPOrder picks the order whose budget matches the zcdp accountant's ρ*,
// and the Rényi budget at it converts back to the budget's ε.
func TestRDPOrder(t *testing.T) {
	for _, b := range []Budget{{4.4, 1e-5}, {1, 1e-6}, {0.1, 1e-9}, {8, 1e-3}, {30, 1e-12}, {1e-3, 0.5}} {
		alpha := RDPOrder(b)
		if !(alpha > 1) {
			t.Fatalf("RDPOrder(%v) = %v", b, alpha)
		}
		B := rdpBound(alpha-1, b.Eps, b.Delta)
		rho := RhoForTarget(b.Eps, b.Delta)
		if B/alpha < rho*(1-1e-5) {
			t.Errorf("%v: α₀ = %g allows ρ = %g, zcdp ρ* = %g", b, alpha, B/alpha, rho)
		}
		// Independently: the CKS conversion of B at α₀ is the budget's ε.
		L := -math.Log(b.Delta)
		e := B + math.Log(1-1/alpha) + (L-math.Log(alpha))/(alpha-1)
		if math.Abs(e-b.Eps) > 1e-9*b.Eps {
			t.Errorf("%v: B(α₀) converts to ε = %g", b, e)
		}
		if RDPOrder(b) != alpha {
			t.Errorf("%v: RDPOrder is not deterministic", b)
		}
		if frac, _ := math.Frexp(alpha - 1); math.Ldexp(frac, rdpOrderBits) != math.Trunc(math.Ldexp(frac, rdpOrderBits)) {
			t.Errorf("%v: α₀ − 1 = %g has more than %d bits", b, alpha-1, rdpOrderBits)
		}
	}
	if got := RDPOrder(Budget{4.4, 1e-5}); math.Abs(got-5.71) > 0.05 {
		t.Errorf("RDPOrder(4.4, 1e-5) = %g, want about 5.71", got)
	}
	for _, b := range []Budget{{0, 1e-5}, {1, 0}, {math.NaN(), 1e-5}, {1, 1}} {
		if v := RDPOrder(b); !math.IsNaN(v) {
			t.Errorf("RDPOrder(%v) = %v, want NaN", b, v)
		}
	}
}

// brWorstCache memoises brWorstDivergence for directRDPCost.
var brWorstCache = map[[2]float64]float64{}

// directRDPCost is the rdp accountant's guarantee recomputed from the
// theorem with the reference curves: the Rényi branch's ε at α₀ and, for
// pure sessions, Σε.
func directRDPCost(events []Event, b Budget, alpha float64) float64 {
	sum, pure, allPure := 0.0, 0.0, true
	for _, e := range events {
		var r float64
		switch {
		case e.Kind == PureDP && e.BoundedRange:
			k := [2]float64{e.Eps, alpha}
			w, ok := brWorstCache[k]
			if !ok {
				w = brWorstDivergence(e.Eps, alpha)
				brWorstCache[k] = w
			}
			r = math.Min(w, alpha*e.Eps*e.Eps/8)
		case e.Kind == PureDP:
			r = rrDivergence(e.Eps, alpha)
		case e.Kind == ZCDP:
			r = alpha * e.Rho
		case e.Kind == GDP:
			r = alpha * e.Mu * e.Mu / 2
		}
		sum += r
		if e.Kind == PureDP {
			pure += e.Eps
		} else {
			allPure = false
		}
	}
	eps := sum + math.Log(1-1/alpha) + (-math.Log(b.Delta)-math.Log(alpha))/(alpha-1)
	if allPure {
		eps = math.Min(eps, pure)
	}
	return eps
}

func randomRDPEvent(rng *rand.Rand) Event {
	x := math.Exp(rng.Float64()*6 - 5) // 0.0067 … 2.7
	switch rng.IntN(5) {
	case 0:
		return Pure(x)
	case 1:
		return BoundedRange(x)
	case 2:
		return GaussianZcdp(x * x / 4)
	case 3:
		return Gdp(x / 2)
	default:
		return ZcdpFor(x, 1e-7)
	}
}

// The accountant admits exactly what the theorem allows, as recomputed
// directly; its cost only grows; and it admits every session the zcdp
// accountant admits.
func TestRDPFilterAgainstDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	trials := 300
	if testing.Short() {
		trials = 80
	}
	for trial := range trials {
		b := Budget{Eps: math.Exp(rng.Float64()*4 - 1), Delta: math.Pow(10, -3-rng.Float64()*7)}
		pureOnly := trial%4 == 0
		a := mustAccountant(t, ModeRDP, b)
		z := mustAccountant(t, ModeZCDP, b)
		alpha := RDPOrder(b)
		var spent, zspent []Event
		last := 0.0
		for range 40 {
			e := randomRDPEvent(rng)
			if pureOnly {
				e = Pure(e.EpsAt(1e-7) / 4)
				if !(e.Eps > 0) || e.Eps > 3 {
					e = Pure(0.2)
				}
			}
			direct := directRDPCost(append(append([]Event(nil), spent...), e), b, alpha)
			err := a.Spend(e)
			switch {
			case err == nil:
				spent = append(spent, e)
				if direct > b.Eps*(1+1e-8) {
					t.Fatalf("trial %d: admitted %v at direct cost %g > budget %v", trial, e, direct, b)
				}
			case errors.Is(err, ErrBudgetExceeded):
				if direct < b.Eps*(1-1e-8) {
					t.Fatalf("trial %d: refused %v at direct cost %g < budget %v", trial, e, direct, b)
				}
			default:
				t.Fatal(err)
			}
			got := a.Spent()
			if len(spent) > 0 {
				if want := directRDPCost(spent, b, alpha); got.Eps < want*(1-1e-8) {
					t.Fatalf("trial %d: Spent %v below the direct cost %g", trial, got, want)
				}
			}
			if got.Eps < last {
				t.Fatalf("trial %d: Spent fell from %g to %g", trial, last, got.Eps)
			}
			last = got.Eps
			if z.Spend(e) == nil {
				zspent = append(zspent, e)
			}
		}
		// Domination: what zcdp admitted, rdp admits at a budget 10⁻⁴ larger
		// (the orders and prices are rounded to a few significant bits).
		wider := mustAccountant(t, ModeRDP, Budget{Eps: b.Eps * (1 + 1e-4), Delta: b.Delta})
		if err := wider.Check(zspent...); err != nil {
			t.Fatalf("trial %d: zcdp admitted %d events that rdp refuses: %v", trial, len(zspent), err)
		}
	}
}

// The rdp accountant on the workloads: a pure session gets basic
// composition, a Gaussian one zcdp's count, quantiles and mixed sessions
// more than zcdp. TestAccountantTable prints the full comparison.
func TestRDPFilterWorkloads(t *testing.T) {
	b := Budget{Eps: 4.4, Delta: 1e-5}
	gauss := GaussianZcdpFor(1, 1e-5)
	count := func(m Mode, e Event) int {
		a := mustAccountant(t, m, b)
		n := 0
		for ; n < 1000 && a.Spend(e) == nil; n++ {
		}
		return n
	}
	for _, c := range []struct {
		e    Event
		want int
	}{{Pure(1), 4}, {BoundedRange(0.3), 40}, {gauss, 14}, {Pure(0.3), 14}} {
		if got := count(ModeRDP, c.e); got != c.want {
			t.Errorf("rdp admits %d × %v, want %d", got, c.e, c.want)
		}
		if z := count(ModeZCDP, c.e); z > c.want {
			t.Errorf("zcdp admits %d × %v, more than rdp's %d", z, c.e, c.want)
		}
	}
	a := mustAccountant(t, ModeRDP, b)
	for range 8 {
		if err := a.Spend(gauss); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Spend(Pure(0.3), Pure(0.3), Pure(0.3), Pure(0.3)); err != nil {
		t.Fatalf("8 Gaussian counts and 4 pure ε = 0.3 calls: %v", err)
	}
	if s := a.Spent(); s.Delta != b.Delta || !(s.Eps > 3.5 && s.Eps < 4.4) {
		t.Errorf("mixed session spent %v", s)
	}
	// A pure session is stated at δ = 0 while the pure branch is the smaller.
	p := mustAccountant(t, ModeRDP, b)
	if err := p.Spend(Pure(1), Pure(1)); err != nil {
		t.Fatal(err)
	}
	if s := p.Spent(); s != (Budget{Eps: 2, Delta: 0}) {
		t.Errorf("two pure ε = 1 calls spent %v, want ε = 2 at δ = 0", s)
	}
	if f := p.Filter(); !strings.Contains(f, "pure ε-DP filter Σε=2") || !strings.Contains(f, "Rényi filter at α=5.") {
		t.Errorf("Filter() = %q", f)
	}
	if s := p.Pricing(Pure(0.3)); !strings.HasPrefix(s, "Rényi filter ρ(α=5.") || !strings.Contains(s, "pure ε=0.3") {
		t.Errorf("Pricing = %q", s)
	}
}

func TestRDPRefusesApprox(t *testing.T) {
	a := mustAccountant(t, ModeRDP, Budget{Eps: 4, Delta: 1e-6})
	err := a.Spend(Approx(0.1, 1e-8))
	if err == nil || errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "rdp accountant") {
		t.Errorf("Spend(approx) = %v, want a refusal naming the rdp accountant", err)
	}
	if _, err := Replay(ModeRDP, Budget{Eps: 4, Delta: 1e-6}, []Event{Pure(0.1), Approx(0.1, 1e-8)}); err == nil {
		t.Error("Replay composed an approximate event")
	}
	if s := ModeRDP.Pricing(Approx(0.1, 1e-8)); s != "Rényi filter: not composable" {
		t.Errorf("Pricing(approx) = %q", s)
	}
	if _, err := NewAccountant(ModeRDP, Budget{Eps: 4}); err == nil {
		t.Error("the rdp accountant accepted a budget with δ = 0")
	}
}

// The State of an rdp accountant round-trips, resumes to the same cost,
// keeps its order across a budget change, and is refused by other modes.
func TestRDPState(t *testing.T) {
	b := Budget{Eps: 4.4, Delta: 1e-5}
	evs := []Event{Pure(0.3), GaussianZcdpFor(1, 1e-5), BoundedRange(0.2), Gdp(0.1), Pure(0.05)}
	ref, err := Replay(ModeRDP, b, evs)
	if err != nil {
		t.Fatal(err)
	}
	for split := range len(evs) + 1 {
		head, err := Replay(ModeRDP, b, evs[:split])
		if err != nil {
			t.Fatal(err)
		}
		text, _ := head.State().MarshalText()
		if split > 0 && !strings.HasPrefix(string(text), "accounting-state/3 ") {
			t.Errorf("rdp State text %s", text)
		}
		var st State
		if err := st.UnmarshalText(text); err != nil || st != head.State() {
			t.Fatalf("%s: %v", text, err)
		}
		a, err := Resume(ModeRDP, b, st)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Spend(evs[split:]...); err != nil {
			t.Fatal(err)
		}
		if a.State() != ref.State() || a.Spent() != ref.Spent() {
			t.Errorf("split %d: resumed %v / %v, replayed %v / %v", split, a.State(), a.Spent(), ref.State(), ref.Spent())
		}
	}
	st := ref.State()
	for _, m := range []Mode{ModeZCDP, ModeBasic, ModeGDP} {
		if _, err := Resume(m, b, st); err == nil {
			t.Errorf("the %v accountant resumed rdp totals", m)
		}
	}
	z, _ := Replay(ModeZCDP, b, evs)
	if _, err := Resume(ModeRDP, b, z.State()); err == nil {
		t.Error("the rdp accountant resumed zcdp totals")
	}
	// A changed budget keeps the order the sums were taken at.
	wider := Budget{Eps: 9, Delta: 1e-5}
	r, err := Resume(ModeRDP, wider, st)
	if err != nil {
		t.Fatal(err)
	}
	if r.tot.order != ref.tot.order || r.tot.order == RDPOrder(wider) {
		t.Errorf("resumed order %g, want the recorded %g (not %g)", r.tot.order, ref.tot.order, RDPOrder(wider))
	}
	for _, bad := range []string{
		strings.Replace(st.String(), "impure=2", "impure=9", 1),
		strings.Replace(st.String(), "order=0x", "order=-0x", 1),
		strings.Replace(st.String(), " rdp=", " rdp=zz", 1),
		"accounting-state/3 events=0 rho=0 apdelta=0 eps=0 delta=0 order=0x1p+01 rdp=0 pureeps=0 impure=0",
	} {
		var s State
		if err := s.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted", bad)
		}
	}
}
