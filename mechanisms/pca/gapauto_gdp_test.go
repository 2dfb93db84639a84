package pca

import (
	"fmt"
	"math"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// autoCand pins one candidate run of a gap="auto" plan.
type autoCand struct {
	iters          int
	rho, mult, svt float64
}

// gap="auto" under the default (zcdp) calibration is bit for bit what it
// was before its gdp calibration: the values below were printed by the
// plans of the commit before it (ρ*, the selection's ε, the reference σ,
// and per candidate T, ρ_run, noise multiplier, sparse-vector ε).
func TestZCDPPlansUnchangedGapAuto(t *testing.T) {
	golden := []struct {
		eps           float64
		nb            int
		rho, sel, std float64
		cands         []autoCand
	}{
		{0.5, 0, 0x1.b34249e84e451p-08, 0x1.2a90a0bce9397p-04, 0x1.bf13e2daf1f05p+06, []autoCand{{4, 0x1.87bba8eaab291p-10, 0x1.51f28de3d73ffp+05, 0x1.bfd8f11b5ecc6p-07}, {7, 0x1.87bba8eaab291p-10, 0x1.bf0fff67c0ed2p+05, 0x1.528a74294ab2p-07}, {17, 0x1.87bba8eaab291p-10, 0x1.5c59294d8ca89p+06, 0x1.b279cfa1a1886p-08}, {37, 0x1.87bba8eaab291p-10, 0x1.00f4efa599d2cp+07, 0x1.2680ae028471bp-08}}},
		{0.5, 1, 0x1.b34249e84e451p-08, 0x1.2a90a0bce9397p-04, 0x1.bf17c64490ae1p+05, []autoCand{{4, 0x1.87bba8eaab291p-10, 0x1.51f28de3d73ffp+05, 0x1.bfd8f11b5ecc6p-07}, {7, 0x1.87bba8eaab291p-10, 0x1.bf0fff67c0ed2p+05, 0x1.528a74294ab2p-07}, {17, 0x1.87bba8eaab291p-10, 0x1.5c59294d8ca89p+06, 0x1.b279cfa1a1886p-08}, {37, 0x1.87bba8eaab291p-10, 0x1.00f4efa599d2cp+07, 0x1.2680ae028471bp-08}}},
		{1, 0, 0x1.8f0c580a051f7p-06, 0x1.1de04021a51a5p-03, 0x1.d2ebfb1277556p+05, []autoCand{{4, 0x1.6724b5a29cabp-08, 0x1.60f29d466273ep+04, 0x1.acd0603278933p-06}, {7, 0x1.6724b5a29cabp-08, 0x1.d2e7eb712ad9ap+04, 0x1.442723d93e94dp-06}, {17, 0x1.6724b5a29cabp-08, 0x1.6bcf679993a21p+05, 0x1.a002ba470ae69p-07}, {37, 0x1.6724b5a29cabp-08, 0x1.0c5cb53457e0dp+06, 0x1.19fc8001bf053p-07}}},
		{1, 1, 0x1.8f0c580a051f7p-06, 0x1.1de04021a51a5p-03, 0x1.d2f00aaad9a0cp+04, []autoCand{{4, 0x1.6724b5a29cabp-08, 0x1.60f29d466273ep+04, 0x1.acd0603278933p-06}, {7, 0x1.6724b5a29cabp-08, 0x1.d2e7eb712ad9ap+04, 0x1.442723d93e94dp-06}, {17, 0x1.6724b5a29cabp-08, 0x1.6bcf679993a21p+05, 0x1.a002ba470ae69p-07}, {37, 0x1.6724b5a29cabp-08, 0x1.0c5cb53457e0dp+06, 0x1.19fc8001bf053p-07}}},
		{2, 0, 0x1.6912cb1a57716p-04, 0x1.0feefa9cae62ap-02, 0x1.eadc93b62bcaep+04, []autoCand{{4, 0x1.44f750648080cp-06, 0x1.730b3d8222b96p+03, 0x1.97e677eb06744p-05}, {7, 0x1.44f750648080cp-06, 0x1.ead84ec7bea0fp+03, 0x1.3457f76c9a527p-05}, {17, 0x1.44f750648080cp-06, 0x1.7e769b2e64a09p+04, 0x1.8bb8acb230e51p-06}, {37, 0x1.44f750648080cp-06, 0x1.1a1f1a6e338b4p+05, 0x1.0c3bcad0b7089p-06}}},
		{2, 1, 0x1.6912cb1a57716p-04, 0x1.0feefa9cae62ap-02, 0x1.eae0d89bcb45fp+03, []autoCand{{4, 0x1.44f750648080cp-06, 0x1.730b3d8222b96p+03, 0x1.97e677eb06744p-05}, {7, 0x1.44f750648080cp-06, 0x1.ead84ec7bea0fp+03, 0x1.3457f76c9a527p-05}, {17, 0x1.44f750648080cp-06, 0x1.7e769b2e64a09p+04, 0x1.8bb8acb230e51p-06}, {37, 0x1.44f750648080cp-06, 0x1.1a1f1a6e338b4p+05, 0x1.0c3bcad0b7089p-06}}},
	}
	for _, g := range golden {
		opt := Options{K: 1, Eps: g.eps, Delta: 1e-6, Iters: 7, AutoGap: true, Neighbour: accounting.Neighbour(g.nb)}
		pl, err := PlanMethod(MethodAdaptive, opt, 10)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Rho != g.rho || pl.SelectEps != g.sel || pl.NoiseStd != g.std {
			t.Errorf("eps=%v %v: plan (ρ, ε_sel, σ) = (%x, %x, %x), want the pre-gdp (%x, %x, %x)",
				g.eps, opt.Neighbour, pl.Rho, pl.SelectEps, pl.NoiseStd, g.rho, g.sel, g.std)
		}
		if len(pl.Candidates) != len(g.cands) {
			t.Fatalf("eps=%v: %d candidates, want %d", g.eps, len(pl.Candidates), len(g.cands))
		}
		for j, c := range pl.Candidates {
			w := g.cands[j]
			if c.Iters != w.iters || c.Rho != w.rho || c.NoiseMultiplier != w.mult || c.SVTEps != w.svt {
				t.Errorf("eps=%v %v candidate %d: (T, ρ, z, ε_s) = (%d, %x, %x, %x), want the pre-gdp (%d, %x, %x, %x)",
					g.eps, opt.Neighbour, j, c.Iters, c.Rho, c.NoiseMultiplier, c.SVTEps, w.iters, w.rho, w.mult, w.svt)
			}
		}
		want := accounting.Zcdp(g.rho).WithTarget(g.eps, 1e-6)
		want.Mechanism = "pca/" + MethodAdaptive
		if pl.Cost != want {
			t.Errorf("eps=%v: cost %+v, want %+v", g.eps, pl.Cost, want)
		}
	}
}

// On gdp datasets gap="auto" is charged μ*(ε, δ), and its parts — the
// four runs (each T_j sparse-vector steps of ε_s,j and T_j Gaussian
// releases of multiplier z_j) and the ε_sel-DP selection, all fixed by
// the plan before the data — compose (Dong–Roth–Su Thm 3.2) to
// μ² = Σ_j T_j·(PureToMu(ε_s,j)² + 1/z_j²) + PureToMu(ε_sel)² ≤ μ*²,
// tight to 1e-6, split as the zCDP plan splits ρ*: selectShare to the
// selection, the rest equally over the runs. The references (μ*, the pure
// ε → μ conversion) are the independent bisections of gdp_test.go.
func TestAutoGapGDPPrice(t *testing.T) {
	for _, c := range []struct {
		eps     float64
		iters   int
		publicN int
	}{{0.5, 7, 0}, {1, 4, 0}, {2, 11, 0}, {1, 0, 100000}} {
		const delta = 1e-6
		name := fmt.Sprintf("eps=%v iters=%d n=%d", c.eps, c.iters, c.publicN)
		opt := Options{K: 1, Eps: c.eps, Delta: delta, Iters: c.iters, PublicN: c.publicN, AutoGap: true, Calibration: CalibGDP}
		pl, err := PlanMethod(MethodAdaptive, opt, 10)
		if err != nil {
			t.Fatal(err)
		}
		mu := muStarRef(c.eps, delta)
		if pl.Cost.Kind != accounting.GDP || math.Abs(pl.Cost.Mu/mu-1) > 1e-9 || pl.Cost.Eps != c.eps || pl.Cost.Delta != delta || pl.Cost.Mechanism != "pca/"+MethodAdaptive {
			t.Fatalf("%s: cost %+v, want GDP μ* = %.10g with the target", name, pl.Cost, mu)
		}
		if len(pl.Candidates) != len(AutoGaps) {
			t.Fatalf("%s: %d candidates, want %d", name, len(pl.Candidates), len(AutoGaps))
		}
		runs := make([]float64, len(pl.Candidates))
		sum := 0.0
		for j, cand := range pl.Candidates {
			T := float64(cand.Iters)
			muS := pureToMuRef(cand.SVTEps)
			runs[j] = T*muS*muS + T/(cand.NoiseMultiplier*cand.NoiseMultiplier)
			sum += runs[j]
			// Within a run, the sparse vector's share as in the plain method.
			if share := T * muS * muS / runs[j]; math.Abs(share-svtShare) > 1e-6 {
				t.Errorf("%s run %d: the sparse vector gets %.6g of the run's μ², want %v", name, j, share, svtShare)
			}
		}
		muSel := pureToMuRef(pl.SelectEps)
		sum += muSel * muSel
		composed := math.Sqrt(sum)
		if !(composed <= pl.Cost.Mu) || composed < pl.Cost.Mu*(1-1e-6) {
			t.Errorf("%s: the runs and the selection compose to %.12g-GDP, charged %.12g", name, composed, pl.Cost.Mu)
		}
		if share := muSel * muSel / sum; math.Abs(share-selectShare) > 1e-6 {
			t.Errorf("%s: the selection gets %.6g of μ², want %v (the zCDP plan's share of ρ*)", name, share, selectShare)
		}
		for j, r := range runs {
			if share := r / sum; math.Abs(share-(1-selectShare)/float64(len(runs))) > 1e-6 {
				t.Errorf("%s run %d: %.6g of μ², want %v", name, j, share, (1-selectShare)/float64(len(runs)))
			}
		}
		// The same T per guess as the zcdp plan, and less noise per run.
		opt.Calibration = CalibZCDP
		zp, err := PlanMethod(MethodAdaptive, opt, 10)
		if err != nil {
			t.Fatal(err)
		}
		for j, cand := range pl.Candidates {
			if zc := zp.Candidates[j]; cand.Iters != zc.Iters || !(cand.NoiseMultiplier < zc.NoiseMultiplier) {
				t.Errorf("%s run %d: gdp (T, z) = (%d, %v), zcdp (%d, %v): want the same T and a smaller z", name, j, cand.Iters, cand.NoiseMultiplier, zc.Iters, zc.NoiseMultiplier)
			}
		}
		t.Logf("%s: μ* = %.8g, composed %.8g; ε_sel gdp %.5g vs zcdp %.5g; z of κ=0.5 gdp %.5g vs zcdp %.5g",
			name, pl.Cost.Mu, composed, pl.SelectEps, zp.SelectEps, pl.Candidates[1].NoiseMultiplier, zp.Candidates[1].NoiseMultiplier)
	}
}
