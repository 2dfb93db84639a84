package bench

import (
	"context"
	"testing"
)

// The ppm-entry workload's quick grid (d = 400, ε = 16, 3 seeds) orders
// its methods as the analysis predicts: the non-private iteration is
// exact, the Gaussian run recovers most of the subspace, and the pure-ε
// Laplace run, whose noise grows with L (basic composition) and with p
// (ℓ1), does not. Tolerances: the measured medians are 2.2e-16, 0.32 and
// 1.96 (of at most k = 2); the bounds leave a factor 2 either side.
func TestPPMEntryWorkloadOrdering(t *testing.T) {
	w, err := Lookup("ppm-entry")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := w.Run(context.Background(), Config{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	med := map[string]float64{}
	for _, s := range Summarize(rows) {
		med[s.Method] = s.MedianError
	}
	t.Logf("median ‖sinΘ‖²_F: %v", med)
	if med["nonprivate"] > 1e-9 {
		t.Errorf("nonprivate median %.3g, want ≈ 0 (exact subspace iteration)", med["nonprivate"])
	}
	if g := med["gaussian"]; !(g < 0.7) {
		t.Errorf("gaussian median %.3g at ε = 16, want < 0.7", g)
	}
	if l := med["laplace"]; !(l > 2*med["gaussian"] && l > 1) {
		t.Errorf("laplace median %.3g, want clearly above gaussian's %.3g (> 1)", l, med["gaussian"])
	}
}
