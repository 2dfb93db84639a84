package pca

import (
	"fmt"
	"math"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// phiRef is the standard normal cdf, textbook form (independent of the
// Mills-ratio evaluation in mechanisms/accounting).
func phiRef(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }

// gdpDeltaRef is the μ-GDP privacy profile δ(ε) = Φ(−ε/μ+μ/2) −
// e^ε·Φ(−ε/μ−μ/2), valid for every real ε (Dong–Roth–Su Cor. 2.13).
func gdpDeltaRef(mu, eps float64) float64 {
	return phiRef(-eps/mu+mu/2) - math.Exp(eps)*phiRef(-eps/mu-mu/2)
}

// muStarRef is the largest μ whose profile meets (ε, δ), by bisection.
func muStarRef(eps, delta float64) float64 {
	lo, hi := 0.0, 1.0
	for gdpDeltaRef(hi, eps) < delta {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		if mid := (lo + hi) / 2; gdpDeltaRef(mid, eps) <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// pureToMuRef is 2Φ⁻¹(e^ε/(1+e^ε)) by bisection on Φ.
func pureToMuRef(eps float64) float64 {
	p := 1 / (1 + math.Exp(-eps))
	lo, hi := 0.0, 64.0
	for range 200 {
		if mid := (lo + hi) / 2; phiRef(mid/2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// The default (zcdp) calibration of gauss, npm and adaptive is bit for bit
// what it was before the gdp calibration: the values below were printed by
// the plans of the commit before it (ρ, noise multiplier, std, sparse-vector ε).
func TestZCDPPlansUnchanged(t *testing.T) {
	golden := []struct {
		method            string
		eps               float64
		nb                int
		rho, mult, std, s float64
	}{
		{"gauss", 0.5, 0, 0x1.b34249e84e451p-08, 0x1.15a6f599e0b1ap+03, 0x1.88ad97275f408p+03, 0},
		{"gauss", 0.5, 1, 0x1.b34249e84e451p-08, 0x1.15a6f599e0b1ap+03, 0x1.15abb8b058aacp+03, 0},
		{"gauss", 1, 0, 0x1.8f0c580a051f7p-06, 0x1.21f9e403f7715p+02, 0x1.9a1b8c6755dc8p+02, 0},
		{"gauss", 1, 1, 0x1.8f0c580a051f7p-06, 0x1.21f9e403f7715p+02, 0x1.21fedd3666e6dp+02, 0},
		{"gauss", 2, 0, 0x1.6912cb1a57716p-04, 0x1.30d7fb3376c91p+01, 0x1.af226da82b3c2p+01, 0},
		{"gauss", 2, 1, 0x1.6912cb1a57716p-04, 0x1.30d7fb3376c91p+01, 0x1.30dd35ad1415ap+01, 0},
		{"npm", 0.5, 0, 0x1.b34249e84e451p-08, 0x1.dbdf32defc6ep+05, 0x1.dbe79f348b403p+05, 0},
		{"npm", 0.5, 1, 0x1.b34249e84e451p-08, 0x1.dbdf32defc6ep+05, 0x1.dbe79f348b403p+05, 0},
		{"npm", 1, 0, 0x1.8f0c580a051f7p-06, 0x1.f0fe7a81fd23bp+04, 0x1.f107468c95a82p+04, 0},
		{"npm", 1, 1, 0x1.8f0c580a051f7p-06, 0x1.f0fe7a81fd23bp+04, 0x1.f107468c95a82p+04, 0},
		{"npm", 2, 0, 0x1.6912cb1a57716p-04, 0x1.053ce5020b02dp+04, 0x1.054184c2f5af6p+04, 0},
		{"npm", 2, 1, 0x1.6912cb1a57716p-04, 0x1.053ce5020b02dp+04, 0x1.054184c2f5af6p+04, 0},
		{"adaptive", 0.5, 0, 0x1.b34249e84e451p-08, 0x1.a81ee7656c678p+04, 0x1.a82297c254be5p+05, 0x1.64da76aa074c1p-06},
		{"adaptive", 0.5, 1, 0x1.b34249e84e451p-08, 0x1.a81ee7656c678p+04, 0x1.a82648172405fp+04, 0x1.64da76aa074c1p-06},
		{"adaptive", 1, 0, 0x1.8f0c580a051f7p-06, 0x1.baf2241ce3ef1p+03, 0x1.baf5fe63fa29dp+04, 0x1.55afe8f38e6fep-05},
		{"adaptive", 1, 1, 0x1.8f0c580a051f7p-06, 0x1.baf2241ce3ef1p+03, 0x1.baf9d8a31ea2bp+03, 0x1.55afe8f38e6fep-05},
		{"adaptive", 2, 0, 0x1.6912cb1a57716p-04, 0x1.d1a80a5a7bdacp+02, 0x1.d1ac1732b7fb2p+03, 0x1.4505d081f9346p-04},
		{"adaptive", 2, 1, 0x1.6912cb1a57716p-04, 0x1.d1a80a5a7bdacp+02, 0x1.d1b02402df1ap+02, 0x1.4505d081f9346p-04},
	}
	for _, g := range golden {
		opt := Options{K: 1, Eps: g.eps, Delta: 1e-6, Neighbour: accounting.Neighbour(g.nb)}
		if g.method == MethodAdaptive {
			opt.Iters = 7
		}
		pl, err := PlanMethod(g.method, opt, 10)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Rho != g.rho || pl.NoiseMultiplier != g.mult || pl.NoiseStd != g.std || pl.SVTEps != g.s {
			t.Errorf("%s eps=%v %v: plan (ρ, z, σ, ε_s) = (%x, %x, %x, %x), want the pre-gdp (%x, %x, %x, %x)",
				g.method, g.eps, opt.Neighbour, pl.Rho, pl.NoiseMultiplier, pl.NoiseStd, pl.SVTEps, g.rho, g.mult, g.std, g.s)
		}
		want := accounting.GaussianZcdp(g.rho).WithTarget(g.eps, 1e-6)
		if g.method == MethodAdaptive {
			want = accounting.Zcdp(g.rho).WithTarget(g.eps, 1e-6)
		}
		want.Mechanism = "pca/" + g.method
		if pl.Cost != want {
			t.Errorf("%s eps=%v: cost %+v, want %+v", g.method, g.eps, pl.Cost, want)
		}
	}
}

// On gdp datasets gauss and npm are calibrated to μ*(ε, δ) and charged the
// μ*-GDP event; their releases compose (Σ 1/z_i² over the releases) to at
// most the charged μ*, by at most the rounding margin less, and the noise
// shrinks as the tabular calls' does.
func TestGDPCalibrationGaussNPM(t *testing.T) {
	for _, method := range []string{MethodGauss, MethodNPM} {
		for _, eps := range []float64{0.5, 1, 2} {
			const delta = 1e-6
			name := fmt.Sprintf("%s eps=%v", method, eps)
			mu := muStarRef(eps, delta)
			opt := Options{K: 2, Eps: eps, Delta: delta}
			zp, err := PlanMethod(method, opt, 12)
			if err != nil {
				t.Fatal(err)
			}
			opt.Calibration = CalibGDP
			gp, err := PlanMethod(method, opt, 12)
			if err != nil {
				t.Fatal(err)
			}
			if gp.Cost.Kind != accounting.GDP || math.Abs(gp.Cost.Mu/mu-1) > 1e-9 || gp.Cost.Eps != eps || gp.Cost.Delta != delta || gp.Cost.Mechanism != "pca/"+method {
				t.Errorf("%s: cost %+v, want GDP μ* = %.10g with the target", name, gp.Cost, mu)
			}
			// The releases: Iters Gaussians, each of multiplier z per unit of
			// sensitivity, are √(Iters)/z-GDP.
			released := math.Sqrt(float64(gp.Iters)) / gp.NoiseMultiplier
			if !(released <= gp.Cost.Mu) || released < gp.Cost.Mu*(1-1e-9) {
				t.Errorf("%s: the releases are %.15g-GDP, charged %.15g: must not exceed it, nor waste more than rounding", name, released, gp.Cost.Mu)
			}
			// σ includes the sensitivity and the lattice slack as under zCDP.
			if !(gp.NoiseStd >= gp.Sensitivity*gp.NoiseMultiplier) {
				t.Errorf("%s: σ = %v below Δ·z = %v", name, gp.NoiseStd, gp.Sensitivity*gp.NoiseMultiplier)
			}
			gain := 1 - gp.NoiseStd/zp.NoiseStd
			if gain < 0.04 || gain > 0.15 {
				t.Errorf("%s: σ gdp %.6g vs zcdp %.6g: %.1f %% less noise, want 4–15 %%", name, gp.NoiseStd, zp.NoiseStd, 100*gain)
			}
			t.Logf("%s: σ zcdp %.6g, σ gdp %.6g: %.2f %% less noise (%s)", name, zp.NoiseStd, gp.NoiseStd, 100*gain, gp.Note)
		}
	}
	// ppm-entry (matrix datasets) keeps the zCDP calibration: its plan
	// refuses CalibGDP rather than charge an event it was not built for.
	if _, err := PlanPPMEntry(EntryOptions{K: 1, Eps: 1, Delta: 1e-6, Calibration: CalibGDP}, 5); err == nil {
		t.Error("ppm-entry accepted CalibGDP")
	}
}

// rrGaussDelta is the exact privacy profile δ(ε) of T randomized-response
// steps of ε_s (the dominating pair of every ε_s-DP step, Dong–Roth–Su
// Prop. 2.5 / Kairouz–Oh–Viswanath) composed with a Gaussian of μ_g: the
// privacy loss is ε_s·(2K − T) + N(μ_g²/2, μ_g²) with K ~ Bin(T, e^ε_s/(1+e^ε_s)),
// so δ(ε) = Σ_k P(K = k)·δ_{μ_g}(ε − ε_s(2k − T)).
func rrGaussDelta(T int, epsS, muG, eps float64) float64 {
	p := 1 / (1 + math.Exp(-epsS))
	sum := 0.0
	for k := 0; k <= T; k++ {
		lg, _ := math.Lgamma(float64(T + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lr, _ := math.Lgamma(float64(T - k + 1))
		w := math.Exp(lg - lk - lr + float64(k)*math.Log(p) + float64(T-k)*math.Log1p(-p))
		sum += w * gdpDeltaRef(muG, eps-epsS*float64(2*k-T))
	}
	return sum
}

// On gdp datasets the adaptive power method is charged μ*(ε, δ), and its
// parts — T sparse-vector steps of ε_s (pure DP, monotone AboveThreshold)
// and T Gaussian releases of multiplier z, both fixed by the plan before
// the data — are together μ-GDP with μ² = T·(PureToMu(ε_s)² + 1/z²) ≤ μ*².
// Checked against independent references, and the charged μ against the
// exact composition of the dominating pairs: its profile lies below μ*'s.
func TestAdaptiveGDPPrice(t *testing.T) {
	for _, c := range []struct {
		eps   float64
		iters int
	}{{0.5, 7}, {1, 11}, {2, 20}} {
		const delta = 1e-6
		name := fmt.Sprintf("eps=%v T=%d", c.eps, c.iters)
		pl, err := PlanAdaptive(Options{K: 1, Eps: c.eps, Delta: delta, Iters: c.iters, Calibration: CalibGDP}, 10)
		if err != nil {
			t.Fatal(err)
		}
		mu := muStarRef(c.eps, delta)
		if pl.Cost.Kind != accounting.GDP || math.Abs(pl.Cost.Mu/mu-1) > 1e-9 {
			t.Fatalf("%s: cost %+v, want GDP μ* = %.10g", name, pl.Cost, mu)
		}
		T := float64(pl.Iters)
		muS := pureToMuRef(pl.SVTEps)
		muG := math.Sqrt(T) / pl.NoiseMultiplier
		composed := math.Sqrt(T*muS*muS + muG*muG)
		if !(composed <= pl.Cost.Mu) || composed < pl.Cost.Mu*(1-1e-6) {
			t.Errorf("%s: the run is %.12g-GDP (sparse vector ε_s = %.6g → μ_s = %.6g, Gaussian μ = %.6g), charged %.12g", name, composed, pl.SVTEps, muS, muG, pl.Cost.Mu)
		}
		// The same split of μ*² as the zCDP split of ρ*.
		if share := T * muS * muS / (composed * composed); math.Abs(share-svtShare) > 1e-6 {
			t.Errorf("%s: the sparse vector gets %.6g of μ², want %v", name, share, svtShare)
		}
		for e := 0.0; e <= 6; e += 0.25 {
			exact := rrGaussDelta(pl.Iters, pl.SVTEps, muG, e)
			if bound := gdpDeltaRef(pl.Cost.Mu, e); exact > bound*(1+1e-9)+1e-15 {
				t.Errorf("%s: at ε=%v the exact composition has δ=%.6g above the charged μ's %.6g", name, e, exact, bound)
			}
		}
		if d := rrGaussDelta(pl.Iters, pl.SVTEps, muG, c.eps); !(d <= delta*(1+1e-9)) {
			t.Errorf("%s: the exact composition's δ(ε) = %.6g exceeds the target %g", name, d, delta)
		}
		t.Logf("%s: ε_s = %.5g, z = %.5g, composed μ = %.8g ≤ μ* = %.8g", name, pl.SVTEps, pl.NoiseMultiplier, composed, pl.Cost.Mu)
	}
}
