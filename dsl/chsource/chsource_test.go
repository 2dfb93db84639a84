package chsource_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/chsource"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/internal/chtest"
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
	if err := chsource.Register(); err != nil {
		panic(err)
	}
}

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

// fixture is the same table as a snapshot (DuckDB) and as a ClickHouse
// Distributed table over two shards, each registered as "people" in a
// state directory of its own, so that the same calls in the same order
// get the same ledger records.
type fixture struct {
	srv        *chtest.Server
	snap, live *ledger.Store
}

const peopleColumns = "(region String, sex String, age Int32, income Int64, hours Float64)"

func newFixture(t *testing.T) *fixture { return newFixtureUnit(t, "", "") }

// userColumns are the columns of the user-level table: withUsers' id (the
// file's row order) and uid before peopleColumns'.
const userColumns = "(id Int64, uid String, region String, sex String, age Int32, income Int64, hours Float64)"

// newFixtureUnit is newFixture with user-level data when user is set:
// the table has the columns id (the file's row order) and uid
// (withUsers), and order is the live registration's --order ("" for
// none). Its rows go to the shards in runs of 400, so that every user
// has rows on both shards (each user's rows are 400 lines apart).
func newFixtureUnit(t *testing.T, user, order string) *fixture {
	t.Helper()
	srv := chtest.Start(t)
	csv, columns, shardOf := peopleCSV(3000), peopleColumns, func(i int) int { return i % 2 }
	if user != "" {
		csv, columns, shardOf = withUsers(csv), userColumns, func(i int) int { return (i / 400) % 2 }
	}
	lines := strings.Split(strings.TrimSuffix(csv, "\n"), "\n")
	shards := [2][]string{{lines[0]}, {lines[0]}}
	for i, l := range lines[1:] {
		shards[shardOf(i)] = append(shards[shardOf(i)], l)
	}
	srv.Exec(t, "CREATE DATABASE db", "")
	for i, db := range []string{"shard1", "shard2"} {
		srv.Exec(t, "CREATE DATABASE "+db, "")
		srv.Exec(t, "CREATE TABLE "+db+".people "+columns+" ENGINE = MergeTree ORDER BY tuple()", "")
		srv.Exec(t, "INSERT INTO "+db+".people FORMAT CSVWithNames", strings.Join(shards[i], "\n")+"\n")
	}
	srv.Exec(t, "CREATE TABLE db.people "+columns+" ENGINE = Distributed(two, '', people)", "")

	// The budget holds every call of the longest test
	// (TestTabularSameAsSnapshot). Row-level data under add-remove,
	// user-level data under replace-one, as dsl/pgsource's tests.
	nb := accounting.AddRemove
	if user != "" {
		nb = accounting.ReplaceOne
	}
	reg := ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 200, Delta: 1e-4}, Accountant: accounting.ModeZCDP, Neighbour: nb, Bounds: bounds}
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
	ref, cols, skipped, err := chsource.Describe(context.Background(), srv.URL("analyst"), chtest.AnalystPassword, "db.people", categories, user, order)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Fatalf("columns not registered: %v", skipped)
	}
	r = reg
	r.Engine, r.EngineColumns, r.EngineSecret, r.Source = ref, cols, chtest.AnalystPassword, "clickhouse"
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

// call runs private_sql on store's "people" with the given seed (or
// private_count without a query).
func call(t *testing.T, st *ledger.Store, seed uint64, given map[string]any, gate release.Gate, wrap release.RunWrapper) (*release.Release, error) {
	t.Helper()
	fn := catalog.PrivateSQL.Name
	if q, ok := given["query"].(string); !ok || q == "" {
		fn = catalog.PrivateCount.Name
	}
	return execute(t, st, fn, "people", nil, seed, given, gate, wrap)
}

// execute runs fn with the given arguments on store's dataset name, or
// on its subset by filters, with noise of the given seed, through gate
// and wrap (either may be nil).
func execute(t *testing.T, st *ledger.Store, fn, name string, filters []release.Filter, seed uint64, given map[string]any, gate release.Gate, wrap release.RunWrapper) (*release.Release, error) {
	t.Helper()
	env := &release.Local{
		Store:      func() (*ledger.Store, error) { return st, nil },
		NewSampler: func() *noise.Sampler { return noise.NewSeeded(seed) },
	}
	if wrap != nil {
		env.Wrap = func() release.RunWrapper { return wrap }
	}
	args, err := release.ArgsFor(fn, given)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := st.Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	src := release.Ref{Name: name, Schema: sc}
	if filters != nil {
		lineage := fmt.Sprintf("%s | %v", name, filters)
		sub := sc
		sub.Name, sub.PublicN = lineage, 0
		src = release.Ref{Name: name, Schema: sub, Derived: &release.Derivation{ParentSchema: sc, Filters: filters, Lineage: lineage}}
	}
	return env.Execute(context.Background(), release.Call{Func: fn, Dataset: src, Args: args}, gate)
}

func charges(t *testing.T, st *ledger.Store) int {
	t.Helper()
	s, err := st.Status("people")
	if err != nil {
		t.Fatal(err)
	}
	return s.Charges
}

// The same private_sql calls on the snapshot (DuckDB) and on the
// Distributed table over two shards (ClickHouse) with the same seeded
// noise give the same releases and the same receipts: the statements
// compute exact integer aggregates on the same grids, which the shards'
// partial sums do not change.
func TestSameReleasesAsSnapshot(t *testing.T) {
	f := newFixture(t)
	queries := []map[string]any{
		{"query": "SELECT region, sex, COUNT(*) AS n, SUM(income) AS s, AVG(age) AS a, VARIANCE(hours, 0, 60) AS v FROM people GROUP BY region, sex", "eps": 1.0},
		{"query": "SELECT region, QUANTILE(age, 0.25) AS q1, MEDIAN(income) AS m FROM people WHERE (age BETWEEN 20 AND 60 OR sex = 'f') AND NOT region = 'west' GROUP BY region", "eps": 1.0},
		{"query": "SELECT CASE WHEN income > 100000 THEN 'hi' ELSE 'lo' END AS tier, COUNT(*) AS n, STDDEV(hours, 0, 60) AS sd FROM people WHERE hours * 2 > 10 OR income / 1000 < 50 GROUP BY tier", "eps": 0.5, "delta": 1e-6},
		{"query": "SELECT region, COUNT(*) AS n, AVG(income) AS a FROM people WHERE ln(age + 1) > 2 AND round(hours / 3, 1) <> 4.5 GROUP BY region", "eps": 1.0, "keys": map[string]any{"region": []any{"north", "east", "mars"}}},
		{"query": "SELECT COUNT(*) AS n, AVG(age) AS a, SUM(hours, 0, 60) AS h FROM people WHERE sex IN ('m') AND exp(age / 50) < 4", "eps": 1.0},
		// Three quantiles of one column, from one shared histogram.
		{"query": "SELECT region, QUANTILE(age, 0.25) AS q1, MEDIAN(age) AS m, QUANTILE(age, 0.75) AS q3 FROM people GROUP BY region", "eps": 1.0},
		// A value outside its declared domain is NULL in both.
		{"query": "SELECT sex, COUNT(*) AS n FROM people WHERE region IS NULL OR region = 'mars' GROUP BY sex", "eps": 1.0},
		{"query": "SELECT CASE WHEN greatest(age, hours) > 50 THEN 'old' ELSE 'young' END AS old, COUNT(*) AS n, SUM(least(income, hours * 1000), 0, 60000) AS s FROM people WHERE NOT (region IN ('north', 'south')) GROUP BY old", "eps": 1.0},
	}
	for i, q := range queries {
		seed := uint64(100 + i)
		want, err := call(t, f.snap, seed, q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on the snapshot: %v", i, err)
		}
		got, err := call(t, f.live, seed, q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on ClickHouse: %v", i, err)
		}
		sameRelease(t, fmt.Sprintf("query %d", i), got, want)
	}
	if err := f.live.Verify(); err != nil {
		t.Errorf("ledger verify: %v", err)
	}
	// The data were read, from both shards: a release of the noise
	// alone, or of one shard, would not have the table's size.
	r, err := call(t, f.live, 1, map[string]any{"query": "SELECT COUNT(*) AS n FROM people", "eps": 10.0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Value.(*release.Table).Rows[0][0].(float64); n < 2900 || n > 3100 {
		t.Errorf("COUNT(*) released %v of 3000 rows", n)
	}
}

// stopGate stops the server when the call is admitted: after the plan's
// catalog check, before the ledger's charge.
type stopGate struct{ srv *chtest.Server }

func (g stopGate) Admit(context.Context, accounting.Event, release.Ref) (func() string, func(), error) {
	g.srv.Stop()
	return func() string { return "" }, func() {}, nil
}

// Faults of the engine: refused before the charge (the ledger unchanged)
// when the server is down, refuses the password or the table changed;
// after the charge, a fixed error or a release, and the charge stands.
func TestFaults(t *testing.T) {
	f := newFixture(t)
	live, srv := f.live, f.srv
	q := map[string]any{"query": "SELECT region, COUNT(*) AS n FROM people GROUP BY region", "eps": 0.5}
	before := charges(t, live)

	// Down before the charge.
	srv.Stop()
	_, err := call(t, live, 1, q, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot be reached") || !strings.Contains(err.Error(), "(nothing was charged)") || charges(t, live) != before {
		t.Errorf("server down at plan time: %v (charges %d, were %d)", err, charges(t, live), before)
	}
	srv.Start(t)

	// Down after the charge, before the read: the charge stands, and the
	// outcome (a fixed error or the noise alone) quotes no engine.
	r, err := call(t, live, 1, map[string]any{"query": "SELECT COUNT(*) AS n FROM people", "eps": 5.0}, stopGate{srv}, nil)
	if charges(t, live) != before+1 {
		t.Errorf("server down after the charge: charges %d, were %d", charges(t, live), before)
	}
	switch {
	case err != nil && (strings.Contains(err.Error(), "Code:") || strings.Contains(err.Error(), "DB::")):
		t.Errorf("server down after the charge quotes the engine: %v", err)
	case err == nil && r.Value.(*release.Table).Rows[0][0].(float64) > 100:
		t.Errorf("server down after the charge released COUNT(*) = %v, not the noise alone", r.Value.(*release.Table).Rows[0][0])
	}
	srv.Start(t)

	// Down during the run: the release is the noise alone.
	stopRun := func(run func(context.Context, *release.Data) (any, error)) func(context.Context, *release.Data) (any, error) {
		return func(ctx context.Context, d *release.Data) (any, error) {
			srv.Stop()
			return run(ctx, d)
		}
	}
	r, err = call(t, live, 1, map[string]any{"query": "SELECT COUNT(*) AS n FROM people", "eps": 5.0}, nil, stopRun)
	if err != nil || charges(t, live) != before+2 {
		t.Fatalf("server down during the run: %v (charges %d)", err, charges(t, live))
	}
	if n := r.Value.(*release.Table).Rows[0][0].(float64); n > 100 {
		t.Errorf("a failed statement released COUNT(*) = %v, not the noise alone", n)
	}
	srv.Start(t)

	// A statement longer than the server parses (ClickHouse's round is
	// written out with its operand five times, so nested rounds grow
	// fast): refused before the charge, naming the limit; the same query
	// on the snapshot runs.
	deep := "age / 3"
	for range 7 {
		deep = "round(" + deep + " + 0.25)"
	}
	long := map[string]any{"query": "SELECT AVG(" + deep + ", 0, 100) AS a FROM people", "eps": 0.5}
	_, err = call(t, live, 1, long, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "bytes its server accepts") || charges(t, live) != before+2 {
		t.Errorf("a statement above the server's limit: %v (charges %d)", err, charges(t, live))
	}
	if _, err := call(t, f.snap, 1, long, nil, nil); err != nil {
		t.Errorf("the long query on the snapshot: %v", err)
	}

	// A wrong password, before the charge.
	secret := live.EngineSecretPath("people")
	if err := os.WriteFile(secret, []byte("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = call(t, live, 1, q, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "refused the registered user or password") || !strings.Contains(err.Error(), "(nothing was charged)") || charges(t, live) != before+2 {
		t.Errorf("wrong password: %v", err)
	}
	if err := os.WriteFile(secret, []byte(chtest.AnalystPassword), 0o600); err != nil {
		t.Fatal(err)
	}

	// A column whose type changed since registration, named.
	srv.Exec(t, "ALTER TABLE db.people MODIFY COLUMN income String", "")
	_, err = call(t, live, 1, q, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"income"`) || !strings.Contains(err.Error(), "register") || charges(t, live) != before+2 {
		t.Errorf("type changed: %v", err)
	}
}

// Every statement of dsl/sqlplan's ClickHouse goldens runs on a server,
// on a table with NULLs, NaN and infinities (the goldens are printed for
// a table of sqlplan's test schema; __pn_row is the bounded goldens' row
// order, sqlplan.RowColumn).
func TestGoldenStatementsRun(t *testing.T) {
	srv := chtest.Start(t)
	srv.Exec(t, "CREATE DATABASE db", "")
	srv.Exec(t, "CREATE TABLE db.people (region Nullable(String), sex Nullable(String), age Nullable(Int32), income Nullable(Float64), hours Nullable(Float64), city Nullable(String), born Nullable(Date), user String, __pn_row Int64) ENGINE = MergeTree ORDER BY user", "")
	srv.Exec(t, "INSERT INTO db.people VALUES ('north','f',30,1000.5,40,'x','1990-01-02','u1',1), ('south','m',NULL,nan,NULL,NULL,NULL,'u2',2), ('north',NULL,200,1e300,-3,'it''s','2000-05-06','u3',3), (NULL,'f',-5,-inf,inf,'3','1970-01-01','u4',4), ('east','m',2147483647,-1e308,5e-324,'1e999','2106-01-01','u5',5), ('north','f',31,1000.5,40,'x','1990-01-02','u1',6)", "")
	// print_ch_over: the same statements written over a live table's
	// projection, inlined.
	files, err := filepath.Glob("../sqlplan/testdata/print_ch*/*.sql")
	if err != nil || len(files) < 10 {
		t.Fatalf("goldens %v: %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmt, _, _ := strings.Cut(string(b), "\n")
		srv.Exec(t, stmt, "")
	}
}

// Every request of a source runs with readonly=1: the server refuses any
// statement that would change data or settings, whatever privnotes sends.
func TestReadOnly(t *testing.T) {
	srv := chtest.Start(t)
	srv.Exec(t, "CREATE DATABASE db", "")
	srv.Exec(t, "CREATE TABLE db.t (x Float64) ENGINE = MergeTree ORDER BY tuple()", "")
	dir := t.TempDir()
	secret := filepath.Join(dir, "pw")
	if err := os.WriteFile(secret, []byte(chtest.AnalystPassword), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := ledger.EngineRef{Kind: chsource.Kind, URL: srv.URL("analyst"), Table: "db.t", Types: map[string]string{"x": "Float64"}}
	src, err := chsource.Open(context.Background(), ref, ledger.Schema{Columns: []string{"x"}}, secret)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := src.Query(context.Background(), "SELECT value FROM system.settings WHERE name = 'readonly'")
	if err != nil || len(rows) != 1 || rows[0][0] != "1" {
		t.Errorf("the source's readonly setting: %v, %v", rows, err)
	}
	// A failed statement's error is fixed: the server's text (which can
	// quote the data) is not in it.
	if _, err := src.Query(context.Background(), "SELECT throwIf(x = x) FROM db.t UNION ALL SELECT throwIf(1)"); err == nil || strings.Contains(err.Error(), "Code") {
		t.Errorf("a failing statement: %v", err)
	}
}
