package chsource_test

import (
	"encoding/json"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// Analyze Gauss on the Distributed table sums its clipped second moment
// in ClickHouse (one statement, d(d+1)/2 exact sums back; 18.16 refused
// the statement's OFFSET 0 layers and n-ary greatest of an integer, and
// the call then released the noise alone) and, with the same
// seeded noise, releases what the snapshot's row pass releases, within the
// rounding bound the plan charges; the receipts agree. Clips below and
// above the rows' norms exercise both branches of the clipping rule.
func TestGaussSameAsSnapshotClickHouse(t *testing.T) {
	f := newFixture(t)
	for i, q := range []map[string]any{
		{"k": 2, "eps": 1.0, "delta": 1e-6, "method": "gauss", "clip": 1000.0},
		{"k": 1, "eps": 2.0, "delta": 1e-6, "method": "auto", "clip": 1e6},
		{"k": 3, "eps": 0.5, "delta": 1e-6, "method": "gauss", "clip": 1e-3},
	} {
		seed := uint64(7 + i)
		want, err := execute(t, f.snap, catalog.PrivatePCA.Name, "people", nil, seed, q, nil, nil)
		if err != nil {
			t.Fatalf("case %d on the snapshot: %v", i, err)
		}
		got, err := execute(t, f.live, catalog.PrivatePCA.Name, "people", nil, seed, q, nil, nil)
		if err != nil {
			t.Fatalf("case %d on ClickHouse: %v", i, err)
		}
		gv, wv := got.Value.(*release.PCA), want.Value.(*release.PCA)
		clip := q["clip"].(float64)
		pl, err := pca.PlanMethod(pca.MethodGauss, pca.Options{K: q["k"].(int), Eps: q["eps"].(float64), Delta: 1e-6, Clip: clip}, 3)
		if err != nil {
			t.Fatal(err)
		}
		// The eigenvalues and the trace of two matrices whose entries
		// differ by the rounding only (in the data's units: ×clip²).
		tol := pl.RoundingExcess * clip * clip
		for j := range wv.Values {
			if math.Abs(gv.Values[j]-wv.Values[j]) > tol {
				t.Errorf("case %d: eigenvalue %d is %v on ClickHouse, %v on the snapshot (tolerance %g)", i, j, gv.Values[j], wv.Values[j], tol)
			}
		}
		if math.Abs(gv.TotalVariance-wv.TotalVariance) > 3*tol {
			t.Errorf("case %d: total variance %v on ClickHouse, %v on the snapshot", i, gv.TotalVariance, wv.TotalVariance)
		}
		var dot mat.Dense
		dot.Mul(gv.Components.T(), wv.Components)
		for j := range q["k"].(int) {
			if c := math.Abs(dot.At(j, j)); c < 1-1e-6 {
				t.Errorf("case %d: component %d differs: |cos| = %v", i, j, c)
			}
		}
		gr, _ := json.Marshal(got.Receipt)
		wr, _ := json.Marshal(want.Receipt)
		if string(gr) != string(wr) {
			t.Errorf("case %d: ClickHouse's receipt\n%s\nthe snapshot's\n%s", i, gr, wr)
		}
	}
}
