package accounting

import (
	"math"
	"testing"
)

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got/want - 1)
}

// Known values. The anchors (design/anchors-dp-libraries.md §2 and §8,
// specs/federated.md §0, specs/power_methods.md §2/§4) print 3–5 significant
// digits, so each case is checked to half a unit in the last printed digit.
func TestKnownValues(t *testing.T) {
	L6 := math.Log(1e6)
	cases := []struct {
		name      string
		got, want float64
		tol       float64 // absolute
	}{
		// Gaussian with composed μ; exact GDP vs tight zCDP (= RDP with CKS
		// conversion for a Gaussian) vs classic zCDP, ρ = μ²/2.
		{"GDPEps(1, 1e-5)", GDPEps(1, 1e-5), 4.377, 5e-4},
		{"ZCDPToEps(0.5, 1e-5)", ZCDPToEps(0.5, 1e-5), 4.728, 5e-4},
		{"ZCDPToEpsClassic(0.5, 1e-5)", ZCDPToEpsClassic(0.5, 1e-5), 5.299, 5e-4},
		{"GDPEps(1, 1e-9)", GDPEps(1, 1e-9), 6.174, 5e-4},
		{"ZCDPToEps(0.5, 1e-9)", ZCDPToEps(0.5, 1e-9), 6.474, 5e-4},
		{"ZCDPToEpsClassic(0.5, 1e-9)", ZCDPToEpsClassic(0.5, 1e-9), 6.938, 5e-4},
		{"GDPEps(0.5, 1e-5)", GDPEps(0.5, 1e-5), 1.993, 5e-4},
		{"ZCDPToEps(0.125, 1e-5)", ZCDPToEps(0.125, 1e-5), 2.166, 5e-4},
		{"ZCDPToEpsClassic(0.125, 1e-5)", ZCDPToEpsClassic(0.125, 1e-5), 2.524, 5e-4},
		{"GDPEps(2, 1e-5)", GDPEps(2, 1e-5), 9.997, 5e-4},
		{"ZCDPToEps(2, 1e-5)", ZCDPToEps(2, 1e-5), 10.725, 5e-4},
		{"ZCDPToEpsClassic(2, 1e-5)", ZCDPToEpsClassic(2, 1e-5), 11.597, 5e-4},
		// The same μ=1 as 100 Gaussians of μ=0.1, each stated at δ=1e-7 and
		// composed by basic composition: ε = 44.7.
		{"100·GDPEps(0.1, 1e-7)", 100 * GDPEps(0.1, 1e-7), 44.7, 0.05},
		// Calibration targets from the brief.
		{"MuForTarget(1, 1e-6)", MuForTarget(1, 1e-6), 0.2367, 5e-5},
		{"MuForTarget(8, 1e-6)", MuForTarget(8, 1e-6), 1.5315, 5e-5},
		// power_methods.md §2: noise multiplier √(1/(2ρ*)) for one step at
		// ε=1, δ=1e-6 is 5.35 with classic zCDP vs the paper's √(4 ln(1/δ)) = 7.43.
		{"√(1/(2·RhoForTargetClassic(1,1e-6)))", math.Sqrt(1 / (2 * RhoForTargetClassic(1, 1e-6))), 5.35, 5e-3},
		{"paper multiplier √(4 ln 1e6)", math.Sqrt(4 * L6), 7.43, 5e-3},
		// power_methods.md §4, E=1, D=1e-6, T=50, f=0.5: ε_s = √(2fρ*/T) = 0.0187,
		// z = √(T/(2(1−f)ρ*)) = 53.5.
		{"APM ε_s", math.Sqrt(2 * 0.5 * RhoForTargetClassic(1, 1e-6) / 50), 0.0187, 5e-5},
		{"APM z", math.Sqrt(50 / (2 * 0.5 * RhoForTargetClassic(1, 1e-6))), 53.5, 0.05},
		// Pure → zCDP.
		{"PureToRho(0.2)", PureToRho(0.2), 0.02, 1e-15},
	}
	for _, c := range cases {
		if math.IsNaN(c.got) || math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %.6g, want %.6g ± %g", c.name, c.got, c.want, c.tol)
		}
	}
}

// bruteCKSEps minimises the CKS bound over a dense grid of orders; an
// independent (slow) check of the search in ZCDPToEps.
func bruteCKSEps(rho, delta float64) float64 {
	L := -math.Log(delta)
	best := math.Inf(1)
	for alpha := 1.0001; alpha < 2000; alpha *= 1.0001 {
		e := alpha*rho + math.Log(1-1/alpha) + (L-math.Log(alpha))/(alpha-1)
		best = math.Min(best, e)
	}
	return best
}

func TestZCDPToEpsMatchesBruteForce(t *testing.T) {
	for _, rho := range []float64{0.01, 0.125, 0.5, 2, 10} {
		for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
			got, brute := ZCDPToEps(rho, delta), bruteCKSEps(rho, delta)
			// The grid's spacing (1e-4 relative in α) leaves brute a little
			// above the true minimum; the search must not be above brute.
			if got > brute*(1+1e-12) || got < brute*(1-1e-6) {
				t.Errorf("ZCDPToEps(%g, %g) = %.12g, brute force %.12g", rho, delta, got, brute)
			}
		}
	}
}

// GDPDelta's cancellation-free evaluation agrees with the textbook formula
// where the latter is well conditioned.
func TestGDPDeltaMatchesDirectFormula(t *testing.T) {
	phi := func(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }
	for _, mu := range []float64{0.3, 0.5, 0.7, 1, 2, 5} {
		for _, eps := range []float64{0, 0.1, 0.5, 1, 2, 4} {
			direct := phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
			if direct < 1e-6 {
				continue // the direct formula itself loses digits there
			}
			if got := GDPDelta(mu, eps); relErr(got, direct) > 1e-10 {
				t.Errorf("GDPDelta(%g, %g) = %.15g, direct %.15g", mu, eps, got, direct)
			}
		}
	}
}

// The two ways of computing R(a)−R(b) (plain difference above width 0.5,
// Gauss–Legendre integral below) agree where both are accurate.
func TestMillsDiffBranchesAgree(t *testing.T) {
	for _, a := range []float64{-3, -0.5, 0, 0.7, 2, 6} {
		for _, w := range []float64{0.3, 0.45, 0.5} {
			integral := millsDiff(a, a+w)
			direct := mills(a) - mills(a+w)
			if relErr(integral, direct) > 1e-11 {
				t.Errorf("R(%g)−R(%g): integral %.15g, difference %.15g", a, a+w, integral, direct)
			}
		}
	}
	for _, x := range []float64{24.9, 25, 25.1} { // erfcx branch switch
		want := 1 / (x * math.SqrtPi) * (1 - 1/(2*x*x) + 3/(4*x*x*x*x))
		if relErr(erfcx(x), want) > 1e-8 {
			t.Errorf("erfcx(%g) = %.15g, want ≈ %.15g", x, erfcx(x), want)
		}
	}
}

var (
	rhoGrid   = []float64{1e-12, 1e-6, 1e-3, 0.05, 0.5, 3, 50, 1e3}
	muGrid    = []float64{1e-6, 1e-3, 0.05, 0.3, 1, 3, 10, 100}
	deltaGrid = []float64{1e-300, 1e-50, 1e-12, 1e-6, 1e-3, 0.1, 0.5}
	epsGrid   = []float64{1e-6, 1e-3, 0.1, 0.5, 1, 3, 10, 100, 1e3}
)

func TestInversesAgree(t *testing.T) {
	const tol = 1e-9
	for _, delta := range deltaGrid {
		for _, rho := range rhoGrid {
			eps := ZCDPToEps(rho, delta)
			if eps == 0 {
				continue // (0, δ) already holds; nothing to invert
			}
			if back := ZCDPToDelta(rho, eps); relErr(back, delta) > tol {
				t.Errorf("ZCDPToDelta(%g, ZCDPToEps(%g, %g)=%g) = %g", rho, rho, delta, eps, back)
			}
			if back := RhoForTarget(eps, delta); relErr(back, rho) > tol {
				t.Errorf("RhoForTarget(ZCDPToEps(%g, %g)=%g) = %g", rho, delta, eps, back)
			}
			ce := ZCDPToEpsClassic(rho, delta)
			if back := RhoForTargetClassic(ce, delta); relErr(back, rho) > tol {
				t.Errorf("RhoForTargetClassic(ZCDPToEpsClassic(%g, %g)) = %g", rho, delta, back)
			}
		}
		for _, mu := range muGrid {
			eps := GDPEps(mu, delta)
			if eps == 0 {
				continue
			}
			if back := GDPDelta(mu, eps); relErr(back, delta) > tol {
				t.Errorf("GDPDelta(%g, GDPEps(%g, %g)=%g) = %g", mu, mu, delta, eps, back)
			}
			if back := MuForTarget(eps, delta); relErr(back, mu) > tol {
				t.Errorf("MuForTarget(GDPEps(%g, %g)=%g) = %g", mu, delta, eps, back)
			}
		}
	}
}

// Calibrated costs never exceed their target: the inverses round to the
// sound side, exactly (no tolerance).
func TestCalibrationIsSound(t *testing.T) {
	for _, eps := range epsGrid {
		for _, delta := range deltaGrid {
			if rho := RhoForTarget(eps, delta); !(ZCDPToEps(rho, delta) <= eps) {
				t.Errorf("ZCDPToEps(RhoForTarget(%g, %g)) = %.17g > ε", eps, delta, ZCDPToEps(rho, delta))
			}
			if mu := MuForTarget(eps, delta); !(GDPDelta(mu, eps) <= delta) {
				t.Errorf("GDPDelta(MuForTarget(%g, %g), ε) = %.17g > δ", eps, delta, GDPDelta(mu, eps))
			}
			if rho := RhoForTargetClassic(eps, delta); !(ZCDPToEpsClassic(rho, delta) <= eps*(1+1e-14)) {
				t.Errorf("classic inverse of (%g, %g) overshoots: %.17g", eps, delta, ZCDPToEpsClassic(rho, delta))
			}
		}
	}
}

func TestConversionsMonotoneAndOrdered(t *testing.T) {
	for _, delta := range deltaGrid {
		prevZ, prevG := -1.0, -1.0
		for i, rho := range rhoGrid {
			z := ZCDPToEps(rho, delta)
			if z < prevZ {
				t.Errorf("ZCDPToEps not increasing in ρ at ρ=%g, δ=%g", rho, delta)
			}
			prevZ = z
			if c := ZCDPToEpsClassic(rho, delta); z > c {
				t.Errorf("tight ZCDPToEps(%g, %g) = %g > classic %g", rho, delta, z, c)
			}
			mu := muGrid[i]
			g := GDPEps(mu, delta)
			if g < prevG {
				t.Errorf("GDPEps not increasing in μ at μ=%g, δ=%g", mu, delta)
			}
			prevG = g
			if z2 := ZCDPToEps(mu*mu/2, delta); g > z2*(1+1e-12) {
				t.Errorf("exact GDPEps(%g, %g) = %g > zCDP %g", mu, delta, g, z2)
			}
		}
	}
	for _, rho := range rhoGrid {
		prev := math.Inf(1)
		for _, delta := range deltaGrid {
			e := ZCDPToEps(rho, delta)
			if e > prev {
				t.Errorf("ZCDPToEps not decreasing in δ at ρ=%g, δ=%g", rho, delta)
			}
			prev = e
		}
		prevD := 2.0
		for _, eps := range epsGrid {
			d := ZCDPToDelta(rho, eps)
			if d > prevD || d < 0 || d > 1 {
				t.Errorf("ZCDPToDelta(%g, %g) = %g not decreasing in [0, 1]", rho, eps, d)
			}
			prevD = d
		}
	}
	for _, mu := range muGrid {
		prevD := 2.0
		for _, eps := range epsGrid {
			d := GDPDelta(mu, eps)
			if d > prevD || d < 0 || d > 1 {
				t.Errorf("GDPDelta(%g, %g) = %g not decreasing in [0, 1]", mu, eps, d)
			}
			prevD = d
		}
	}
	// Calibrated ρ* and μ* grow with ε and with δ; the tight ρ* beats the classic.
	for _, delta := range deltaGrid {
		prevR, prevM := 0.0, 0.0
		for _, eps := range epsGrid {
			r, m := RhoForTarget(eps, delta), MuForTarget(eps, delta)
			if r <= prevR || m <= prevM {
				t.Errorf("ρ*/μ* not increasing in ε at ε=%g, δ=%g", eps, delta)
			}
			if rc := RhoForTargetClassic(eps, delta); r < rc {
				t.Errorf("RhoForTarget(%g, %g) = %g < classic %g", eps, delta, r, rc)
			}
			prevR, prevM = r, m
		}
	}
	// GDP δ(ε) grows with μ where δ is near 1 (the textbook branch of gdpDelta).
	prev := 0.0
	for mu := 0.5; mu <= 50; mu += 0.5 {
		d := GDPDelta(mu, 1)
		if d < prev {
			t.Errorf("GDPDelta(%g, 1) = %.17g < GDPDelta(%g, 1) = %.17g", mu, d, mu-0.5, prev)
		}
		prev = d
	}
}

func TestExtremeInputsStayFinite(t *testing.T) {
	rhos := []float64{1e-300, 1e-12, 1, 1e3, 1e6}
	deltas := []float64{5e-324, 1e-300, 1e-5, 0.999999}
	epss := []float64{0, 1e-12, 1, 1e3, 1e5}
	for _, rho := range rhos {
		for _, d := range deltas {
			for name, v := range map[string]float64{
				"ZCDPToEps": ZCDPToEps(rho, d), "ZCDPToEpsClassic": ZCDPToEpsClassic(rho, d),
				"GDPEps": GDPEps(math.Sqrt(2*rho), d),
			} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Errorf("%s(%g, %g) = %g", name, rho, d, v)
				}
			}
		}
		for _, e := range epss {
			for name, v := range map[string]float64{
				"ZCDPToDelta": ZCDPToDelta(rho, e), "GDPDelta": GDPDelta(math.Sqrt(2*rho), e),
			} {
				if math.IsNaN(v) || v < 0 || v > 1 {
					t.Errorf("%s(%g, %g) = %g", name, rho, e, v)
				}
			}
		}
	}
	for _, e := range []float64{1e-12, 1, 1e3} {
		for _, d := range deltas {
			for name, v := range map[string]float64{
				"RhoForTarget": RhoForTarget(e, d), "RhoForTargetClassic": RhoForTargetClassic(e, d),
				"MuForTarget": MuForTarget(e, d),
			} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
					t.Errorf("%s(%g, %g) = %g", name, e, d, v)
				}
			}
		}
	}
}

func TestSpecialValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name      string
		got, want float64
	}{
		{"ZCDPToEps(0, δ)", ZCDPToEps(0, 1e-5), 0},
		{"ZCDPToEps(ρ, 1)", ZCDPToEps(1, 1), 0},
		{"ZCDPToEps(ρ, 0)", ZCDPToEps(1, 0), inf},
		{"ZCDPToEps(−1, δ)", ZCDPToEps(-1, 1e-5), nan},
		{"ZCDPToEps(NaN, δ)", ZCDPToEps(nan, 1e-5), nan},
		{"ZCDPToEpsClassic(ρ, −1)", ZCDPToEpsClassic(1, -1), nan},
		{"ZCDPToDelta(0, ε)", ZCDPToDelta(0, 1), 0},
		{"ZCDPToDelta(ρ, −1)", ZCDPToDelta(1, -1), nan},
		{"GDPDelta(0, ε)", GDPDelta(0, 1), 0},
		{"GDPDelta(−1, ε)", GDPDelta(-1, 1), nan},
		{"GDPEps(μ, 0)", GDPEps(1, 0), inf},
		{"GDPEps(0, δ)", GDPEps(0, 1e-5), 0},
		{"GDPEps(μ, NaN)", GDPEps(1, nan), nan},
		{"RhoForTarget(0, δ)", RhoForTarget(0, 1e-5), nan},
		{"RhoForTarget(ε, 1)", RhoForTarget(1, 1), nan},
		{"RhoForTargetClassic(ε, 0)", RhoForTargetClassic(1, 0), nan},
		{"MuForTarget(−1, δ)", MuForTarget(-1, 1e-5), nan},
		{"MuForTarget(NaN, δ)", MuForTarget(nan, 1e-5), nan},
	}
	for _, c := range cases {
		same := c.got == c.want || (math.IsNaN(c.got) && math.IsNaN(c.want))
		if !same {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func BenchmarkZCDPToEps(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ZCDPToEps(0.5, 1e-5)
	}
}

func BenchmarkZCDPToEpsClassic(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ZCDPToEpsClassic(0.5, 1e-5)
	}
}

func BenchmarkGDPEps(b *testing.B) {
	for i := 0; i < b.N; i++ {
		GDPEps(1, 1e-5)
	}
}

func BenchmarkRhoForTarget(b *testing.B) {
	for i := 0; i < b.N; i++ {
		RhoForTarget(1, 1e-6)
	}
}

func BenchmarkMuForTarget(b *testing.B) {
	for i := 0; i < b.N; i++ {
		MuForTarget(1, 1e-6)
	}
}
