package pca

import (
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
