package runtime

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// sqlCSV has 600 rows: region cycles north, south, mars (mars is outside
// the declared categories), age 20..79, income 1000·(i mod 50).
func sqlPeople(t testing.TB, nb accounting.Neighbour) (dir string, ref release.Ref, st *ledger.Store) {
	t.Helper()
	dir = t.TempDir()
	var b strings.Builder
	b.WriteString("age,income,region\n")
	for i := range 600 {
		fmt.Fprintf(&b, "%d,%d,%s\n", 20+i%60, 1000*(i%50), []string{"north", "south", "mars"}[i%3])
	}
	registerSnapshot(t, dir, "people", b.String(),
		snapshot.Spec{Bounds: map[string][2]float64{"age": {0, 120}}, Categories: map[string][]string{"region": {"north", "south"}}},
		ledger.Registration{Budget: accounting.Budget{Eps: 1e6, Delta: 0.5}, Accountant: accounting.ModeZCDP, Neighbour: nb, Clip: 1e5})
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sc, err := st.Schema("people")
	if err != nil {
		t.Fatal(err)
	}
	return dir, release.Ref{Name: "people", Schema: sc}, st
}

// exactPeople are the exact aggregates of sqlPeople's rows with age
// between 30 and 64, by region.
func exactPeople(region string) (n, sum, mean, variance float64) {
	var xs []float64
	for i := range 600 {
		age := 20 + i%60
		if age < 30 || age > 64 || []string{"north", "south", "mars"}[i%3] != region {
			continue
		}
		xs = append(xs, float64(min(1000*(i%50), 30000)))
	}
	for _, x := range xs {
		sum += x
	}
	n = float64(len(xs))
	mean = sum / n
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return n, sum, mean, variance / n
}

// With a huge ε the released values are the exact aggregates (within the
// noise's tiny scale): the statement, the grid and the post-processing
// compute what SQL means.
func TestPrivateSQLCentredOnExact(t *testing.T) {
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		t.Run(nb.String(), func(t *testing.T) {
			_, ref, st := sqlPeople(t, nb)
			env := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }, NewSampler: func() *noise.Sampler { return noise.NewSeeded(7) }}
			q := `SELECT region, COUNT(*) AS n, SUM(income, 0, 30000) AS s, AVG(income, 0, 30000) AS m, VARIANCE(income, 0, 30000) AS v
			      FROM people WHERE age BETWEEN 30 AND 64 GROUP BY region`
			for _, delta := range []float64{0, 1e-6} {
				args := release.NewArgs(map[string]any{"query": q, "eps": 1000.0, "delta": delta})
				rel, err := env.Execute(context.Background(), release.Call{Func: release.FnSQL, Dataset: ref, Args: args}, nil)
				if err != nil {
					t.Fatal(err)
				}
				tab := rel.Value.(*release.Table)
				if got := strings.Join(tab.Columns, ","); got != "region,n,s,m,v" {
					t.Fatalf("columns %s", got)
				}
				if len(tab.Rows) != 2 {
					t.Fatalf("%d rows, want the 2 declared regions", len(tab.Rows))
				}
				for _, row := range tab.Rows {
					n, sum, mean, variance := exactPeople(row[0].(string))
					for j, want := range []float64{n, sum, mean, variance} {
						got := row[j+1].(float64)
						if math.Abs(got-want) > 1e-2*math.Max(1, math.Abs(want)) {
							t.Errorf("δ=%v %s %s = %v, want %v", delta, row[0], tab.Columns[j+1], got, want)
						}
					}
				}
				t.Log(rel.Receipt.NoiseScale)
			}
		})
	}
}
