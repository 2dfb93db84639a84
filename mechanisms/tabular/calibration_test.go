package tabular

import (
	"fmt"
	"math"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// gdpDeltaRef is the exact privacy profile of μ-GDP (Dong, Roth and Su
// 2022, Cor. 2.13), δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2), written out
// here with erfc so that the test does not lean on the accounting package.
func gdpDeltaRef(mu, eps float64) float64 {
	phi := func(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }
	return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
}

// muStarRef is the largest μ whose profile meets (ε, δ), by bisection.
func muStarRef(eps, delta float64) float64 {
	lo, hi := 0.0, 1.0
	for gdpDeltaRef(hi, eps) < delta {
		lo, hi = hi, 2*hi
	}
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if gdpDeltaRef(mid, eps) <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// On a gdp dataset a Gaussian release has σ = Δ/μ*(ε, δ) (plus the
// lattice's rounding slack, as under zCDP) and is charged the μ*-GDP
// event; under the default calibration nothing changes. At ε = 1,
// δ = 1e-6 the noise is about 7 % below the zCDP calibration's.
func TestGaussianCalibrationGDP(t *testing.T) {
	for _, c := range []struct{ eps, delta, minGain float64 }{
		{1, 1e-6, 0.06}, {0.5, 1e-5, 0.07}, {2, 1e-7, 0.05},
	} {
		name := fmt.Sprintf("eps=%v,delta=%v", c.eps, c.delta)
		mu := muStarRef(c.eps, c.delta)
		bins, _ := NewCategoryBins([]string{"a", "b", "c"}, "other")
		zp, err := PlanHistogram(bins, 1, c.eps, c.delta, accounting.AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		gp, err := PlanHistogram(bins, 1, c.eps, c.delta, accounting.AddRemove, CalibrateGDP)
		if err != nil {
			t.Fatal(err)
		}
		// Independent: σ = GaussianScale(Δ = 1, 1/μ*) from the reference μ*.
		want := noise.GaussianScale(1, 1/mu, bins.Len())
		if rel := gp.Scale/want - 1; !(rel >= 0 && rel < 1e-9) {
			t.Errorf("%s: gdp σ = %.12g, want Δ/μ* = %.12g (μ* = %.10g; relative %.3g; must not be below)", name, gp.Scale, want, mu, rel)
		}
		if gp.Event.Kind != accounting.GDP || math.Abs(gp.Event.Mu/mu-1) > 1e-9 || gp.Event.Eps != c.eps || gp.Event.Delta != c.delta {
			t.Errorf("%s: gdp event %+v, want μ = %.10g with the target", name, gp.Event, mu)
		}
		if zp.Event.Kind != accounting.ZCDP || !zp.Event.Gaussian || zp.Rho != accounting.RhoForTarget(c.eps, c.delta) {
			t.Errorf("%s: default calibration changed: %+v", name, zp.Event)
		}
		if gain := 1 - gp.Scale/zp.Scale; gain < c.minGain || gain > 0.15 {
			t.Errorf("%s: gdp σ %.6g vs zcdp σ %.6g: %.1f %% less noise, want at least %.0f %%", name, gp.Scale, zp.Scale, 100*gain, 100*c.minGain)
		}
		t.Logf("%s: σ zcdp %.6g, σ gdp %.6g (Δ = 1): %.2f %% less noise", name, zp.Scale, gp.Scale, 100*(1-gp.Scale/zp.Scale))
	}
}

// The grouped mean splits μ*² between its two releases as it splits ρ:
// the two are together μ*-GDP, √(μ_count² + μ_sum²) ≤ μ*.
func TestGroupMeanCalibrationGDP(t *testing.T) {
	bins, _ := NewCategoryBins([]string{"a", "b"}, "other")
	spec := GroupSpec{Stat: GroupMean, Groups: bins, Lo: 0, Hi: 10, MaxGroups: 1, CountShare: 0.2}
	p, err := PlanGroups(spec, 1, 1e-6, accounting.AddRemove, CalibrateGDP)
	if err != nil {
		t.Fatal(err)
	}
	mu := muStarRef(1, 1e-6)
	if p.Event.Kind != accounting.GDP || math.Abs(p.Event.Mu/mu-1) > 1e-9 {
		t.Fatalf("event %+v, want μ* = %v", p.Event, mu)
	}
	if got := math.Sqrt(2*p.CountRho + 2*p.SumRho); !(got <= mu) {
		t.Errorf("the releases' μ is %.12g, above the charged μ* = %.12g", got, mu)
	}
}
