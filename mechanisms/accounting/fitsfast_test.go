package accounting

import (
	"math"
	"math/rand"
	"testing"
)

// The fast paths of the fitting searches must give the values the direct
// ones give, bit for bit: `notebook verify` and `ledger verify` derive a
// receipt's Fits again and compare it with the stored one.

// directLargest is the search as it was before admits: Validate and a full
// Check for every probe, on the accountant itself.
func directLargest(a *Accountant, event func(eps float64) Event) float64 {
	fits := func(eps float64) bool {
		e := event(eps)
		return e.Validate() == nil && a.Check(e) == nil
	}
	lo, hi := 0.0, a.budget.Eps
	if !(hi > 0 && hi <= MaxEps) {
		hi = MaxEps
	}
	for fits(hi) {
		if hi == MaxEps {
			return MaxEps
		}
		lo, hi = hi, math.Min(2*hi, MaxEps)
	}
	for hi-lo > fitsTol*hi {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo > 0 {
		p := math.Pow(10, math.Floor(math.Log10(lo))-5)
		if up := math.Ceil(lo/p) * p; up > lo && up < hi && fits(up) {
			lo = up
		}
	}
	return lo
}

// directRhoForTarget is rhoForTarget with the full conversion in its test.
func directRhoForTarget(eps, delta float64) float64 {
	ok := func(rho float64) bool { return directZCDPToEps(rho, delta) <= eps }
	lo := shrinkUntil(ok, RhoForTargetClassic(eps, delta))
	return bisectUp(ok, lo)
}

func directFits(a *Accountant, delta float64) Fits {
	f := Fits{Pure: directLargest(a, Pure), BoundedRange: directLargest(a, BoundedRange)}
	if delta > 0 && delta < 1 {
		gaussian := func(eps float64) Event { return GaussianZcdpFor(eps, delta) }
		if a.mode == ModeGDP {
			gaussian = func(eps float64) Event { return GdpFor(eps, delta) }
		}
		f.Gaussian, f.GaussianDelta = directLargest(a, gaussian), delta
	}
	return f
}

// directZCDPToEps is ZCDPToEps with minimize1D's whole scan.
func directZCDPToEps(rho, delta float64) float64 {
	switch {
	case math.IsNaN(rho) || math.IsNaN(delta) || rho < 0 || delta < 0:
		return math.NaN()
	case rho == 0 || delta >= 1:
		return 0
	case delta == 0 || math.IsInf(rho, 1):
		return math.Inf(1)
	}
	L := -math.Log(delta)
	t0 := 0.5 * (math.Log(L) - math.Log(rho))
	eps := minimize1D(func(t float64) float64 { return cksEps(rho, L, t) }, t0)
	eps = math.Min(eps, ZCDPToEpsClassic(rho, delta))
	return math.Max(eps, 0)
}

// conversionPoints are (ρ, δ) across the range, extremes included.
func conversionPoints(seed int64, n int) [][2]float64 {
	rng := rand.New(rand.NewSource(seed))
	pts := [][2]float64{{0, 1e-6}, {1e-3, 0}, {1e-3, 1}, {math.Inf(1), 1e-6}, {math.NaN(), 1e-6}, {-1, 1e-6},
		{1e-300, 1e-300}, {1e300, 1e-6}, {5e-324, 0.5}, {0.5, 1e-5}, {0.125, 1e-6}, {MaxRho, 1e-300},
		{1e-20, 1 - 1e-16}, {1e-20, 0.999}, {1e10, 0.5}, {1e-12, 5e-324}}
	for range n {
		pts = append(pts, [2]float64{math.Pow(10, -14+20*rng.Float64()), math.Pow(10, -40*rng.Float64())})
	}
	for range n / 4 {
		pts = append(pts, [2]float64{math.Pow(10, -300+600*rng.Float64()), math.Pow(10, -320*rng.Float64())})
	}
	return pts
}

// TestZCDPToEpsUnchanged: the pruned scan converts exactly as the whole
// one, bit for bit.
func TestZCDPToEpsUnchanged(t *testing.T) {
	for _, p := range conversionPoints(26, 3000) {
		got, want := ZCDPToEps(p[0], p[1]), directZCDPToEps(p[0], p[1])
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("ρ=%v δ=%v: ZCDPToEps %v, whole scan %v", p[0], p[1], got, want)
		}
	}
}

func TestZCDPEpsAtMostIsTheConversionCompared(t *testing.T) {
	for _, p := range conversionPoints(27, 400) {
		v := directZCDPToEps(p[0], p[1])
		limits := []float64{v, math.Nextafter(v, math.Inf(1)), math.Nextafter(v, math.Inf(-1)), v * (1 + 1e-3), v * (1 - 1e-3),
			v * (1 + 1e-12), v * (1 - 1e-12), 0, -1, math.Inf(1), math.NaN(), 2 * ZCDPToEpsClassic(p[0], p[1])}
		for _, l := range limits {
			if got, want := zcdpEpsAtMost(p[0], p[1], l), v <= l; got != want {
				t.Errorf("ρ=%v δ=%v limit=%v: zcdpEpsAtMost says %v, ZCDPToEps=%v says %v", p[0], p[1], l, got, v, want)
			}
		}
	}
}

func TestRhoForTargetUnchanged(t *testing.T) {
	rng := rand.New(rand.NewSource(28))
	type tg struct{ eps, delta float64 }
	tgs := []tg{{1, 1e-5}, {0.1, 1e-6}, {8, 1e-9}, {1e-9, 1e-5}, {MaxEps, 0.5}, {0.5, 1e-300}}
	for range 60 {
		tgs = append(tgs, tg{math.Pow(10, -4+6*rng.Float64()), math.Pow(10, -20*rng.Float64()-0.5)})
	}
	for _, g := range tgs {
		got, want := rhoForTarget(g.eps, g.delta), directRhoForTarget(g.eps, g.delta)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("ε=%v δ=%v: rhoForTarget %v, direct search %v", g.eps, g.delta, got, want)
		}
	}
}

// TestFitsUnchanged compares Fits (parallel searches, admits) with the
// direct search over a table of modes, budgets and spends.
func TestFitsUnchanged(t *testing.T) {
	budgets := []Budget{{Eps: 1, Delta: 1e-5}, {Eps: 1000, Delta: 1e-5}, {Eps: 0.05, Delta: 1e-9}}
	spends := [][]Event{nil, {Pure(0.5)}, {Pure(0.1), Pure(0.1), BoundedRange(0.3)}, {GaussianZcdpFor(0.7, 1e-7)},
		{Approx(0.2, 1e-7)}, {GdpFor(0.3, 1e-7), Pure(0.01)}, {Pure(0.999)}}
	// Replayed past the budget (Replay does not enforce it): under zcdp
	// the first leaves no δ to convert at, and nothing fits.
	replayed := [][]Event{{Approx(0.1, 2e-5)}, {Pure(3), Pure(3)}}
	for _, mode := range []Mode{ModeZCDP, ModeBasic, ModeGDP, ModeRDP} {
		for _, b := range budgets {
			for i, sp := range append(spends, replayed...) {
				a, err := NewAccountant(mode, b)
				if err != nil {
					t.Fatal(err)
				}
				if i >= len(spends) {
					if a, err = Replay(mode, b, sp); err != nil {
						continue // not composable in this mode
					}
				} else if a.Spend(sp...) != nil {
					continue // not composable in this mode, or over this budget
				}
				for _, delta := range []float64{b.Delta, a.Remaining().Delta / 3, 0} {
					got, want := a.Fits(delta), directFits(a, delta)
					if got != want {
						t.Errorf("%v %v after %v, δ=%v: Fits %+v, direct %+v", mode, b, sp, delta, got, want)
					}
				}
			}
		}
	}
}
