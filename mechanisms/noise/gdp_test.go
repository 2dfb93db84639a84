package noise

import (
	"math"
	"math/big"
	"testing"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting/bignorm"
)

// TestDiscreteGaussianGDP checks the bound of doc.go ("Gaussian DP") against
// the exact privacy profile of the discrete Gaussian (Canonne, Kamath and
// Steinke 2020, Thm 7), evaluated in math/big: N_Z(0, S²) against its shift
// by v is dominated by μ-GDP with μ = (v + 1 + 10⁻⁷)/S, i.e. its δ(ε) never
// exceeds that of μ-GDP, while the continuous value μ = v/S is not enough
// (so the extra slack GaussianScale charges is needed). Small S is where the
// discreteness shows; the bound's proof does not depend on S, and the
// samplers use S ≥ 2^40.
func TestDiscreteGaussianGDP(t *testing.T) {
	if gaussianSlackSteps < 3 {
		t.Fatalf("GaussianSlack charges %d steps per coordinate; the bound needs 1 (rounding) + 1 + 10⁻⁷ (discreteness)", gaussianSlackSteps)
	}
	testtier.Long(t) // the numerical check of the bound below
	zero := new(big.Float)
	for _, S := range []float64{1, 2, 3, 5} {
		dg := bignorm.NewDiscreteGaussian(S)
		for _, v := range []int{1, 2, 3, 5} {
			mu := (float64(v) + 1 + 1e-7) / S
			twin := float64(v) / S
			twinBroken := false
			for i := 0; i <= 200; i++ {
				eps := 0.04 * float64(i)
				if eps/twin+twin/2 > 11.5 { // beyond, both δ's are below Φ(−11)
					break
				}
				exact := dg.Delta(v, eps)
				if bound := bignorm.GDPDelta(mu, eps); exact.Cmp(bound) > 0 {
					t.Errorf("S=%g, v=%d, ε=%g: discrete Gaussian δ=%s above the δ=%s of μ=(v+1)/S=%g", S, v, eps,
						exact.Text('g', 8), bound.Text('g', 8), mu)
				}
				if d := new(big.Float).Sub(exact, bignorm.GDPDelta(twin, eps)); d.Cmp(zero) > 0 {
					twinBroken = true
				}
			}
			if !twinBroken {
				t.Errorf("S=%g, v=%d: the discrete Gaussian stayed within μ=v/S=%g everywhere; the test no longer shows why the slack is needed", S, v, twin)
			}
		}
	}
}

// TestGaussianScaleIsGDP checks the consequence GaussianScale guarantees:
// a release of ℓ2 sensitivity Δ₂ over m coordinates has lattice shifts with
// ‖v‖ ≤ Δ₂/step + √m, so it is μ-GDP with
// μ ≤ √Σ(|v_i| + 1 + 10⁻⁷)²/S ≤ (Δ₂/step + (2 + 10⁻⁷)·√m)/S, which must
// not exceed 1/multiplier (the μ the mechanisms charge).
func TestGaussianScaleIsGDP(t *testing.T) {
	for _, tc := range []struct {
		delta, z float64
		m        int
	}{{1, 4.045, 1}, {1, 0.5, 1}, {2, 3, 100}, {1e-3, 1e4, 1000}, {1, 0x1p30, 1 << 10}} {
		sigma := GaussianScale(tc.delta, tc.z, tc.m)
		l := latticeFor(sigma)
		S := float64(l.units)
		mu := (tc.delta/l.step + (2+1e-7)*math.Sqrt(float64(tc.m))) / S
		if mu > 1/tc.z*(1+1e-15) {
			t.Errorf("Δ=%g z=%g m=%d: σ=%g gives μ ≤ %.17g > 1/z = %.17g", tc.delta, tc.z, tc.m, sigma, mu, 1/tc.z)
		}
		// And the slack matters: without the discreteness allowance the
		// scale would be smaller than this bound needs (at coarse z√m).
		if tc.z*math.Sqrt(float64(tc.m)) > 1e6 {
			old := tc.z * (tc.delta + l.step*math.Sqrt(float64(tc.m)))
			if (tc.delta/l.step+(2+1e-7)*math.Sqrt(float64(tc.m)))/(old/l.step) <= 1/tc.z {
				t.Errorf("Δ=%g z=%g m=%d: the rounding-only scale already meets the GDP bound; pick a coarser case", tc.delta, tc.z, tc.m)
			}
		}
	}
}
