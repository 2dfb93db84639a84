package pgsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/pgsource"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// The test binary links the data engines in, as cmd/privnotes does.
func init() {
	err := release.RegisterSnapshots(func(path, hash string) (release.SnapshotReader, error) {
		return snapshot.Open(path, hash)
	})
	if err != nil {
		panic(err)
	}
	if err := release.RegisterSQLParser(snapshot.ParseSQL); err != nil {
		panic(err)
	}
	if err := pgsource.Register(); err != nil {
		panic(err)
	}
}

const analystPassword = "analyst-pw"

var (
	bounds     = map[string][2]float64{"age": {0, 120}, "income": {0, 200000}}
	categories = map[string][]string{"region": {"north", "south", "east", "west"}, "sex": {"f", "m"}}
)

// peopleCSV is a generated table: every region and sex (and a region
// outside the declared domain), ages, incomes and hours spread over their
// bounds, hours with fractions that are not binary (so that the grid's
// rounding matters).
func peopleCSV(n int) string {
	var b strings.Builder
	b.WriteString("region,sex,age,income,hours\n")
	regions := []string{"north", "south", "east", "west", "mars"} // mars: outside the declared domain
	for i := range n {
		fmt.Fprintf(&b, "%s,%s,%d,%d,%g\n", regions[(i*7)%5], []string{"f", "m"}[(i/3)%2], (i*37)%100, (i*7919)%180000, float64((i*13)%420)/7)
	}
	return b.String()
}

// fixture is the same table as a snapshot (DuckDB) and as a live
// PostgreSQL table, each registered as "people" in a state directory of
// its own, so that the same calls in the same order get the same ledger
// records.
type fixture struct {
	srv        *server
	snap, live *ledger.Store
}

func newFixture(t *testing.T) *fixture { return newFixtureUnit(t, "", "") }

// newFixtureUnit is newFixture with user-level data when user is set:
// the table has a primary key id, the file's row order, and a user column
// uid; order is the live registration's --order ("" for none).
func newFixtureUnit(t *testing.T, user, order string) *fixture {
	t.Helper()
	srv := startServer(t)
	csv := peopleCSV(3000)
	if user != "" {
		csv = withUsers(csv)
		srv.exec(t, `CREATE TABLE people (id bigint PRIMARY KEY, uid text, region text, sex text, age integer, income bigint, hours double precision)`)
	} else {
		srv.exec(t, `CREATE TABLE people (region text, sex text, age integer, income bigint, hours double precision)`)
	}
	srv.copyCSV(t, "people", csv)
	srv.exec(t, `CREATE ROLE analyst LOGIN PASSWORD '`+analystPassword+`'`)
	srv.exec(t, `GRANT SELECT ON people TO analyst`)

	// Row-level data under add-remove (where three quantiles of a column
	// are released jointly), user-level data under replace-one: both
	// relations' statements run on the server.
	nb := accounting.AddRemove
	if user != "" {
		nb = accounting.ReplaceOne
	}
	reg := ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 100, Delta: 1e-4}, Accountant: accounting.ModeZCDP, Neighbour: nb, Bounds: bounds}
	f := &fixture{srv: srv}

	f.snap = testfix.Store(t, t.TempDir())
	if err := os.MkdirAll(f.snap.SnapshotDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	src := testfix.WriteFile(t, t.TempDir(), "people.csv", csv)
	info, err := snapshot.Build(context.Background(), snapshot.Spec{From: src, Bounds: bounds, Categories: categories, UserColumn: user}, f.snap.SnapshotDir(), "people")
	if err != nil {
		t.Fatal(err)
	}
	r := reg
	r.Snapshot, r.Source = info.Ref(), src
	if _, err := f.snap.Register(context.Background(), r); err != nil {
		t.Fatal(err)
	}

	f.live = testfix.Store(t, t.TempDir())
	ref, cols, skipped, err := pgsource.Describe(context.Background(), srv.url("analyst"), analystPassword, "public.people", categories, user, order)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Fatalf("columns not registered: %v", skipped)
	}
	r = reg
	r.Engine, r.EngineColumns, r.EngineSecret, r.Source = ref, cols, analystPassword, "postgres"
	if _, err := f.live.Register(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return f
}

// withUsers adds to csv the columns id (the line's index) and uid (one of
// 400 users, each with rows in several groups).
func withUsers(csv string) string {
	lines := strings.Split(strings.TrimSuffix(csv, "\n"), "\n")
	var b strings.Builder
	b.WriteString("id,uid," + lines[0] + "\n")
	for i, l := range lines[1:] {
		fmt.Fprintf(&b, "%d,u%d,%s\n", i, (i*31)%400, l)
	}
	return b.String()
}

// call runs private_sql on store's "people" with the given seed.
func call(t *testing.T, st *ledger.Store, seed uint64, given map[string]any, gate release.Gate, wrap release.RunWrapper) (*release.Release, error) {
	t.Helper()
	env := &release.Local{
		Store:      func() (*ledger.Store, error) { return st, nil },
		NewSampler: func() *noise.Sampler { return noise.NewSeeded(seed) },
	}
	if wrap != nil {
		env.Wrap = func() release.RunWrapper { return wrap }
	}
	fn := catalog.PrivateSQL.Name
	if q, ok := given["query"].(string); !ok || q == "" {
		fn = catalog.PrivateCount.Name
	}
	args, err := release.ArgsFor(fn, given)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := st.Schema("people")
	if err != nil {
		t.Fatal(err)
	}
	return env.Execute(context.Background(), release.Call{Func: fn, Dataset: release.Ref{Name: "people", Schema: sc}, Args: args}, gate)
}

func charges(t *testing.T, st *ledger.Store) int {
	t.Helper()
	s, err := st.Status("people")
	if err != nil {
		t.Fatal(err)
	}
	return s.Charges
}

// The same private_sql calls on the snapshot (DuckDB) and on the live
// table (PostgreSQL) with the same seeded noise give the same releases
// and the same receipts. The statements compute exact integer aggregates
// on the same grids, so the agreement is exact, inside the charged
// rounding bound (which covers only the final conversion to float64).
func TestSameReleasesAsSnapshot(t *testing.T) {
	f := newFixture(t)
	queries := []map[string]any{
		{"query": "SELECT region, sex, COUNT(*) AS n, SUM(income) AS s, AVG(age) AS a, VARIANCE(hours, 0, 60) AS v FROM people GROUP BY region, sex", "eps": 1.0},
		{"query": "SELECT region, QUANTILE(age, 0.25) AS q1, MEDIAN(income) AS m FROM people WHERE (age BETWEEN 20 AND 60 OR sex = 'f') AND NOT region = 'west' GROUP BY region", "eps": 1.0},
		{"query": "SELECT CASE WHEN income > 100000 THEN 'hi' ELSE 'lo' END AS tier, COUNT(*) AS n, STDDEV(hours, 0, 60) AS sd FROM people WHERE hours * 2 > 10 OR income / 1000 < 50 GROUP BY tier", "eps": 0.5, "delta": 1e-6},
		{"query": "SELECT region, COUNT(*) AS n, AVG(income) AS a FROM people WHERE ln(age + 1) > 2 AND round(hours / 3, 1) <> 4.5 GROUP BY region", "eps": 1.0, "keys": map[string]any{"region": []any{"north", "east", "mars"}}},
		{"query": "SELECT COUNT(*) AS n, AVG(age) AS a, SUM(hours, 0, 60) AS h FROM people WHERE sex IN ('m') AND exp(age / 50) < 4", "eps": 1.0},
		// Three quantiles of one column: released jointly from one
		// shared histogram (on row-level add-remove data).
		{"query": "SELECT region, QUANTILE(age, 0.25) AS q1, MEDIAN(age) AS m, QUANTILE(age, 0.75) AS q3 FROM people GROUP BY region", "eps": 1.0},
		// A value outside its declared domain is NULL in both.
		{"query": "SELECT sex, COUNT(*) AS n FROM people WHERE region IS NULL OR region = 'mars' GROUP BY sex", "eps": 1.0},
		// Row values beyond the doubles' range are IEEE 754's in both
		// (±inf, then clamped to a bound; a signed zero; NaN, clamped
		// to hi), not NULL on PostgreSQL, where its operators raise an
		// error: overflowing products, sums and quotients, exp(1000),
		// ln(0) (NULL in both), x/0 and underflows.
		{"query": "SELECT region, SUM(age * 1e300 * 1e300, -1e200, 1e200) AS p, SUM(income * 1e305 + 1e308, -1e200, 1e200) AS s, AVG(1 / (age - age), -5, 5) AS z FROM people GROUP BY region", "eps": 1.0},
		{"query": "SELECT sex, SUM(exp(age + 700), 0, 1e250) AS e, AVG(ln(age - age), -10, 10) AS l, SUM(hours / 1e-300 / 1e-10, -1e250, 1e250) AS q FROM people GROUP BY sex", "eps": 1.0},
		{"query": "SELECT COUNT(*) AS n, SUM((age + 1) * 1e-300 * 1e-300, -1, 1) AS u, AVG(-1e308 - income * 1e308, -1e250, 0) AS m FROM people WHERE exp(age * 10) > 1e300 OR income / 1e-310 > 1e308", "eps": 1.0},
	}
	for i, q := range queries {
		seed := uint64(100 + i)
		want, err := call(t, f.snap, seed, q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on the snapshot: %v", i, err)
		}
		got, err := call(t, f.live, seed, q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on PostgreSQL: %v", i, err)
		}
		gv, _ := json.Marshal(got.Value)
		wv, _ := json.Marshal(want.Value)
		if string(gv) != string(wv) {
			t.Errorf("query %d: PostgreSQL released\n%s\nthe snapshot\n%s\nthe server's errors:\n%s", i, gv, wv, f.srv.Errors(t))
		}
		gr, _ := json.Marshal(got.Receipt)
		wr, _ := json.Marshal(want.Receipt)
		if string(gr) != string(wr) {
			t.Errorf("query %d: PostgreSQL's receipt\n%s\nthe snapshot's\n%s", i, gr, wr)
		}
		if strings.Contains(q["query"].(string), "q3") && !strings.Contains(string(gr), "released jointly") {
			t.Errorf("query %d: three quantiles of one column were not released jointly: %s", i, gr)
		}
	}
	// The ledger of the live table verifies: nothing is stored to check
	// but the registration and the releases.
	if err := f.live.Verify(); err != nil {
		t.Errorf("ledger verify: %v", err)
	}
	// The data were read: a release of the noise alone would not have
	// the groups' sizes.
	r, err := call(t, f.live, 1, map[string]any{"query": "SELECT COUNT(*) AS n FROM people", "eps": 10.0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Value.(*release.Table).Rows[0][0].(float64); n < 2900 || n > 3100 {
		t.Errorf("COUNT(*) released %v of 3000 rows", n)
	}
}

// User-level data in a live table registered with --order: each user's
// first rows in that order are kept, as a snapshot keeps them in its
// file's order, so the releases and receipts agree; without --order the
// call is refused before its charge.
func TestUserLevelSameAsSnapshot(t *testing.T) {
	f := newFixtureUnit(t, "uid", "id")
	queries := []map[string]any{
		{"query": "SELECT region, COUNT(*) AS n, SUM(income) AS s, AVG(hours, 0, 60) AS h, COUNT(DISTINCT uid) AS u FROM people GROUP BY region", "eps": 1.0, "max_groups": 2, "max_rows": 3},
		{"query": "SELECT sex, MEDIAN(age) AS m FROM people WHERE hours > 10 GROUP BY sex", "eps": 1.0, "max_groups": 1, "max_rows": 2},
		{"query": "SELECT COUNT(*) AS n, VARIANCE(age) AS v FROM people", "eps": 1.0, "delta": 1e-6, "max_rows": 4},
	}
	for i, q := range queries {
		want, err := call(t, f.snap, uint64(7+i), q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on the snapshot: %v", i, err)
		}
		got, err := call(t, f.live, uint64(7+i), q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on PostgreSQL: %v", i, err)
		}
		gv, _ := json.Marshal(got.Value)
		wv, _ := json.Marshal(want.Value)
		if string(gv) != string(wv) {
			t.Errorf("query %d: PostgreSQL released\n%s\nthe snapshot\n%s\nthe server's errors:\n%s", i, gv, wv, f.srv.Errors(t))
		}
		gr, _ := json.Marshal(got.Receipt)
		wr, _ := json.Marshal(want.Receipt)
		if string(gr) != string(wr) {
			t.Errorf("query %d: PostgreSQL's receipt\n%s\nthe snapshot's\n%s", i, gr, wr)
		}
	}

	// The same table registered without --order.
	ref, cols, _, err := pgsource.Describe(context.Background(), f.srv.url("analyst"), analystPassword, "public.people", categories, "uid", "")
	if err != nil {
		t.Fatal(err)
	}
	st := testfix.Store(t, t.TempDir())
	if _, err := st.Register(context.Background(), ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 10, Delta: 1e-4}, Accountant: accounting.ModeZCDP, Bounds: bounds,
		Engine: ref, EngineColumns: cols, EngineSecret: analystPassword}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, st, 1, queries[0], nil, nil); err == nil || !strings.Contains(err.Error(), "--order") || charges(t, st) != 0 {
		t.Errorf("user-level without --order: %v", err)
	}
	// A column without a unique index cannot order the rows.
	if _, _, _, err := pgsource.Describe(context.Background(), f.srv.url("analyst"), analystPassword, "public.people", categories, "uid", "age"); err == nil || !strings.Contains(err.Error(), "unique index") {
		t.Errorf("--order age: %v", err)
	}
}

// stopGate stops the server when the call is admitted: after the plan's
// catalog check, before the ledger's charge, so the data are read from a
// server that is down.
type stopGate struct {
	t   *testing.T
	srv *server
}

func (g stopGate) Admit(context.Context, accounting.Event, release.Ref) (func() string, func(), error) {
	g.srv.stop(g.t)
	return func() string { return "" }, func() {}, nil
}

// Faults of the engine: refused before the charge (the ledger unchanged)
// when the server is down, refuses the password or the table changed;
// after the charge, a fixed error or a release, and the charge stands.
func TestFaults(t *testing.T) {
	f := newFixture(t)
	live, srv := f.live, f.srv
	q := map[string]any{"query": "SELECT region, COUNT(*) AS n FROM people GROUP BY region", "eps": 0.5}
	var re *release.Error

	// Functions that read rows are refused.
	before := charges(t, live)
	_, err := callTab(t, live, "people", 1, tabCall{catalog.PrivateLinearRegression.Name, map[string]any{"x": []string{"age"}, "y": "income", "delta": 1e-6}, nil})
	if err == nil || !strings.Contains(err.Error(), "snapshot") || charges(t, live) != before {
		t.Errorf("private_linear_regression on a live table: %v", err)
	}

	// Down before the charge.
	srv.stop(t)
	_, err = call(t, live, 1, q, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot be reached") || !strings.Contains(err.Error(), "(nothing was charged)") || charges(t, live) != before {
		t.Errorf("server down at plan time: %v (charges %d, were %d)", err, charges(t, live), before)
	}
	srv.start(t)

	// Down after the charge, before the read: a fixed error, the charge
	// stands.
	_, err = call(t, live, 1, q, stopGate{t, srv}, nil)
	if err == nil || !strings.Contains(err.Error(), "after the charge") || !strings.Contains(err.Error(), "cannot be reached") || strings.Contains(err.Error(), "nothing was charged") || charges(t, live) != before+1 {
		t.Errorf("server down after the charge: %v (charges %d, were %d)", err, charges(t, live), before)
	}
	srv.start(t)

	// Down during the run: the statement fails, and the release is the
	// noise alone (data-independent); the charge stands.
	stopRun := func(run func(context.Context, *release.Data) (any, error)) func(context.Context, *release.Data) (any, error) {
		return func(ctx context.Context, d *release.Data) (any, error) {
			srv.stop(t)
			return run(ctx, d)
		}
	}
	r, err := call(t, live, 1, map[string]any{"query": "SELECT COUNT(*) AS n FROM people", "eps": 10.0}, nil, stopRun)
	if err != nil || charges(t, live) != before+2 {
		t.Fatalf("server down during the run: %v (charges %d)", err, charges(t, live))
	}
	if n := r.Value.(*release.Table).Rows[0][0].(float64); n > 100 {
		t.Errorf("a failed statement released COUNT(*) = %v, not the noise alone", n)
	}
	srv.start(t)

	// A wrong password, before the charge.
	secret := live.EngineSecretPath("people")
	if err := os.WriteFile(secret, []byte("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = call(t, live, 1, q, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "refused the registered user or password") || !strings.Contains(err.Error(), "(nothing was charged)") || charges(t, live) != before+2 {
		t.Errorf("wrong password: %v", err)
	}
	if err := os.WriteFile(secret, []byte(analystPassword), 0o600); err != nil {
		t.Fatal(err)
	}

	// A column whose type changed since registration, named.
	srv.exec(t, `ALTER TABLE people ALTER COLUMN income TYPE text`)
	_, err = call(t, live, 1, q, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"income"`) || !strings.Contains(err.Error(), "register") || charges(t, live) != before+2 {
		t.Errorf("type changed: %v", err)
	}
	if err != nil && !errorsAs(err, &re) {
		t.Errorf("type changed: %T is not a release.Error", err)
	}
}

func errorsAs(err error, target **release.Error) bool {
	e, ok := err.(*release.Error)
	if ok {
		*target = e
	}
	return ok
}

// Every statement of dsl/sqlplan's PostgreSQL goldens runs on a server
// (the goldens are printed for a table of sqlplan's test schema).
func TestGoldenStatementsRun(t *testing.T) {
	srv := startServer(t)
	srv.exec(t, `CREATE TABLE people (region text, sex text, age double precision, income integer, hours real, city text, born date, "user" text, __pn_row bigint)`)
	srv.exec(t, `INSERT INTO people SELECT (ARRAY['north','south','east','west'])[1 + i % 4], (ARRAY['f','m'])[1 + i % 2], i % 100, i * 37 % 150000, (i % 60) / 7.0, 'c' || (i % 7), DATE '1970-01-01' + i, 'u' || (i % 13), i FROM generate_series(1, 2000) AS i`)
	files, err := filepath.Glob("../sqlplan/testdata/print_pg/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmt, _, _ := strings.Cut(string(b), "\n")
		srv.exec(t, stmt)
	}
}

// A quantile of an argument that reads no column (PostgreSQL prints it
// as the group's one bin and row count, sqlplan's ConstHistogram) has
// the histogram DuckDB computes on the snapshot, bin and count, and is
// released from it as on the snapshot with the same seeded noise (a
// statement PostgreSQL refused would release the noise alone). The
// constants' bins are inside, at and outside the bounds, NaN (clamped to
// hi) and NULL (no bin).
func TestConstQuantileSameAsSnapshot(t *testing.T) {
	f := newFixture(t)
	num := func(x float64) *sqlplan.Expr {
		return &sqlplan.Expr{Op: sqlplan.OpLiteral, Value: sqlplan.Value{Kind: sqlplan.ValueNumber, Num: x}, Type: sqlplan.TypeNumber}
	}
	nan := &sqlplan.Expr{Op: sqlplan.OpCast, Cast: sqlplan.TypeNumber, Type: sqlplan.TypeNumber,
		Args: []*sqlplan.Expr{{Op: sqlplan.OpLiteral, Value: sqlplan.String("nan"), Type: sqlplan.TypeString}}}
	null := &sqlplan.Expr{Op: sqlplan.OpLiteral, Value: sqlplan.Value{Kind: sqlplan.ValueNull}, Type: sqlplan.TypeNull}
	region := sqlplan.Key{Name: "region", Expr: &sqlplan.Expr{Op: sqlplan.OpColumn, Column: "region", Type: sqlplan.TypeString}, Source: sqlplan.FromCaller,
		Closed: true, Domain: []sqlplan.Value{sqlplan.String("north"), sqlplan.String("south"), {Kind: sqlplan.ValueNull}}}
	age := &sqlplan.Expr{Op: sqlplan.OpColumn, Column: "age", Type: sqlplan.TypeNumber}
	over40 := &sqlplan.Expr{Op: sqlplan.OpGt, Args: []*sqlplan.Expr{age, num(40)}, Type: sqlplan.TypeBool}
	none := &sqlplan.Expr{Op: sqlplan.OpGt, Args: []*sqlplan.Expr{age, num(1000)}, Type: sqlplan.TypeBool}
	var aggs []sqlplan.Aggregate
	for i, arg := range []*sqlplan.Expr{num(3), num(0), num(-5), num(10), nan, null, age} {
		aggs = append(aggs, sqlplan.Aggregate{Name: fmt.Sprint("q", i), Kind: sqlplan.Quantile, Arg: arg, Lo: 0, Hi: 10, Q: 0.5, Bins: 10})
	}
	outs := []sqlplan.Output{{Key: 0, Agg: -1}}
	for i := range aggs {
		outs = append(outs, sqlplan.Output{Key: -1, Agg: i})
	}
	for _, p := range []*sqlplan.Plan{
		{Keys: []sqlplan.Key{region}, Aggregates: aggs, Outputs: outs},
		{Keys: []sqlplan.Key{region}, Aggregates: aggs, Outputs: outs, Where: over40},
		{Keys: []sqlplan.Key{region}, Aggregates: aggs, Outputs: outs, Where: none},
		{Aggregates: aggs, Outputs: outs[1:]},
		{Aggregates: aggs, Outputs: outs[1:], Where: none},
	} {
		g, w := bothEngines(t, f, p)
		if g != w {
			t.Errorf("PostgreSQL's histograms\n%s\nDuckDB's\n%s", g, w)
		}
	}
	queries := []string{
		"SELECT region, MEDIAN(3, 0, 10) AS m, COUNT(*) AS n FROM people GROUP BY region",
		"SELECT sex, QUANTILE(CAST('nan' AS DOUBLE), 0.25, 0, 10) AS q, MEDIAN(age) AS a FROM people WHERE age > 30 GROUP BY sex",
		"SELECT QUANTILE(ln(2) * 4, 0.9, 0, 10) AS q, MEDIAN(-5, 0, 10) AS lo FROM people",
	}
	for i, q := range queries {
		seed := uint64(200 + i)
		given := map[string]any{"query": q, "eps": 1.0}
		want, err := call(t, f.snap, seed, given, nil, nil)
		if err != nil {
			t.Fatalf("query %d on the snapshot: %v", i, err)
		}
		got, err := call(t, f.live, seed, given, nil, nil)
		if err != nil {
			t.Fatalf("query %d on PostgreSQL: %v", i, err)
		}
		sameRelease(t, fmt.Sprintf("query %d", i), got, want)
	}
}

// openBoth opens f's people table twice: its snapshot in DuckDB and its
// live table in PostgreSQL. The caller closes both with done, promptly:
// an open live table holds one of its pool's few sessions.
func (f *fixture) openBoth(t *testing.T) (snap *snapshot.Reader, live release.EngineSource, done func()) {
	t.Helper()
	sc, err := f.live.Schema("people")
	if err != nil {
		t.Fatal(err)
	}
	path, hash, ok, err := f.snap.Snapshot("people")
	if err != nil || !ok {
		t.Fatalf("snapshot: %v %v", ok, err)
	}
	snap, err = snapshot.Open(path, hash)
	if err != nil {
		t.Fatal(err)
	}
	ref, ok, err := f.live.Engine("people")
	if err != nil || !ok {
		snap.Close()
		t.Fatalf("engine: %v %v", ok, err)
	}
	live, err = pgsource.Open(context.Background(), *ref, sc, f.live.EngineSecretPath("people"))
	if err != nil {
		snap.Close()
		t.Fatal(err)
	}
	return snap, live, func() { live.Close(); snap.Close() }
}

// bothEngines prints p for DuckDB over f's snapshot and for PostgreSQL
// over its live table, runs both statements and returns their rows as
// text in the order of the texts (PostgreSQL's, DuckDB's).
func bothEngines(t *testing.T, f *fixture, p *sqlplan.Plan) (string, string) {
	t.Helper()
	snap, live, done := f.openBoth(t)
	defer done()
	want, err := sqlplan.Print(p, sqlplan.DuckDB, snap.Table())
	if err != nil {
		t.Fatal(err)
	}
	got, err := sqlplan.Print(p, live.Dialect(), live.Table())
	if err != nil {
		t.Fatal(err)
	}
	w, err := snap.Query(context.Background(), want.SQL)
	if err != nil {
		t.Fatalf("DuckDB: %v\n%s", err, want.SQL)
	}
	g, err := live.Query(context.Background(), got.SQL)
	if err != nil {
		t.Fatalf("PostgreSQL: %v\n%s", err, got.SQL)
	}
	return sortedRows(g), sortedRows(w)
}

// sortedRows is rows as text, one line a row, in the order of the lines.
func sortedRows(rows [][]any) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = fmt.Sprint(r)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
