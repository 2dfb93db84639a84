package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A synthetic table is public: private_sql(query, from=t) runs the query
// that would run on the dataset, with its plan and noise, on the table's
// rows without a charge, and t.Query runs any SELECT exactly. Each case
// runs after the one synthesize call (one charge): the ledger must still
// hold that one charge after every case.
func TestSynthTableQueries(t *testing.T) {
	seedNoise(t, 43)
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")
syn := private_synthesize(ds, cols=[]string{"region", "age", "income"}, eps=1, delta=1e-6, rows=400, bins=4)
exact := map[string]int{}
for _, r := range syn.Rows {
	exact[r[0].(string)]++
}`)
	for _, tc := range []struct {
		name, cell, want string
		fail             string // the error's name, if the cell must fail
	}{{
		// Exact counts per region (north, south and "other" as text).
		name: "exact group counts",
		cell: `q := syn.Query("SELECT region, COUNT(*) AS n FROM people GROUP BY region ORDER BY region")
ok := len(q.Rows) > 0
for _, r := range q.Rows {
	ok = ok && int(r[1].(float64)) == exact[r[0].(string)]
}
fmt.Println(q.Columns, q.Numeric, ok, q.Receipt == nil)`,
		want: "[region n] [false true] true true",
	}, {
		// Any SELECT, with any table name standing for the table.
		name: "exact rows",
		cell: `q := syn.Query("SELECT age, income FROM t WHERE age > 60 ORDER BY age LIMIT 3")
fmt.Println(len(q.Rows), q.Columns, q.Rows[0][0].(float64) > 60)`,
		want: "3 [age income] true",
	}, {
		// The same query as on the dataset, noisy, uncharged: every
		// group of the declared domain (north, south; "other" is in
		// none), the counts near the exact ones at ε = 1000.
		name: "private_sql from the table",
		cell: `r := private_sql("SELECT region, COUNT(*) AS n FROM people GROUP BY region", from=syn, eps=1000)
fmt.Println(r.Columns, len(r.Rows), r.Receipt.Charged, r.Receipt.Dataset, math.Abs(r.Get("north", "n")-float64(exact["north"])) <= 2)`,
		want: "[region n] 2 false synthetic:table true",
	}, {
		// The table's numeric bounds are its bins' midpoints: AVG
		// clamps there; an owner-bound-free query plans.
		name: "private_sql mean",
		cell: `r := private_sql("SELECT AVG(age) AS a FROM people", from=syn, eps=1000, delta=1e-6)
a := r.Rows[0][0].(float64)
fmt.Println(r.Receipt.Charged, a >= 15 && a <= 105)`,
		want: "false true",
	}, {
		// A dry run says the cost on the table, as on the dataset.
		name: "dry run",
		cell: `r := private_sql("SELECT COUNT(*) AS n FROM people", from=syn, eps=0.5, dry_run=true)
d := private_sql("SELECT COUNT(*) AS n FROM people", eps=0.5, dry_run=true)
fmt.Println(r.Receipt.Charged, r.Receipt.Eps == d.Receipt.Eps, r.Receipt.NoiseScale == d.Receipt.NoiseScale)`,
		want: "false true true",
	}, {
		// As synth_* data: the cost counts against an enclosing block.
		name: "budget block",
		cell: `budget eps=0.5 {
	private_sql("SELECT COUNT(*) AS n FROM people", from=syn, eps=1)
}`,
		fail: NameBudgetExceeded,
		want: "block",
	}, {
		name: "from= not a table",
		cell: `private_sql("SELECT COUNT(*) FROM people", from=ds, eps=1)`,
		fail: NameArgumentError,
		want: "from= takes a public table",
	}, {
		// Only a public dataset's rows are handed out.
		name: "Table of a private dataset",
		cell: `ds.Table()`,
		fail: NameArgumentError,
		want: "is private",
	}, {
		name: "Query: not a SELECT",
		cell: `syn.Query("DELETE FROM people")`,
		fail: NameArgumentError,
		want: "SELECT",
	}, {
		name: "Query: two statements",
		cell: `syn.Query("SELECT 1 FROM people; SELECT 2 FROM people")`,
		fail: NameArgumentError,
		want: "one SELECT statement",
	}, {
		// The engine holds the public rows only: files are out of reach.
		name: "Query: no file access",
		cell: `syn.Query("SELECT * FROM read_csv('/etc/passwd')")`,
		fail: NameArgumentError,
		want: "query:",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fail != "" {
				res, _ := s.fails(tc.cell, tc.fail)
				if !strings.Contains(res.Error.Value, tc.want) {
					t.Errorf("error %q, want it to say %q", res.Error.Value, tc.want)
				}
			} else if got := strings.TrimSpace(s.ok(tc.cell)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if st := status(t, dir, "people"); st.Charges != 1 {
				t.Errorf("%d charges, want only the synthesis's", st.Charges)
			}
		})
	}
}

// A public dataset registered from a stored release (what dataset add
// --from-synth writes): %datasets and the handle say so and name the
// origin; calls on it charge nothing, even at an ε beyond its nominal
// budget, which the pre-check does not price them against; ds.Table()
// gives its rows.
func TestPublicDatasetInCells(t *testing.T) {
	seedNoise(t, 47)
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	csv := s.ok(`syn := private_synthesize(dataset("people"), cols=[]string{"region", "age"}, eps=1, delta=1e-6, rows=50, bins=4, name="share")
fmt.Print(syn.CSV())`)
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	nr, err := st.Named("people", "share")
	st.Close()
	if err != nil || nr == nil {
		t.Fatalf("the stored release: %v %v", nr, err)
	}
	origin := &ledger.SynthOrigin{Dataset: "people", Release: "share", Record: nr.Record, ValueHash: nr.ValueHash}
	registerSnapshot(t, dir, "pub", csv,
		snapshot.Spec{Bounds: map[string][2]float64{"age": {0, 120}}, Categories: map[string][]string{"region": {"north", "south"}}},
		ledger.Registration{Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP, Neighbour: accounting.ReplaceOne,
			PublicN: true, Synthetic: origin})
	before := status(t, dir, "people").Charges
	res, o := s.run(`%datasets`)
	if out := o.all(res); res.Error != nil || !strings.Contains(out, "PUBLIC synthetic data from people/share") {
		t.Errorf("%%datasets: %v\n%s", res.Error, out)
	}
	out := s.ok(`pub := dataset("pub")
fmt.Println(strings.Contains(pub.String(), "PUBLIC synthetic data sampled from release \"share\" of dataset \"people\""))
c := private_count(pub, eps=5)
fmt.Println(c.Receipt.Charged)
q := private_sql("SELECT region, COUNT(*) AS n FROM pub GROUP BY region", eps=5)
fmt.Println(q.Receipt.Charged)
fmt.Println(len(pub.Table().Rows))`)
	if out != "true\nfalse\nfalse\n50\n" {
		t.Errorf("cells on the public dataset: %q", out)
	}
	if st := status(t, dir, "pub"); st.Charges != 0 {
		t.Errorf("the public dataset has %d charges", st.Charges)
	}
	if n := status(t, dir, "people").Charges; n != before {
		t.Errorf("people: %d charges, want %d", n, before)
	}
	verify(t, dir)
}
