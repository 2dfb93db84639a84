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

// A cell runs private_sql on a snapshot dataset: the table, its text and
// HTML displays, Get, CSV, and a named call that replays for free.
func TestPrivateSQLFromCells(t *testing.T) {
	dir, _, st := sqlPeople(t, accounting.ReplaceOne)
	st.Close()
	s := newSession(t, dir)
	out := s.ok("r := private_sql(`SELECT region, COUNT(*) AS n, AVG(income, 0, 30000) AS m FROM people WHERE age BETWEEN 30 AND 64 GROUP BY region`, eps=1, delta=1e-6, name=\"by-region\")\n" +
		"fmt.Println(r.Columns, r.Kinds, len(r.Rows), r.KeyColumns(), r.ValueColumns())\n" +
		"fmt.Println(r.Get(\"north\", \"m\") >= 0)\n" +
		"fmt.Print(r.CSV())\n" +
		"fmt.Println(r)\n")
	for _, want := range []string{"[region n m] [key count avg] 2 [region] [n m]", "true", "region,n,n ±95%,m\nnorth,", "\nsouth,", "sql/gaussian", "n = COUNT"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	before := ledgerRecords(t, dir, "people")
	out2 := s.ok("r2 := private_sql(`SELECT region, COUNT(*) AS n, AVG(income, 0, 30000) AS m FROM people WHERE age BETWEEN 30 AND 64 GROUP BY region`, eps=1, delta=1e-6, name=\"by-region\")\nfmt.Print(r2.CSV())\nfmt.Println(r2.Receipt.Replayed)")
	if after := ledgerRecords(t, dir, "people"); after != before {
		t.Errorf("a replay wrote %d ledger records", after-before)
	}
	if !strings.Contains(out2, "true") || strings.Split(out2, "\n")[1] != strings.Split(out[strings.Index(out, "region,n,n ±95%,m"):], "\n")[1] {
		t.Errorf("the replay differs:\n%s\nfirst:\n%s", out2, out)
	}
	dry := s.ok("d := private_sql(`SELECT SUM(age) AS s, VARIANCE(income, 0, 1000) AS v FROM people`, eps=0.5, dry_run=true)\nfmt.Println(d)")
	for _, want := range []string{"dry run", "s = SUM over [0, 120] (owner's bounds)", "v = VARIANCE", "sum of squares", "ε=0.25)", "error: 95 % interval of each group's value: s ± "} {
		if !strings.Contains(dry, want) {
			t.Errorf("the dry run lacks %q:\n%s", want, dry)
		}
	}
	if after := ledgerRecords(t, dir, "people"); after != before {
		t.Errorf("a dry run wrote %d ledger records", after-before)
	}
}

func ledgerRecords(t *testing.T, dir, name string) int {
	t.Helper()
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	es, err := st.Entries(name)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// Every refusal of the grammar, the schema or the call is an
// ArgumentError raised before the charge: the ledger gets no record.
func TestPrivateSQLRefusals(t *testing.T) {
	dir, _, st := sqlPeople(t, accounting.AddRemove)
	st.Close()
	s := newSession(t, dir)
	before := ledgerRecords(t, dir, "people")
	for _, c := range []struct{ query, kws, want string }{
		{"INSERT INTO people VALUES (1, 2, 'north')", "eps=1", "SELECT"},
		{"SELECT age FROM people", "eps=1", "aggregate"},
		{"SELECT * FROM people", "eps=1", "SELECT *"},
		{"SELECT COUNT(*) FROM people LIMIT 5", "eps=1", "LIMIT"},
		{"SELECT COUNT(*) FROM read_csv('/etc/passwd')", "eps=1", "registered dataset"},
		{"SELECT COUNT(*) FROM '/etc/passwd'", "eps=1", ""},
		{"SELECT COUNT(*) FROM people; SELECT COUNT(*) FROM people", "eps=1", "second statement"},
		{"SELECT SUM(random(), 0, 1) FROM people", "eps=1", "random()"},
		{"SELECT SUM(nosuch, 0, 1) FROM people", "eps=1", "nosuch"},
		{"SELECT SUM(income * 2) FROM people", "eps=1", "bounds"},
		{"SELECT income, COUNT(*) FROM people GROUP BY income", "eps=1", "delta > 0"},
		{"SELECT income, COUNT(*) FROM people GROUP BY income", "eps=1, delta=1e-6", "partition selection"},
		{"SELECT COUNT(*) FROM nobody", "eps=1", "nobody"},
		{"SELECT MEDIAN(age) FROM people", "eps=1", "private_quantile"},
		{"SELECT COUNT(*) AS n, AVG(age) AS m FROM people", "eps=1, weights=[]float64{1}", "weights"},
		{"SELECT floor(age / 10) AS d, COUNT(*) FROM people GROUP BY d", "eps=1, keys=map[string][]any{\"x\": {1}}", "keys="},
	} {
		res, _ := s.run(fmt.Sprintf("r := private_sql(`%s`, %s)\n_ = r", c.query, c.kws))
		if res.Error == nil {
			t.Errorf("%s: no error", c.query)
			continue
		}
		if res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: got %s: %s, want an ArgumentError mentioning %q", c.query, res.Error.Name, res.Error.Value, c.want)
		}
	}
	if after := ledgerRecords(t, dir, "people"); after != before {
		t.Errorf("refusals wrote %d ledger records", after-before)
	}
}

// The pre-check knows a literal query's dataset and cost before the cell
// runs: a cell whose private_sql calls together exceed the dataset's
// budget is refused before any of it runs, and a literal query the
// planner refuses refuses the cell.
func TestPrivateSQLPrecheck(t *testing.T) {
	dir := t.TempDir()
	registerSnapshot(t, dir, "small", "age,region\n30,north\n40,south\n", snapshot.Spec{Bounds: map[string][2]float64{"age": {0, 120}}, Categories: map[string][]string{"region": {"north", "south"}}},
		ledger.Registration{Budget: accounting.Budget{Eps: 1}, Accountant: accounting.ModeBasic, Neighbour: accounting.AddRemove, Clip: 1})
	s := newSession(t, dir)
	before := ledgerRecords(t, dir, "small")
	res, out := s.run("fmt.Println(\"ran\")\na := private_sql(`SELECT region, COUNT(*) FROM small GROUP BY region`, eps=0.6)\nb := private_sql(`SELECT AVG(age) FROM small`, eps=0.6)\n_, _ = a, b")
	if res.Error == nil || res.Error.Name != NameBudgetExceeded || strings.Contains(out.stdout(), "ran") {
		t.Errorf("the cell ran or was not refused as over budget: %+v, output %q", res.Error, out.stdout())
	}
	res, out = s.run("fmt.Println(\"ran\")\na := private_sql(`SELECT * FROM small`, eps=0.1)\n_ = a")
	if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, "nothing ran") || strings.Contains(out.stdout(), "ran\n") {
		t.Errorf("a refused literal query did not refuse the cell: %+v, output %q", res.Error, out.stdout())
	}
	if n := ledgerRecords(t, dir, "small"); n != before {
		t.Errorf("%d ledger records after refused cells", n-before)
	}
	s.ok("a := private_sql(`SELECT COUNT(*) FROM small`, eps=0.6)\n_ = a")
}

// The table's displays: keys as they are (NULL for a nil key), values
// rounded for display only, long tables elided in the middle, and
// plot_histogram's bars for one key and one value.
func TestTableResultDisplay(t *testing.T) {
	rc := &Receipt{Function: "private_sql", Mechanism: "sql/laplace"}
	r := &TableResult{Columns: []string{"g", "n"}, Kinds: []string{"key", "count"}, releaseBase: releaseBase{rc},
		Rows: [][]any{{"a<b", 3.0}, {nil, -1.0}}}
	txt, h := r.String(), r.HTML()
	for _, want := range []string{"g      n\n", "a<b    3\n", "NULL  -1\n", "sql/laplace"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
	if !strings.Contains(h, "a&lt;b") || strings.Contains(h, "a<b") || !strings.Contains(h, "n (DP)") {
		t.Errorf("HTML not escaped or unlabelled:\n%s", h)
	}
	if got := r.CSV(); got != "g,n\na<b,3\nNULL,-1\n" {
		t.Errorf("CSV %q", got)
	}
	if r.Get("a<b", "n") != 3 || r.Get(nil, "n") != -1 {
		t.Error("Get")
	}
	keys, vals, title, _, ok := barsOf(r)
	if !ok || fmt.Sprint(keys, vals) != "[a<b NULL] [3 -1]" || title != "private n by g" {
		t.Errorf("bars %v %v %q %v", keys, vals, title, ok)
	}
	long := &TableResult{Columns: []string{"k", "m"}, Kinds: []string{"key", "avg"}, releaseBase: releaseBase{rc}}
	for i := range 100 {
		long.Rows = append(long.Rows, []any{float64(i), 1.0 / 3})
	}
	if s := long.String(); !strings.Contains(s, "⋮ 60 more groups") || !strings.Contains(s, "0.333333") || strings.Contains(s, "0.3333333333") {
		t.Errorf("long table:\n%s", s)
	}
	if !strings.Contains(long.CSV(), "0.3333333333333333") {
		t.Error("the CSV lost digits")
	}
}

// keys= and weights= from a cell: a key's domain by its output name, the
// budget split by weights, and a named call with them replays.
func TestPrivateSQLKeysAndWeights(t *testing.T) {
	dir, _, st := sqlPeople(t, accounting.AddRemove)
	st.Close()
	s := newSession(t, dir)
	cell := "r := private_sql(`SELECT round(age / 10) AS d, COUNT(*) AS n, AVG(income, 0, 50000) AS m FROM people GROUP BY d`, eps=1, " +
		"keys=map[string][]any{\"d\": {3, 4, 5}}, weights=[]float64{1, 3}, name=\"decades\")\nfmt.Print(r.CSV())\nfmt.Println(r.Receipt.NoiseScale)"
	out := s.ok(cell)
	for _, want := range []string{"d,n,n ±95%,m\n3,", "\n4,", "\n5,", "n = COUNT: count discrete Laplace b=4 ", "ε=0.375"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A COUNT column's interval: Laplace b = 4, rounded: ±⌈4·ln 20⌉ = ±12;
	// an AVG column carries none.
	if w := s.ok(`lo, hi := r.IntervalOf(3, "n", 0.95)
fmt.Println(hi - lo, lo <= r.Get(3, "n"), r.Get(3, "n") <= hi)`); !strings.HasPrefix(w, "24.0000000000") || !strings.HasSuffix(strings.TrimSpace(w), "true true") {
		t.Errorf("IntervalOf: %q, want a width of 24", w)
	}
	if res, _ := s.fails(`r.IntervalOf(3, "m", 0.95)`, NameArgumentError); !strings.Contains(res.Error.Value, `column "m" (avg) carries no confidence interval`) {
		t.Errorf("IntervalOf of an AVG: %v", res.Error)
	}
	before := ledgerRecords(t, dir, "people")
	again := s.ok(cell)
	if ledgerRecords(t, dir, "people") != before || strings.Split(again, "\n")[1] != strings.Split(out, "\n")[1] {
		t.Errorf("the named call with keys= did not replay:\n%s\nfirst:\n%s", again, out)
	}
}
