package pgsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// callPCA runs private_pca on store's "people" with the given seed.
func callPCA(t *testing.T, st *ledger.Store, seed uint64, given map[string]any) (*release.Release, error) {
	t.Helper()
	env := &release.Local{
		Store:      func() (*ledger.Store, error) { return st, nil },
		NewSampler: func() *noise.Sampler { return noise.NewSeeded(seed) },
	}
	fn := catalog.PrivatePCA.Name
	args, err := release.ArgsFor(fn, given)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := st.Schema("people")
	if err != nil {
		t.Fatal(err)
	}
	return env.Execute(context.Background(), release.Call{Func: fn, Dataset: release.Ref{Name: "people", Schema: sc}, Args: args}, nil)
}

// Analyze Gauss on the live table sums its clipped second moment in
// PostgreSQL (one statement, d(d+1)/2 exact sums back) and, with the same
// seeded noise, releases what the snapshot's row pass releases, within the
// rounding bound the plan charges; the receipts agree. Clips below and
// above the rows' norms exercise both branches of the clipping rule.
func TestGaussSameAsSnapshot(t *testing.T) {
	f := newFixture(t)
	for i, q := range []map[string]any{
		{"k": 2, "eps": 1.0, "delta": 1e-6, "method": "gauss", "clip": 1000.0},
		{"k": 1, "eps": 2.0, "delta": 1e-6, "method": "auto", "clip": 1e6},
		{"k": 3, "eps": 0.5, "delta": 1e-6, "method": "gauss", "clip": 1e-3},
		// Centred: the private mean from the engine's row sums, then
		// the moments of the rows shifted by it.
		{"k": 2, "eps": 1.0, "delta": 1e-6, "method": "gauss", "clip": 1000.0, "center": true},
		{"k": 1, "eps": 2.0, "delta": 1e-6, "method": "auto", "clip": 1e6, "center": true},
		{"k": 3, "eps": 0.5, "delta": 1e-6, "method": "gauss", "clip": 1e-3, "center": true},
	} {
		seed := uint64(7 + i)
		want, err := callPCA(t, f.snap, seed, q)
		if err != nil {
			t.Fatalf("case %d on the snapshot: %v", i, err)
		}
		got, err := callPCA(t, f.live, seed, q)
		if err != nil {
			t.Fatalf("case %d on PostgreSQL: %v", i, err)
		}
		gv, wv := got.Value.(*release.PCA), want.Value.(*release.PCA)
		clip := q["clip"].(float64)
		center := q["center"] == true
		pl, err := pca.PlanMethod(pca.MethodGauss, pca.Options{K: q["k"].(int), Eps: q["eps"].(float64), Delta: 1e-6, Clip: clip, Center: center}, 3)
		if err != nil {
			t.Fatal(err)
		}
		// The private means: the same noise on sums that differ by
		// their rounding only, within what the plan charges for it (in
		// units of the clip, divided by a noisy count of at least 1).
		if (gv.Center != nil) != center || (wv.Center != nil) != center {
			t.Errorf("case %d: centre %v on PostgreSQL, %v on the snapshot", i, gv.Center, wv.Center)
		}
		for j := range wv.Center {
			if j >= len(gv.Center) || math.Abs(gv.Center[j]-wv.Center[j]) > pca.CenterRoundingExcess()*clip {
				t.Errorf("case %d: centre %v on PostgreSQL, %v on the snapshot", i, gv.Center, wv.Center)
				break
			}
		}
		// The eigenvalues and the trace of two matrices whose entries
		// differ by the rounding only (in the data's units: ×clip²).
		tol := pl.RoundingExcess * clip * clip
		for j := range wv.Values {
			if math.Abs(gv.Values[j]-wv.Values[j]) > tol {
				t.Errorf("case %d: eigenvalue %d is %v on PostgreSQL, %v on the snapshot (tolerance %g)", i, j, gv.Values[j], wv.Values[j], tol)
			}
		}
		if math.Abs(gv.TotalVariance-wv.TotalVariance) > 3*tol {
			t.Errorf("case %d: total variance %v on PostgreSQL, %v on the snapshot", i, gv.TotalVariance, wv.TotalVariance)
		}
		var dot mat.Dense
		dot.Mul(gv.Components.T(), wv.Components)
		for j := range q["k"].(int) {
			if c := math.Abs(dot.At(j, j)); c < 1-1e-6 {
				t.Errorf("case %d: component %d differs: |cos| = %v", i, j, c)
			}
		}
		if center && got.Receipt.ReleaseHash != want.Receipt.ReleaseHash {
			// The centre's sums differ by their rounding (the engine's
			// grid, the snapshot's float64), checked above; the rest of
			// the receipt must agree.
			got.Receipt.ReleaseHash = want.Receipt.ReleaseHash
		}
		gr, _ := json.Marshal(got.Receipt)
		wr, _ := json.Marshal(want.Receipt)
		if string(gr) != string(wr) {
			t.Errorf("case %d: PostgreSQL's receipt\n%s\nthe snapshot's\n%s", i, gr, wr)
		}
	}
}

// The PCA methods that need the rows (adaptive; npm runs on the engine's
// second moment: TestNPMSameAsSnapshot) and centred npm are refused
// before the charge. (Centred gauss runs in the engine:
// TestGaussSameAsSnapshot.)
func TestGaussRefusals(t *testing.T) {
	f := newFixture(t)
	before := charges(t, f.live)
	for _, q := range []map[string]any{
		{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "adaptive", "clip": 1000.0},
		{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "npm", "clip": 1000.0, "center": true},
	} {
		_, err := callPCA(t, f.live, 1, q)
		if err == nil || !strings.Contains(err.Error(), "snapshot") || !strings.Contains(err.Error(), "nothing was charged") || charges(t, f.live) != before {
			t.Errorf("%v on a live table: %v (charges %d, were %d)", q, err, charges(t, f.live), before)
		}
	}
}

// The engine's second-moment sums are charged for: the sensitivity's
// growth by each row's quantization and scaling, plus the two roundings
// after the exact integer sums (sqlplan.MomentsExcess), stay within the
// excess every gauss plan charges, for every d it accepts.
func TestMomentsExcessCharged(t *testing.T) {
	t.Parallel()
	for _, d := range []int{1, 2, 3, 10, 100, 1000, pca.MaxGaussDim} {
		pl, err := pca.PlanMethod(pca.MethodGauss, pca.Options{K: 1, Eps: 1, Delta: 1e-6, Clip: 1}, d)
		if err != nil {
			t.Fatal(err)
		}
		if e := sqlplan.MomentsExcess(d); !(e <= pl.RoundingExcess) {
			t.Errorf("d=%d: the engine's excess %g is above the charged %g", d, e, pl.RoundingExcess)
		}
	}
}

// The engine's row sums, from which a centred plan draws its private
// mean, are charged for: their excess (sqlplan.RowSumExcess, in units of
// the clip) stays within the one the plan charges for the mean's sum, for
// every d gauss accepts. The shifted rows' moments need nothing more:
// each shifted row is clipped again (TestMomentsExcessCharged).
func TestCenteredExcessCharged(t *testing.T) {
	t.Parallel()
	for _, d := range []int{1, 2, 3, 10, 100, 1000, pca.MaxGaussDim} {
		if e, c := sqlplan.RowSumExcess(d), pca.CenterRoundingExcess(); !(e <= c) {
			t.Errorf("d=%d: the engine's row-sum excess %g is above the charged %g", d, e, c)
		}
	}
}

// MomentsCell numbers the upper triangle row by row.
func TestMomentsCell(t *testing.T) {
	t.Parallel()
	for _, d := range []int{1, 2, 5} {
		k := 0
		for i := range d {
			for j := i; j < d; j++ {
				if c := sqlplan.MomentsCell(d, i, j); c != k {
					t.Errorf("d=%d: cell (%d, %d) is %d, want %d", d, i, j, c, k)
				}
				k++
			}
		}
	}
}

// The moments statement printed for DuckDB (on the snapshot) and for
// PostgreSQL (on the live table) returns the same exact integer sums:
// both engines compute each row's scaled entries in IEEE doubles with the
// same operations and round them onto the same grid.
func TestMomentsSameInBothEngines(t *testing.T) {
	f := newFixture(t)
	snap, live, done := f.openBoth(t)
	defer done()
	sc, err := f.live.Schema("people")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		clip  float64
		shift []float64
	}{{1e-3, nil}, {1000, nil}, {1e6, nil}, {1000, []float64{0.1, -2.5, 1e3 / 3}}, {1e-3, []float64{-1e-4, 0, 7}}} {
		// With a shift (centred gauss's private mean), the rows a − μ.
		clip := c.clip
		m := sqlplan.Moments{Columns: sc.Columns, Bounds: sc.Bounds, Clip: clip, Shift: c.shift}
		want, err := sqlplan.PrintMoments(m, sqlplan.DuckDB, snap.Table())
		if err != nil {
			t.Fatal(err)
		}
		got, err := sqlplan.PrintMoments(m, live.Dialect(), live.Table())
		if err != nil {
			t.Fatal(err)
		}
		w, err := snap.Query(context.Background(), want)
		if err != nil {
			t.Fatalf("DuckDB: %v", err)
		}
		g, err := live.Query(context.Background(), got)
		if err != nil {
			t.Fatalf("PostgreSQL: %v", err)
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("clip %g, shift %v: PostgreSQL's sums %v, DuckDB's %v", clip, c.shift, g, w)
		}
		if fmt.Sprint(g) == fmt.Sprint([][]any{{0, 0, 0, 0, 0, 0}}) {
			t.Errorf("clip %g: no rows were summed", clip)
		}
	}
}
