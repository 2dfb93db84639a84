package pgsource_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// The noisy power method on the live table: the clipped second moment C
// is summed in PostgreSQL (the statement of Analyze Gauss, d(d+1)/2 exact
// sums back) and the iterations C·X run in privnotes with the plan's noise
// (pca.Plan.RunGram). With the same seeded noise the release is the
// snapshot's within the rounding bound the plan charges: the snapshot's
// row path forms C from the rows in float64 when that pays (gramPays: the
// first two cases) and multiplies by the rows at every iteration
// otherwise (iters=1), so the two C·X differ by the rounding of the sums
// only, never by the noise or the public start. The receipts agree.
// Clips below and above the rows' norms exercise both branches of the
// clipping rule; a C in the data's units (not scaled by 1/clip) fails.
func TestNPMSameAsSnapshot(t *testing.T) {
	f := newFixture(t)
	for i, q := range []map[string]any{
		{"k": 2, "eps": 1.0, "delta": 1e-6, "method": "npm", "clip": 1000.0},
		{"k": 1, "eps": 2.0, "delta": 1e-6, "method": "npm", "clip": 1e-3, "iters": 5},
		{"k": 1, "eps": 0.5, "delta": 1e-6, "method": "npm", "clip": 1e6, "iters": 1},
	} {
		seed := uint64(17 + i)
		want, err := callPCA(t, f.snap, seed, q)
		if err != nil {
			t.Fatalf("case %d on the snapshot: %v", i, err)
		}
		got, err := callPCA(t, f.live, seed, q)
		if err != nil {
			t.Fatalf("case %d on PostgreSQL: %v", i, err)
		}
		checkSameNPM(t, "PostgreSQL", i, q, got.Value.(*release.PCA), want.Value.(*release.PCA))
		gr, _ := json.Marshal(got.Receipt)
		wr, _ := json.Marshal(want.Receipt)
		if string(gr) != string(wr) {
			t.Errorf("case %d: PostgreSQL's receipt\n%s\nthe snapshot's\n%s", i, gr, wr)
		}
	}
}

// checkSameNPM compares an npm release on a live table with the
// snapshot's: eigenvalues within the plan's charged rounding excess (in
// the data's units: ×clip²), components parallel.
func checkSameNPM(t *testing.T, engine string, i int, q map[string]any, got, want *release.PCA) {
	t.Helper()
	iters, _ := q["iters"].(int)
	clip := q["clip"].(float64)
	pl, err := pca.PlanMethod(pca.MethodNPM, pca.Options{K: q["k"].(int), Iters: iters, Eps: q["eps"].(float64), Delta: 1e-6, Clip: clip}, 3)
	if err != nil {
		t.Fatal(err)
	}
	gc, gv := got.Components, got.Values
	wc, wv := want.Components, want.Values
	tol := pl.RoundingExcess * clip * clip
	for j := range wv {
		if math.Abs(gv[j]-wv[j]) > tol || wv[j] == 0 {
			t.Errorf("case %d: eigenvalue %d is %v on %s, %v on the snapshot (tolerance %g)", i, j, gv[j], engine, wv[j], tol)
		}
	}
	var dot mat.Dense
	dot.Mul(gc.T(), wc)
	for j := range q["k"].(int) {
		if c := math.Abs(dot.At(j, j)); c < 1-1e-6 {
			t.Errorf("case %d: component %d differs on %s: |cos| = %v", i, j, engine, c)
		}
	}
}

// Methods that read the rows other than through C, and npm centred, are
// refused on the live table before the charge, by a message that names
// the methods that run there.
func TestNPMRefusals(t *testing.T) {
	f := newFixture(t)
	before := charges(t, f.live)
	for _, q := range []map[string]any{
		{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "adaptive", "clip": 1000.0},
		{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "adaptive", "clip": 1000.0, "gap": "auto"},
		{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "npm", "clip": 1000.0, "center": true},
	} {
		_, err := callPCA(t, f.live, 1, q)
		if err == nil || !strings.Contains(err.Error(), `methods "gauss" and "npm"`) || !strings.Contains(err.Error(), "nothing was charged") || charges(t, f.live) != before {
			t.Errorf("%v on a live table: %v (charges %d, were %d)", q, err, charges(t, f.live), before)
		}
	}
}

// Each row's term of the engine's second moment is within the error the
// npm plan's charge covers (pca.GramTermError, TestNPMGramExcessCharged):
// sqlplan.MomentsExcess(d) is twice the term's error plus the sums'
// conversions, so half of it bounds the term's, for every d the engine
// path takes.
func TestNPMMomentsTermWithinGramBudget(t *testing.T) {
	t.Parallel()
	for _, d := range []int{1, 2, 3, 10, 100, 1000, pca.MaxGaussDim} {
		if e := sqlplan.MomentsExcess(d) / 2; !(e <= pca.GramTermError) {
			t.Errorf("d=%d: a row's term may be off by %g, above the %g the npm charge covers", d, e, pca.GramTermError)
		}
	}
}
