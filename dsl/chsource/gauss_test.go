package chsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/chsource"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/chtest"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
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
		// Centred: the private mean from the engine's row sums, then
		// the moments of the rows shifted by it.
		{"k": 2, "eps": 1.0, "delta": 1e-6, "method": "gauss", "clip": 1000.0, "center": true},
		{"k": 1, "eps": 2.0, "delta": 1e-6, "method": "auto", "clip": 1e6, "center": true},
		{"k": 3, "eps": 0.5, "delta": 1e-6, "method": "gauss", "clip": 1e-3, "center": true},
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
		center := q["center"] == true
		pl, err := pca.PlanMethod(pca.MethodGauss, pca.Options{K: q["k"].(int), Eps: q["eps"].(float64), Delta: 1e-6, Clip: clip, Center: center}, 3)
		if err != nil {
			t.Fatal(err)
		}
		// The private means: the same noise on sums that differ by
		// their rounding only, within what the plan charges for it (in
		// units of the clip, divided by a noisy count of at least 1).
		if (gv.Center != nil) != center || (wv.Center != nil) != center {
			t.Errorf("case %d: centre %v on ClickHouse, %v on the snapshot", i, gv.Center, wv.Center)
		}
		for j := range wv.Center {
			if j >= len(gv.Center) || math.Abs(gv.Center[j]-wv.Center[j]) > pca.CenterRoundingExcess()*clip {
				t.Errorf("case %d: centre %v on ClickHouse, %v on the snapshot", i, gv.Center, wv.Center)
				break
			}
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
		if center && got.Receipt.ReleaseHash != want.Receipt.ReleaseHash {
			// The centre's sums differ by their rounding (the engine's
			// grid, the snapshot's float64), checked above; the rest of
			// the receipt must agree.
			got.Receipt.ReleaseHash = want.Receipt.ReleaseHash
		}
		gr, _ := json.Marshal(got.Receipt)
		wr, _ := json.Marshal(want.Receipt)
		if string(gr) != string(wr) {
			t.Errorf("case %d: ClickHouse's receipt\n%s\nthe snapshot's\n%s", i, gr, wr)
		}
	}
}

// The moments' and row sums' totals are exact past Int64, on each shard
// and after the initiator adds the shards' partial sums: 80 000 rows of
// norm 1 sum 80 000·2⁴⁷ > 2⁶³ grid steps in the moments' first cell,
// which ClickHouse's Int64 sum wrapped around (the released matrix was
// then off by 2¹⁷ in that entry, beyond any noise the sensitivity calls
// for), and 80 000·2⁶⁰ in the row sums' first.
func TestMomentsExactPastInt64(t *testing.T) {
	const d, perShard = 3, 40000
	srv := chtest.Start(t)
	var cols, vals []string
	for j := range d {
		cols = append(cols, fmt.Sprintf("c%d", j))
		v := "0"
		if j == 0 {
			v = "1"
		}
		vals = append(vals, v)
	}
	def := "(" + strings.Join(cols, " Float64, ") + " Float64)"
	srv.Exec(t, "CREATE DATABASE db", "")
	for _, db := range []string{"shard1", "shard2"} {
		srv.Exec(t, "CREATE DATABASE "+db, "")
		srv.Exec(t, "CREATE TABLE "+db+".unit "+def+" ENGINE = MergeTree ORDER BY tuple()", "")
		srv.Exec(t, fmt.Sprintf("INSERT INTO %s.unit SELECT %s FROM numbers(%d)", db, strings.Join(vals, ", "), perShard), "")
	}
	srv.Exec(t, "CREATE TABLE db.unit "+def+" ENGINE = Distributed(two, '', unit)", "")
	st := testfix.Store(t, t.TempDir())
	ref, ecols, _, err := chsource.Describe(context.Background(), srv.URL("analyst"), chtest.AnalystPassword, "db.unit", nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	reg := ledger.Registration{Name: "unit", Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP, Neighbour: accounting.AddRemove,
		Engine: ref, EngineColumns: ecols, EngineSecret: chtest.AnalystPassword, Source: "clickhouse"}
	if _, err := st.Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	sc, err := st.Schema("unit")
	if err != nil {
		t.Fatal(err)
	}
	es, err := chsource.Open(context.Background(), *ref, sc, st.EngineSecretPath("unit"))
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	live := es.(*chsource.Source)
	n := int64(2 * perShard)
	for _, c := range []struct {
		name  string
		print func(sqlplan.Moments, sqlplan.Dialect, string) (string, error)
		want  []any // e₀'s sums: the first entry, n/Step, the others 0, then a row sum's count
	}{
		{"moments", sqlplan.PrintMoments, []any{new(big.Int).Lsh(big.NewInt(n), 47), 0, 0, 0, 0, 0}},
		{"gauss row sum", sqlplan.PrintGaussRowSum, []any{new(big.Int).Lsh(big.NewInt(n), 60), 0, 0, n}},
	} {
		stmt, err := c.print(sqlplan.Moments{Columns: sc.Columns, Clip: 1}, live.Dialect(), live.Table())
		if err != nil {
			t.Fatal(err)
		}
		rows, err := live.Query(context.Background(), stmt)
		if err != nil {
			srv.Query(t, stmt) // fails with the server's message
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(rows) != 1 || len(rows[0]) != len(c.want) {
			t.Fatalf("%s: %d rows, want 1 of %d values", c.name, len(rows), len(c.want))
		}
		for k, v := range rows[0] {
			if fmt.Sprint(v) != fmt.Sprint(c.want[k]) {
				t.Errorf("%s: value %d is %v (%T), want %v", c.name, k, v, v, c.want[k])
			}
		}
	}
}
