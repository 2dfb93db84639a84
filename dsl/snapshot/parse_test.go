package snapshot

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

var updateSQLPlan = flag.Bool("update-sqlplan", false, "rewrite ../sqlplan/testdata/ast.json from this DuckDB's parser")

// sqlplanAST is the file of syntax trees that dsl/sqlplan's tests plan
// from: recorded here, where DuckDB is linked, so that the planner's tests
// stay pure Go yet are checked against the parser's real output.
const sqlplanAST = "../sqlplan/testdata/ast.json"

// TestParseSQLRecorded checks that every recorded tree is what this
// DuckDB's json_serialize_sql gives today; a DuckDB upgrade that changes
// the JSON shapes fails here rather than in a planner that silently
// misreads them. -update-sqlplan rewrites the file (and fills trees
// recorded as null).
func TestParseSQLRecorded(t *testing.T) {
	b, err := os.ReadFile(sqlplanAST)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec) == 0 {
		t.Fatal("no recorded trees")
	}
	queries := make([]string, 0, len(rec))
	for q := range rec {
		queries = append(queries, q)
	}
	sort.Strings(queries)
	for _, q := range queries {
		got, err := ParseSQL(context.Background(), q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if *updateSQLPlan {
			if !json.Valid(got) {
				got, _ = json.Marshal(string(got)) // kept as the parser's text: the planner must refuse it
			}
			rec[q] = got
			continue
		}
		if !sameJSON(got, rec[q]) {
			t.Errorf("%q: DuckDB's tree differs from the recorded one; rerun with -update-sqlplan and check the planner's tests\ngot  %.400s\nwant %.400s", q, got, rec[q])
		}
	}
	if *updateSQLPlan {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", " ")
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sqlplanAST, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sameJSON compares two JSON texts by value; a text that is not JSON is
// recorded as a JSON string holding it.
func sameJSON(got, want []byte) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil {
		a = string(got)
	}
	if json.Unmarshal(want, &b) != nil {
		return false
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestParseSQL(t *testing.T) {
	ctx := context.Background()
	// The text is a bound parameter: quotes and semicolons are parsed as
	// SQL, never spliced into the parser's own statement.
	js, err := ParseSQL(ctx, "SELECT 'a'');SELECT 1;--' AS x FROM t")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Error      bool
		Statements []json.RawMessage
	}
	if err := json.Unmarshal(js, &v); err != nil || v.Error || len(v.Statements) != 1 || !strings.Contains(string(js), `"a');SELECT 1;--"`) {
		t.Errorf("got %s (%v)", js, err)
	}
	js, err = ParseSQL(ctx, "SELEC 1")
	if err != nil || !strings.Contains(string(js), `"error":true`) {
		t.Errorf("a syntax error: got %s, %v; want an error object in the JSON", js, err)
	}
	// Parsing never executes: a statement that would fail at run time
	// (no table t, no file) parses.
	if _, err := ParseSQL(ctx, "SELECT * FROM read_csv('/nonexistent')"); err != nil {
		t.Error(err)
	}
}

// TestPrintedStatementRuns runs a statement printed by dsl/sqlplan in
// DuckDB on a tiny table and checks its clamped, centred sums against the
// same computation in Go, including the values that must not break it:
// NULL, NaN, ±Inf, values far outside the bounds, and rows for which ln
// is undefined (a failure there would happen after the charge).
func TestPrintedStatementRuns(t *testing.T) {
	ctx := context.Background()
	c, err := openDuck("")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	type row struct {
		g string
		x sql.NullFloat64
	}
	inf := math.Inf(1)
	rows := []row{
		{"a", sql.NullFloat64{Float64: 3, Valid: true}}, {"a", sql.NullFloat64{Float64: -5, Valid: true}},
		{"a", sql.NullFloat64{Float64: 1e300, Valid: true}}, {"a", sql.NullFloat64{}},
		{"b", sql.NullFloat64{Float64: math.NaN(), Valid: true}}, {"b", sql.NullFloat64{Float64: -inf, Valid: true}},
		{"b", sql.NullFloat64{Float64: 7.25, Valid: true}}, {"b", sql.NullFloat64{Float64: 0, Valid: true}},
		{"c", sql.NullFloat64{Float64: inf, Valid: true}},
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (g VARCHAR, x DOUBLE)`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES ($1, $2)`, r.g, r.x); err != nil {
			t.Fatal(err)
		}
	}
	const lo, hi = -2.0, 10.0
	js, err := ParseSQL(ctx, "SELECT g, COUNT(*), SUM(x, -2, 10), AVG(x, -2, 10), VARIANCE(x, -2, 10), SUM(ln(x), -2, 10) AS l FROM people GROUP BY g")
	if err != nil {
		t.Fatal(err)
	}
	q, err := sqlplan.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	p, err := q.Plan(sqlplan.Schema{Columns: []sqlplan.Column{{Name: "g", Kind: sqlplan.Text}, {Name: "x", Kind: sqlplan.Numeric}}}, sqlplan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlplan.Print(p, sqlplan.DuckDB, "t")
	if err != nil {
		t.Fatal(err)
	}
	// The Go computation: clamp (NaN to hi, as DuckDB orders NaN last),
	// skip NULL (and ln's undefined values), centre on the midpoint.
	clamp := func(v float64) float64 {
		if math.IsNaN(v) {
			return hi
		}
		return math.Min(math.Max(v, lo), hi)
	}
	mid := (lo + hi) / 2
	want := map[string][]float64{}
	for _, r := range rows {
		w := want[r.g]
		if w == nil {
			w = make([]float64, 6) // n, sum, count, centred sum, centred sum of squares, sum of clamped ln
		}
		w[0]++
		if r.x.Valid {
			c := clamp(r.x.Float64)
			w[1] += c
			w[2]++
			w[3] += c - mid
			w[4] += (c - mid) * (c - mid)
			if r.x.Float64 > 0 || math.IsNaN(r.x.Float64) {
				w[5] += clamp(math.Log(r.x.Float64))
			}
		}
		want[r.g] = w
	}
	res, err := db.QueryContext(ctx, st.SQL)
	if err != nil {
		t.Fatalf("%v\n%s", err, st.SQL)
	}
	defer res.Close()
	got := map[string][]float64{}
	for res.Next() {
		var g string
		v := make([]float64, len(st.Columns)-1)
		dst := []any{&g}
		for i := range v {
			dst = append(dst, &v[i])
		}
		if err := res.Scan(dst...); err != nil {
			t.Fatal(err)
		}
		// Columns: k0, n, a1_sum, a2_n, a2_sum, a3_n, a3_sum, a3_sumsq, a4_sum;
		// the sums are integers on each aggregate's grid (sqlplan.GridOf).
		step := func(i int) float64 {
			gr, err := sqlplan.GridOf(p.Aggregates[i])
			if err != nil {
				t.Fatal(err)
			}
			return gr.Step
		}
		got[g] = []float64{v[0], v[1] * step(1), v[2], v[3] * step(2), v[6] * step(3) * step(3), v[7] * step(4)}
		if v[4] != v[2] || v[5] != v[3] {
			t.Errorf("group %s: AVG and VARIANCE disagree on the count or centred sum: %v", g, v)
		}
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	for g, w := range want {
		for i := range w {
			if math.Abs(got[g][i]-w[i]) > 1e-9*math.Max(1, math.Abs(w[i])) {
				t.Errorf("group %s: got %v, want %v\n%s", g, got[g], w, st.SQL)
				break
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("got groups %v, want %v", got, want)
	}
}

// A repeated text is answered from the memo with the same tree, a
// different text is parsed, and the memo stays within parsedTrees.
func TestParseSQLMemo(t *testing.T) {
	ctx := context.Background()
	first, err := ParseSQL(ctx, "SELECT 41 AS memo")
	if err != nil {
		t.Fatal(err)
	}
	if js, ok := parsed.get("SELECT 41 AS memo"); !ok || js != string(first) {
		t.Fatalf("the memo holds %q, %v after a parse; want the tree", js, ok)
	}
	again, err := ParseSQL(ctx, "SELECT 41 AS memo")
	if err != nil || !bytes.Equal(again, first) {
		t.Errorf("a repeated text gave %s (%v), want %s", again, err, first)
	}
	other, err := ParseSQL(ctx, "SELECT 42 AS memo")
	if err != nil || bytes.Equal(other, first) || !strings.Contains(string(other), "42") {
		t.Errorf("another text gave %s (%v)", other, err)
	}
	for i := range 2 * parsedTrees {
		if _, err := ParseSQL(ctx, fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	parsed.mu.Lock()
	n := len(parsed.m)
	parsed.mu.Unlock()
	if n > parsedTrees {
		t.Errorf("the memo holds %d trees, more than %d", n, parsedTrees)
	}
}

// TestClosedKeyNullGroup: on a Closed key the printed statement groups the
// NULL rows instead of testing each row for NULL (sqlplan's
// groupsDropNull, issue 27's grouped SUM and AVG), and every group of the
// domain gets exactly the integers the per-row test gave: the same count
// and the same exact sums of SUM's and AVG's grids, whatever the values
// (NULL, NaN, ±Inf, out of bounds, ties of either grid's rounding). The
// only extra group is the NULL one, which the reader drops.
func TestClosedKeyNullGroup(t *testing.T) {
	ctx := context.Background()
	c, err := openDuck("")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (region VARCHAR, income DOUBLE)`); err != nil {
		t.Fatal(err)
	}
	regions := []any{"north", "south", "east", nil}
	incomes := []any{3.5, 0, 200000, 250000, -1, math.NaN(), math.Inf(1), math.Inf(-1), nil,
		0x3p-31, 0x5p-32, 100000 + 0x3p-33, 41234.57, 99999.99, 1e300}
	for i := range 3 * len(incomes) {
		r, x := regions[i%len(regions)], incomes[i%len(incomes)]
		if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES ($1, $2)`, r, x); err != nil {
			t.Fatal(err)
		}
	}
	js, err := ParseSQL(ctx, "SELECT region, SUM(income, 0, 200000) AS s, AVG(income, 0, 200000) AS a FROM people GROUP BY region")
	if err != nil {
		t.Fatal(err)
	}
	q, err := sqlplan.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	schema := sqlplan.Schema{Columns: []sqlplan.Column{
		{Name: "region", Kind: sqlplan.Categorical, Categories: []string{"north", "south", "east", "west"}, Closed: true},
		{Name: "income", Kind: sqlplan.Numeric}}}
	p, err := q.Plan(schema, sqlplan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlplan.Print(p, sqlplan.DuckDB, "t")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.SQL, "NULL") || strings.Contains(st.SQL, " WHERE ") {
		t.Fatalf("the statement tests rows for NULL again:\n%s", st.SQL)
	}
	// The per-row form the statement replaced.
	i := strings.Index(st.SQL, " GROUP BY ")
	perRow := st.SQL[:i] + ` WHERE ("region" IS NOT NULL)` + st.SQL[i:]
	run := func(stmt string) map[string]string {
		rs, err := db.QueryContext(ctx, stmt)
		if err != nil {
			t.Fatalf("%v\n%s", err, stmt)
		}
		defer rs.Close()
		out := map[string]string{}
		for rs.Next() {
			v := make([]any, len(st.Columns))
			dst := make([]any, len(v))
			for j := range v {
				dst[j] = &v[j]
			}
			if err := rs.Scan(dst...); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprint(v[0])] = fmt.Sprint(v[1:]...)
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, want := run(st.SQL), run(perRow)
	if len(want) != 3 || len(got) != len(want)+1 {
		t.Fatalf("groups: got %v, want %v and the NULL group", got, want)
	}
	if _, ok := got["<nil>"]; !ok {
		t.Errorf("no NULL group in %v", got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("group %s: got %s, want %s (per-row NULL test)", k, got[k], w)
		}
	}
}
