package chsource_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// The noisy power method on the Distributed table: the clipped second
// moment C is summed in ClickHouse (Analyze Gauss's statement, d(d+1)/2
// exact sums back, merged over two shards) and the iterations C·X run in
// privnotes (pca.Plan.RunGram). With the same seeded noise the release is
// the snapshot's within the rounding bound the plan charges: the
// snapshot's row path forms C from the rows in float64 when that pays
// (gramPays: the first two cases), else multiplies by the rows at every
// iteration (iters=1); either way the two C·X differ by the rounding of
// the sums only. The receipts agree.
func TestNPMSameAsSnapshotClickHouse(t *testing.T) {
	f := newFixture(t)
	for i, q := range []map[string]any{
		{"k": 2, "eps": 1.0, "delta": 1e-6, "method": "npm", "clip": 1000.0},
		{"k": 1, "eps": 2.0, "delta": 1e-6, "method": "npm", "clip": 1e-3, "iters": 5},
		{"k": 1, "eps": 0.5, "delta": 1e-6, "method": "npm", "clip": 1e6, "iters": 1},
	} {
		seed := uint64(17 + i)
		want, err := execute(t, f.snap, catalog.PrivatePCA.Name, "people", nil, seed, q, nil, nil)
		if err != nil {
			t.Fatalf("case %d on the snapshot: %v", i, err)
		}
		got, err := execute(t, f.live, catalog.PrivatePCA.Name, "people", nil, seed, q, nil, nil)
		if err != nil {
			t.Fatalf("case %d on ClickHouse: %v", i, err)
		}
		gv, wv := got.Value.(*release.PCA), want.Value.(*release.PCA)
		iters, _ := q["iters"].(int)
		clip := q["clip"].(float64)
		pl, err := pca.PlanMethod(pca.MethodNPM, pca.Options{K: q["k"].(int), Iters: iters, Eps: q["eps"].(float64), Delta: 1e-6, Clip: clip}, 3)
		if err != nil {
			t.Fatal(err)
		}
		tol := pl.RoundingExcess * clip * clip // the data's units
		for j := range wv.Values {
			if math.Abs(gv.Values[j]-wv.Values[j]) > tol || wv.Values[j] == 0 {
				t.Errorf("case %d: eigenvalue %d is %v on ClickHouse, %v on the snapshot (tolerance %g)", i, j, gv.Values[j], wv.Values[j], tol)
			}
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

// The adaptive method (its passes filter rows by their own scores) and
// centred npm are refused on the ClickHouse table before the charge.
func TestNPMRefusalsClickHouse(t *testing.T) {
	f := newFixture(t)
	before := charges(t, f.live)
	for _, q := range []map[string]any{
		{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "adaptive", "clip": 1000.0},
		{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "npm", "clip": 1000.0, "center": true},
	} {
		_, err := execute(t, f.live, catalog.PrivatePCA.Name, "people", nil, 1, q, nil, nil)
		if err == nil || !strings.Contains(err.Error(), `methods "gauss" and "npm"`) || !strings.Contains(err.Error(), "nothing was charged") || charges(t, f.live) != before {
			t.Errorf("%v on a live table: %v (charges %d, were %d)", q, err, charges(t, f.live), before)
		}
	}
}
