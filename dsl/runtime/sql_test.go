package runtime

import (
	"context"
	"fmt"
	"html"
	"math"
	"slices"
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
	for _, want := range []string{"[region n m] [key count avg] 2 [region] [n m]", "true", "region,n,n ±95%,m,m ±95%\nnorth,", "\nsouth,", "sql/gaussian", "n = COUNT"} {
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
	for _, want := range []string{"dry run", "s = SUM over [0, 120] (owner's bounds)", "v = VARIANCE", "sum of squares", "ε=0.25)", "error: 95 % interval of each group's value: s ± ", "v from its noisy count (± "} {
		if !strings.Contains(dry, want) {
			t.Errorf("the dry run lacks %q:\n%s", want, dry)
		}
	}
	dryq := s.ok("d2 := private_sql(`SELECT region, MEDIAN(age) AS med FROM people GROUP BY region`, eps=0.5, dry_run=true)\nfmt.Println(d2)")
	for _, want := range []string{"dry run", "med = QUANTILE over [0, 120] (owner's bounds): q=0.5, exponential mechanism over a grid of 1048576 steps, per group ε=0.25", "halved", "ε=0.5)", "med rank within ±"} {
		if !strings.Contains(dryq, want) {
			t.Errorf("the quantile's dry run lacks %q:\n%s", want, dryq)
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
		{"SELECT income > 5 AS b, COUNT(*) FROM people GROUP BY b", "eps=1, delta=1e-6", "strings or numbers"},
		{"SELECT COUNT(*) FROM nobody", "eps=1", "nobody"},
		{"SELECT MEDIAN(age, 10, 10) FROM people", "eps=1", "lo < hi"},
		{"SELECT QUANTILE(age, 1, 0, 100) FROM people", "eps=1", "strictly between 0 and 1"},
		{"SELECT QUANTILE(age, 0.5, 0, 100, 3) FROM people", "eps=1", "quantile(x, q, lo, hi)"},
		{"SELECT MEDIAN(income) FROM people", "eps=1", "no declared bounds"},
		{"SELECT MEDIAN(region, 0, 1) FROM people", "eps=1", "numeric"},
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
	for _, want := range []string{"d,n,n ±95%,m,m ±95%\n3,", "\n4,", "\n5,", "n = COUNT: count discrete Laplace b=4 ", "ε=0.375"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A COUNT column's interval: Laplace b = 4, rounded: ±⌈4·ln 20⌉ = ±12;
	// an AVG column's is Fieller's set from its noisy parts, within the
	// bounds and holding the value.
	if w := s.ok(`lo, hi := r.IntervalOf(3, "n", 0.95)
fmt.Println(hi - lo, lo <= r.Get(3, "n"), r.Get(3, "n") <= hi)`); !strings.HasPrefix(w, "24.0000000000") || !strings.HasSuffix(strings.TrimSpace(w), "true true") {
		t.Errorf("IntervalOf: %q, want a width of 24", w)
	}
	if w := s.ok(`lo, hi := r.IntervalOf(3, "m", 0.95)
fmt.Println(0 <= lo, lo <= r.Get(3, "m"), r.Get(3, "m") <= hi, hi <= 50000, hi - lo < 50000)`); strings.TrimSpace(w) != "true true true true true" {
		t.Errorf("IntervalOf of an AVG: %q", w)
	}
	if res, _ := s.fails(`r.IntervalOf(3, "m", 1.5)`, NameArgumentError); !strings.Contains(res.Error.Value, "level=1.5") {
		t.Errorf("IntervalOf at level 1.5: %v", res.Error)
	}
	before := ledgerRecords(t, dir, "people")
	again := s.ok(cell)
	if ledgerRecords(t, dir, "people") != before || strings.Split(again, "\n")[1] != strings.Split(out, "\n")[1] {
		t.Errorf("the named call with keys= did not replay:\n%s\nfirst:\n%s", again, out)
	}
}

// QUANTILE and MEDIAN run in the engine as per-group histograms on the
// mechanism's grid: with a huge ε the exponential mechanism's draw is the
// exact quantile (to the grid), several per query and per group, with
// the owner's bounds or the query's, under both relations and both noise
// kinds; the dry run names the mechanism, its grid and its share.
func TestPrivateSQLQuantiles(t *testing.T) {
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		t.Run(nb.String(), func(t *testing.T) {
			_, ref, st := sqlPeople(t, nb)
			env := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }, NewSampler: func() *noise.Sampler { return noise.NewSeeded(3) }}
			q := `SELECT region, MEDIAN(age) AS med, QUANTILE(income, 0.9, 0, 30000) AS p90, COUNT(*) AS n
			      FROM people WHERE age BETWEEN 30 AND 64 GROUP BY region`
			for _, delta := range []float64{0, 1e-6} {
				args := release.NewArgs(map[string]any{"query": q, "eps": 1000.0, "delta": delta})
				rel, err := env.Execute(context.Background(), release.Call{Func: release.FnSQL, Dataset: ref, Args: args}, nil)
				if err != nil {
					t.Fatal(err)
				}
				tab := rel.Value.(*release.Table)
				if got := strings.Join(tab.Kinds, ","); got != "key,quantile,quantile,count" {
					t.Fatalf("kinds %s", got)
				}
				for _, row := range tab.Rows {
					var ages, incomes []float64
					for i := range 600 {
						age := 20 + i%60
						if age < 30 || age > 64 || []string{"north", "south", "mars"}[i%3] != row[0] {
							continue
						}
						ages, incomes = append(ages, float64(age)), append(incomes, float64(min(1000*(i%50), 30000)))
					}
					// The exponential mechanism's loss of a point g is
					// |#{x ≤ g} − q·n|: at this ε the draw is one of the
					// best points (to one rank, and one grid step of
					// the engine's binning).
					for j, c := range []struct {
						xs        []float64
						q, margin float64
					}{{ages, 0.5, 120.0 / (1 << 19)}, {incomes, 0.9, 30000.0 / (1 << 19)}} {
						loss := func(g float64) float64 {
							r := 0
							for _, x := range c.xs {
								if x <= g {
									r++
								}
							}
							return math.Abs(float64(r) - c.q*float64(len(c.xs)))
						}
						best := loss(-1)
						for _, x := range c.xs {
							best = min(best, loss(x))
						}
						got := row[j+1].(float64)
						if min(loss(got-c.margin), loss(got+c.margin), loss(got)) > best+1 {
							t.Errorf("δ=%v %s %s = %v: loss %v, the best is %v", delta, row[0], tab.Columns[j+1], got, loss(got), best)
						}
					}
				}
				if !strings.Contains(rel.Receipt.NoiseScale, "med = QUANTILE over [0, 120] (owner's bounds): q=0.5, exponential mechanism over a grid of 1048576 steps") {
					t.Errorf("receipt: %s", rel.Receipt.NoiseScale)
				}
				if halved := strings.Contains(rel.Receipt.NoiseScale, "halved"); halved != (nb == accounting.ReplaceOne) {
					t.Errorf("%s: halved=%v in %s", nb, halved, rel.Receipt.NoiseScale)
				}
			}
		})
	}
}

// Keys without a public domain are chosen by DP partition selection: at
// a large ε every group the data hold passes the threshold (and its
// values are the exact ones), at a tiny ε none does; the table is sorted
// by key, the receipt explains the threshold, δ = 0 is refused before the
// charge (TestPrivateSQLRefusals), and the call is one (ε, δ) event.
func TestPrivateSQLPartitionSelection(t *testing.T) {
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		t.Run(nb.String(), func(t *testing.T) {
			_, ref, st := sqlPeople(t, nb)
			env := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }, NewSampler: func() *noise.Sampler { return noise.NewSeeded(5) }}
			// income takes 50 values (0, 1000, …, 49000), 12 rows each;
			// region's declared categories keep north and south.
			q := `SELECT income, region, COUNT(*) AS n, MEDIAN(age) AS med FROM people GROUP BY income, region`
			run := func(eps float64) *release.Release {
				args := release.NewArgs(map[string]any{"query": q, "eps": eps, "delta": 1e-6})
				rel, err := env.Execute(context.Background(), release.Call{Func: release.FnSQL, Dataset: ref, Args: args}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return rel
			}
			rel := run(1000)
			tab := rel.Value.(*release.Table)
			// 50 incomes × the 2 declared regions of the 3 in the data
			// (i mod 50 and i mod 3 cover all pairs): 4 rows each.
			if len(tab.Rows) != 100 {
				t.Fatalf("%d groups released at ε=1000, want 100", len(tab.Rows))
			}
			prev := ""
			for _, row := range tab.Rows {
				inc, reg := row[0].(float64), row[1].(string)
				if reg != "north" && reg != "south" {
					t.Errorf("a group outside region's domain: %v", row)
				}
				if n := row[2].(float64); n != 4 {
					t.Errorf("%v: n = %v, want 4", row, n)
				}
				key := fmt.Sprintf("%09.0f %s", inc, reg)
				if key < prev {
					t.Errorf("the groups are not sorted: %s after %s", key, prev)
				}
				prev = key
			}
			if rel.Receipt.Cost.Kind != accounting.ApproxDP || !strings.Contains(rel.Receipt.NoiseScale, "partition selection for key(s) income") {
				t.Errorf("receipt: %v; %s", rel.Receipt.Cost, rel.Receipt.NoiseScale)
			}
			if tiny := run(0.01).Value.(*release.Table); len(tiny.Rows) != 0 {
				t.Errorf("%d groups of 4 rows pass a threshold of thousands of rows", len(tiny.Rows))
			}
		})
	}
}

// On a user-level dataset private SQL releases the number of users per
// group, COUNT(DISTINCT unit), at a sensitivity of one user in each of
// max_groups groups; out-of-range bounds are refused before the charge.
func TestPrivateSQLCountUsers(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("uid,age,region\n")
	// 30 users; user u has u mod 4 + 1 rows, in region north (u even) or
	// south (u odd), the last row of users divisible by 3 in east.
	users := map[string]map[int]bool{}
	for u := range 30 {
		for j := range u%4 + 1 {
			reg := []string{"north", "south"}[u%2]
			if u%3 == 0 && j == u%4 {
				reg = "east"
			}
			fmt.Fprintf(&b, "u%d,%d,%s\n", u, 20+u, reg)
			if users[reg] == nil {
				users[reg] = map[int]bool{}
			}
			users[reg][u] = true
		}
	}
	registerSnapshot(t, dir, "visits", b.String(),
		snapshot.Spec{UserColumn: "uid", Bounds: map[string][2]float64{"age": {0, 120}}, Categories: map[string][]string{"region": {"north", "south", "east"}}},
		ledger.Registration{Budget: accounting.Budget{Eps: 1e6, Delta: 0.5}, Accountant: accounting.ModeZCDP, Neighbour: accounting.AddRemove, Clip: 1})
	s := newSession(t, dir)
	// max_groups=3 keeps every user's groups: the counts are the
	// unbounded ones, at ℓ1 sensitivity 3.
	out := s.ok("r := private_sql(`SELECT region, COUNT(DISTINCT uid) AS users FROM visits GROUP BY region`, eps=1000, max_groups=3)\nfmt.Print(r.CSV())\nfmt.Println(r.Kinds)\nfmt.Println(r.Receipt.NoiseScale)")
	for _, reg := range []string{"north", "south", "east"} {
		// Each count of users followed by its 95 % half-width (a count's).
		if want := fmt.Sprintf("\n%s,%d,1\n", reg, len(users[reg])); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"region,users,users ±95%\n", "[key count distinct]", "count of users discrete Laplace", "ℓ1 sensitivity 3 under add-remove"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	before := ledgerRecords(t, dir, "visits")
	for _, c := range []struct{ query, kws, want string }{
		{"SELECT region, COUNT(*) FROM visits GROUP BY region", "eps=1, max_groups=4", "max_groups must be an integer from 1 to 3"},
		{"SELECT region, COUNT(*) FROM visits GROUP BY region", "eps=1, max_groups=0", "max_groups must be"},
		{"SELECT COUNT(*) FROM visits", "eps=1, max_groups=2", "from 1 to 1"},
		{"SELECT SUM(age) FROM visits", "eps=1, max_rows=0", "max_rows must be an integer from 1 to 1000"},
		{"SELECT SUM(age) FROM visits", "eps=1, max_rows=1001", "max_rows must be an integer from 1 to 1000"},
		{"SELECT age, COUNT(DISTINCT uid) FROM visits GROUP BY age", "eps=1", "delta > 0"},
		{"SELECT age, COUNT(*) FROM visits GROUP BY age", "eps=1, delta=1e-6, max_groups=10001", "from 1 to 10000"},
		{"SELECT COUNT(DISTINCT age) FROM visits", "eps=1", "counts users"},
	} {
		res, _ := s.run(fmt.Sprintf("r := private_sql(`%s`, %s)\n_ = r", c.query, c.kws))
		if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s (%s): got %v, want an ArgumentError mentioning %q", c.query, c.kws, res.Error, c.want)
		}
	}
	if after := ledgerRecords(t, dir, "visits"); after != before {
		t.Errorf("refusals wrote %d ledger records", after-before)
	}
}

// TestPrivateSQLUserBounds checks contribution bounding on user-level
// data against a hand computation: each user keeps the rows (that pass
// WHERE) of their first max_groups distinct groups in row order, and
// their first max_rows rows in each. At a huge ε the counts come back
// exact and the sums within a few units, so a missing or wrong bound (a
// user's rows all kept, groups ranked by something else, WHERE applied
// after the bounding) shows as a wrong value.
func TestPrivateSQLUserBounds(t *testing.T) {
	dir := t.TempDir()
	type row struct {
		u   int
		reg string
		x   float64
	}
	regions := []string{"north", "south", "east"}
	var rows []row
	// User 0 is heavy: 40 rows cycling through every region; the others
	// have 1 to 5 rows. Rows of different users interleave.
	for j := range 40 {
		rows = append(rows, row{0, regions[(j/3)%3], float64(j % 11)})
		if j < 30 {
			u := 1 + j%10
			rows = append(rows, row{u, regions[(u*j+u)%3], float64((u*7 + j) % 11)})
		}
	}
	var b strings.Builder
	b.WriteString("uid,x,region\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "u%d,%g,%s\n", r.u, r.x, r.reg)
	}
	registerSnapshot(t, dir, "visits", b.String(),
		snapshot.Spec{UserColumn: "uid", Bounds: map[string][2]float64{"x": {0, 10}}, Categories: map[string][]string{"region": regions}},
		ledger.Registration{Budget: accounting.Budget{Eps: 1e7, Delta: 0.5}, Accountant: accounting.ModeZCDP, Neighbour: accounting.AddRemove, Clip: 1})
	s := newSession(t, dir)
	for _, c := range []struct{ k, r int }{{1, 1}, {2, 2}, {3, 4}} {
		// The hand computation, in row order, WHERE x < 9 first.
		n, sum, users := map[string]int{}, map[string]float64{}, map[string]map[int]bool{}
		seen := map[int][]string{}
		perGroup := map[[2]any]int{}
		for _, r := range rows {
			if !(r.x < 9) {
				continue
			}
			rank := slices.Index(seen[r.u], r.reg)
			if rank < 0 {
				seen[r.u] = append(seen[r.u], r.reg)
				rank = len(seen[r.u]) - 1
			}
			key := [2]any{r.u, r.reg}
			if rank >= c.k || perGroup[key] >= c.r {
				continue
			}
			perGroup[key]++
			n[r.reg]++
			sum[r.reg] += r.x
			if users[r.reg] == nil {
				users[r.reg] = map[int]bool{}
			}
			users[r.reg][r.u] = true
		}
		out := s.ok(fmt.Sprintf("r := private_sql(`SELECT region, COUNT(*) AS n, SUM(x) AS s, COUNT(DISTINCT uid) AS u FROM visits WHERE x < 9 GROUP BY region`, eps=2000, max_groups=%d, max_rows=%d)\nfmt.Print(r.CSV())\nfmt.Println(r.Receipt.Params[\"max_groups\"], r.Receipt.Params[\"max_rows\"])\nfmt.Println(r.Receipt.NoiseScale)", c.k, c.r))
		for _, reg := range regions {
			var gn, gu int
			var gs float64
			found := false
			lines := strings.Split(out, "\n")
			header := strings.Split(lines[0], ",") // the CSV's header line
			for _, line := range lines[1:] {
				if f := strings.Split(line, ","); len(f) == len(header) && f[0] == reg {
					cell := func(name string) string { return f[slices.Index(header, name)] }
					if _, err := fmt.Sscanf(cell("n")+" "+cell("s")+" "+cell("u"), "%d %g %d", &gn, &gs, &gu); err != nil {
						t.Fatalf("k=%d r=%d: line %q: %v", c.k, c.r, line, err)
					}
					found = true
				}
			}
			if !found || gn != n[reg] || gu != len(users[reg]) || math.Abs(gs-sum[reg]) > 2 {
				t.Errorf("k=%d r=%d %s: got n=%d s=%g users=%d, want n=%d s=%g users=%d\n%s", c.k, c.r, reg, gn, gs, gu, n[reg], sum[reg], len(users[reg]), out)
			}
		}
		if want := fmt.Sprintf("%d %d\n", c.k, c.r); !strings.Contains(out, want) {
			t.Errorf("k=%d r=%d: the receipt's params lack the bounds %q:\n%s", c.k, c.r, want, out)
		}
		// The count's sensitivity is k·r under add-remove.
		if want := fmt.Sprintf("(ℓ1 sensitivity %d under add-remove", c.k*c.r); !strings.Contains(out, want) {
			t.Errorf("k=%d r=%d: the receipt lacks %q:\n%s", c.k, c.r, want, out)
		}
	}
	// Row-level data take only max_groups=1 and max_rows=1.
	registerSnapshot(t, dir, "plain", "x,region\n1,north\n2,south\n",
		snapshot.Spec{Bounds: map[string][2]float64{"x": {0, 10}}, Categories: map[string][]string{"region": regions}},
		ledger.Registration{Budget: accounting.Budget{Eps: 10, Delta: 1e-6}, Accountant: accounting.ModeZCDP, Neighbour: accounting.AddRemove, Clip: 1})
	before := ledgerRecords(t, dir, "plain")
	for _, kw := range []string{"max_groups=2", "max_rows=2"} {
		res, _ := s.run("r := private_sql(`SELECT region, COUNT(*) FROM plain GROUP BY region`, eps=1, " + kw + ")\n_ = r")
		if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, "row-level") {
			t.Errorf("%s on row-level data: got %v, want an ArgumentError", kw, res.Error)
		}
	}
	if ledgerRecords(t, dir, "plain") != before {
		t.Errorf("refusals wrote ledger records")
	}
}

// Every value column of a private_sql table shows its error: COUNT and
// SUM ± the noise's half-width, AVG ± its Fieller interval's larger side,
// VARIANCE and STDDEV ± their conservative interval's, each per cell in
// the text, the HTML and the CSV; a MEDIAN its rank bound (RankErrorOf),
// never an interval of values.
func TestPrivateSQLColumnErrors(t *testing.T) {
	dir, _, st := sqlPeople(t, accounting.AddRemove)
	st.Close()
	s := newSession(t, dir)
	s.ok("r := private_sql(`SELECT region, COUNT(*) AS n, AVG(income, 0, 30000) AS m, VARIANCE(age, 0, 100) AS v, STDDEV(age, 0, 100) AS sd, MEDIAN(age) AS med FROM people GROUP BY region`, eps=5)")
	out := s.ok(`fmt.Print(r.CSV())
for _, c := range []string{"m", "v", "sd"} {
	lo, hi := r.IntervalOf("north", c, 0.95)
	lo9, hi9 := r.IntervalOf("north", c, 0.99)
	fmt.Println(c, lo <= r.Get("north", c), r.Get("north", c) <= hi, lo9 <= lo, hi <= hi9, lo < hi)
}
lo, hi := r.IntervalOf("north", "v", 0.95)
slo, shi := r.IntervalOf("north", "sd", 0.95)
fmt.Println(0 <= lo, hi <= 2500, math.Abs(slo*slo-lo) < 1e-6*(1+lo), math.Abs(shi*shi-hi) < 1e-6*(1+hi))
fmt.Println(r.RankErrorOf("med", 0.95) > 0, r.RankErrorOf("med", 0.99) >= r.RankErrorOf("med", 0.95))`)
	for _, want := range []string{"region,n,n ±95%,m,m ±95%,v,v ±95%,sd,sd ±95%,med,med rank ±95%\n",
		"m true true true true true\n", "v true true true true true\n", "sd true true true true true\n", "true true true true\ntrue true"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	txt, h := s.ok("fmt.Print(r)"), s.ok("fmt.Print(r.HTML())")
	for _, want := range []string{"Fieller's set", "conservative interval", "med: with probability ≥ 95 % each group's value has a rank within ±"} {
		if !strings.Contains(txt, want) || !strings.Contains(h, html.EscapeString(want)) {
			t.Errorf("text or HTML lacks %q:\n%s\n%s", want, txt, h)
		}
	}
	if strings.Count(txt, " ± ") != 2*4 || !strings.Contains(h, "m (DP, ± 95 %)") || strings.Contains(h, "med (DP, ± 95 %)") {
		t.Errorf("cells without their ±:\n%s\n%s", txt, h)
	}
	if res, _ := s.fails(`r.IntervalOf("north", "med", 0.95)`, NameArgumentError); !strings.Contains(res.Error.Value, "rank bound") {
		t.Errorf("IntervalOf of a quantile: %v", res.Error)
	}
	if res, _ := s.fails(`r.RankErrorOf("m", 0.95)`, NameArgumentError); !strings.Contains(res.Error.Value, "not a quantile column") {
		t.Errorf("RankErrorOf of an AVG: %v", res.Error)
	}
}

// consistent=true from a cell: the COUNT(*) and SUM columns are fitted to
// their released totals (release tests check the sums), carry no ±, the receipt
// names the rule and the noise its total; an AVG beside them keeps its
// interval. Refused, before the charge, without groups and with DP
// partition selection.
func TestPrivateSQLConsistent(t *testing.T) {
	dir, _, st := sqlPeople(t, accounting.ReplaceOne)
	st.Close()
	s := newSession(t, dir)
	out := s.ok("r := private_sql(`SELECT region, COUNT(*) AS n, SUM(age, 0, 100) AS s, AVG(age, 0, 100) AS m FROM people GROUP BY region`, eps=2, consistent=true)\n" +
		"fmt.Print(r.CSV())\nfmt.Println(r.Receipt.NoiseScale)\nfmt.Println(r.Receipt.Note)")
	for _, want := range []string{"region,n,n ±95%,s,s ±95%,m,m ±95%\n", "count and its total discrete Laplace", "sum and its total discrete Laplace", "ℓ1 sensitivity 2 under replace-one", "consistent=true (post-processing)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The fitted columns' intervals are around each group's fit (the
	// table's parts), cut at 0 and, for the count, to integers.
	got := s.ok("lo, hi := r.IntervalOf(\"north\", \"n\", 0.95)\nfmt.Println(lo >= 0, lo < hi, lo == math.Floor(lo), hi == math.Floor(hi))\n" +
		"lo, hi = r.IntervalOf(\"north\", \"s\", 0.95)\nfmt.Println(lo >= 0, lo < hi)\nfmt.Println(r.String())")
	if !strings.HasPrefix(got, "true true true true\ntrue true\n") || !strings.Contains(got, "least-squares fit") {
		t.Errorf("IntervalOf of the fitted columns, and the table's note:\n%s", got)
	}
	before := ledgerRecords(t, dir, "people")
	for _, c := range []struct{ query, kws, want string }{
		{"SELECT COUNT(*) AS n FROM people", "eps=1", "at least two groups"},
		{"SELECT region, AVG(age) AS m FROM people GROUP BY region", "eps=1", "has neither"},
		{"SELECT income, COUNT(*) AS n FROM people GROUP BY income", "eps=1, delta=1e-6", "partition selection"},
	} {
		res, _ := s.fails("private_sql(`"+c.query+"`, "+c.kws+", consistent=true)", NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.query, res.Error, c.want)
		}
	}
	if after := ledgerRecords(t, dir, "people"); after != before {
		t.Errorf("the refusals wrote %d ledger records", after-before)
	}
}
