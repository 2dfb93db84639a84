package accounting

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting/bignorm"
)

// cksDeltaRef is the tight zCDP conversion (Canonne–Kamath–Steinke 2020,
// Prop. 12): δ = inf over α > 1 of exp((α−1)(αρ−ε))·(1−1/α)^(α−1)/α,
// evaluated in log space on a dense geometric grid of α−1 and refined by
// golden sections around the best point. Every α gives a valid δ, so the
// grid's minimum is an upper bound on the infimum; independent of
// zcdp.go's search.
func cksDeltaRef(rho, eps float64) float64 {
	logd := func(a float64) float64 {
		return (a-1)*(a*rho-eps) + (a-1)*math.Log1p(-1/a) - math.Log(a)
	}
	best, bestA := math.Inf(1), 0.0
	for i := 0; i <= 40000; i++ {
		a := 1 + math.Pow(10, -6+10*float64(i)/40000)
		if v := logd(a); v < best {
			best, bestA = v, a
		}
	}
	lo, hi := 1+(bestA-1)*0.999, 1+(bestA-1)*1.001
	for range 100 {
		m1, m2 := lo+(hi-lo)*0.382, lo+(hi-lo)*0.618
		if logd(m1) < logd(m2) {
			hi = m2
		} else {
			lo = m1
		}
	}
	return math.Min(1, math.Exp(math.Min(best, logd((lo+hi)/2))))
}

// rhoStarRef is the largest ρ with cksDeltaRef(ρ, ε) ≤ δ, by bisection.
func rhoStarRef(eps, delta float64) float64 {
	lo, hi := 0.0, eps
	for range 100 {
		if mid := (lo + hi) / 2; cksDeltaRef(mid, eps) <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// muStarBig is the largest μ with the exact GDP profile (math/big) at ε
// at most δ, by bisection.
func muStarBig(eps, delta float64) float64 {
	limit := big.NewFloat(delta)
	lo, hi := 0.0, 4.0
	for range 80 {
		if mid := (lo + hi) / 2; bignorm.GDPDelta(mid, eps).Cmp(limit) <= 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// TestSplitDeltaCounts backs the claim in docs/accounting.md §3 that
// splitting the budget's δ between a GDP and a zCDP filter (a union bound,
// δ_A + δ_B = δ, which is sound) costs the GDP side its advantage: on
// (4.4, 1e-5), counts calibrated to (1, 1e-5) fit 14 times under either
// accountant at the full δ and 13 times at δ/2. The counts are computed
// independently (GDP profile in math/big, the CKS conversion on a dense α
// grid) and compared with what the accountants admit.
func TestSplitDeltaCounts(t *testing.T) {
	const eps, delta = 4.4, 1e-5
	mu1 := muStarBig(1, 1e-5)   // a gdp dataset's count of (1, 1e-5)
	rho1 := rhoStarRef(1, 1e-5) // a zcdp dataset's
	if math.Abs(mu1/MuForTarget(1, 1e-5)-1) > 1e-9 || math.Abs(rho1/RhoForTarget(1, 1e-5)-1) > 1e-6 {
		t.Fatalf("references μ1=%.12g (MuForTarget %.12g), ρ1=%.12g (RhoForTarget %.12g)", mu1, MuForTarget(1, 1e-5), rho1, RhoForTarget(1, 1e-5))
	}
	zcdpCount := func(d float64) int {
		n := 0
		for cksDeltaRef(float64(n+1)*rho1, eps) <= d {
			n++
		}
		return n
	}
	admitted := func(m Mode, ev Event, d float64) int {
		a, err := NewAccountant(m, Budget{Eps: eps, Delta: d})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ; n < 1000; n++ {
			if err := a.Spend(ev); err != nil {
				if !errors.Is(err, ErrBudgetExceeded) {
					t.Fatal(err)
				}
				break
			}
		}
		return n
	}
	for _, c := range []struct {
		d              float64
		wantGDP, wantZ int
	}{{delta, 14, 14}, {delta / 2, 13, 13}} {
		g := exactGDPCount(t, mu1, Budget{Eps: eps, Delta: c.d})
		z := zcdpCount(c.d)
		ag := admitted(ModeGDP, GdpFor(1, 1e-5), c.d)
		az := admitted(ModeZCDP, GaussianZcdpFor(1, 1e-5), c.d)
		t.Logf("(%v, %g): exact GDP admits %d counts of std %.4g, zCDP (CKS) %d of std %.4g; accountants %d and %d",
			eps, c.d, g, 1/mu1, z, 1/math.Sqrt(2*rho1), ag, az)
		if g != c.wantGDP || z != c.wantZ || ag != g || az != z {
			t.Errorf("(%v, %g): exact GDP %d (accountant %d), zCDP %d (accountant %d); want %d and %d",
				eps, c.d, g, ag, z, az, c.wantGDP, c.wantZ)
		}
	}
}

// PureForMu inverts PureToMu from below, tightly: the ε it returns is
// μ-GDP (checked against math/big through the same condition as
// TestPureToMu), and ε·(1 + 1e-9) is not.
func TestPureForMu(t *testing.T) {
	for _, mu := range []float64{1e-4, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10} {
		eps := PureForMu(mu)
		holds := func(e float64) bool { // Φ(−μ/2) ≤ 1/(1+e^ε) ⇔ ε-DP ⊂ μ-GDP
			q := bignorm.Exp(bignorm.New(e))
			q.Add(q, bignorm.New(1))
			q.Quo(bignorm.New(1), q)
			return bignorm.Phi(bignorm.New(-mu/2)).Cmp(q) <= 0
		}
		if !(eps > 0) || !holds(eps) || PureToMu(eps) > mu {
			t.Errorf("μ=%g: PureForMu = %.17g is not μ-GDP (PureToMu %.17g)", mu, eps, PureToMu(eps))
		}
		if holds(eps * (1 + 1e-9)) {
			t.Errorf("μ=%g: PureForMu = %.17g is not tight to 1e-9", mu, eps)
		}
	}
	for _, c := range []struct{ in, want float64 }{{0, 0}, {-1, math.NaN()}, {math.NaN(), math.NaN()}} {
		if got := PureForMu(c.in); !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("PureForMu(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}
