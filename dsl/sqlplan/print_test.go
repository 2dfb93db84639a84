package sqlplan

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/tabular"
)

var update = flag.Bool("update", false, "rewrite the golden statements in testdata/print, testdata/print_pg and testdata/print_ch")

const from = `read_parquet('/snap/people.parquet')`

const ungrouped = "SELECT COUNT(*), SUM(income), AVG(age, 18, 90) AS a, VARIANCE(age, -1.5, 1e6) AS v, STDDEV(hours, 0, 80) AS sd, COUNT(DISTINCT user) FROM people"

// TestPrintGolden compares printed statements with testdata/print/*.sql
// (DuckDB) and testdata/print_pg/*.sql (PostgreSQL; dsl/pgsource runs
// them on a server).
func TestPrintGolden(t *testing.T) {
	t.Parallel()
	dialects := []struct {
		dir, from string
		d         Dialect
	}{
		{"print", from, DuckDB},
		{"print_pg", `"public"."people"`, PostgreSQL},
		{"print_ch", `"db"."people"`, ClickHouse},
		// A live table's reference (dsl/chsource): the projection of the
		// registered columns, written out over the table itself.
		{"print_ch_over", chFrom, chOver},
	}
	cases := []struct {
		name, query string
		opt         Options
	}{
		{"example", example, Options{}},
		{"ungrouped", ungrouped, Options{}},
		{"expressions", `SELECT floor(age / 10) AS band, CASE WHEN city = 'it''s' THEN 'q' END AS c, SUM(ln(income + 1), 0, 20) AS s FROM srv.people WHERE NOT (city IS NULL) AND CAST(city AS DOUBLE) <> -3 AND round(CAST(hours AS INTEGER), 2) >= year(born) AND coalesce(hours, 0) NOT IN (1, 2) GROUP BY band, c`, Options{}},
		{"quoting", `SELECT "region" AS "a""b", COUNT(*) AS "n""" FROM people GROUP BY region`, Options{}},
		{"quantile", "SELECT region, MEDIAN(age) AS m, QUANTILE(income, 0.9, 0, 50000), COUNT(*) FROM people GROUP BY region", Options{}},
		// User-level data: each user's rows bounded (Bound) in a subquery.
		{"bounded", example, Options{MaxGroups: 2, MaxRows: 3}},
		{"bounded_ungrouped", "SELECT COUNT(*), SUM(income), AVG(age, 18, 90) AS a, VARIANCE(age, -1.5, 1e6) AS v, STDDEV(hours, 0, 80) AS sd, COUNT(DISTINCT user) FROM people", Options{MaxGroups: 1, MaxRows: 5}},
		{"bounded_selection", "SELECT city, COUNT(*) FROM people GROUP BY city", Options{MaxGroups: 4, MaxRows: 1}},
	}
	for _, dl := range dialects {
		for _, c := range cases {
			if dl.d == chOver && c.opt.MaxGroups > 0 {
				continue // not inlined: print_ch's statement over chFrom
			}
			t.Run(dl.dir+"/"+c.name, func(t *testing.T) { printGolden(t, dl.dir, dl.from, dl.d, c.query, c.opt, c.name) })
		}
	}
}

// chFrom is a projection of sqlplan's test schema as dsl/chsource writes
// one, region mapped to NULL outside its domain, and chOver the dialect
// that writes a statement over it over "db"."people" itself.
var (
	chCols = map[string]string{
		"region": `CASE WHEN CASE WHEN "region" IS NULL THEN NULL ELSE ("region" IN ('north', 'south', 'east', 'west')) END THEN "region" END`,
		"sex":    `"sex"`, "age": `"age"`, "income": `"income"`, "hours": `"hours"`, "city": `"city"`, "born": `"born"`, "user": `"user"`,
	}
	chFrom = `(SELECT * FROM "db"."people")` // read only by a comparison
	chOver = ClickHouseOver(chFrom, `"db"."people"`, chCols)
)

// printGolden prints query's plan in dialect d over from and compares it
// with testdata/DIR/NAME.sql (rewritten under -update).
func printGolden(t *testing.T, dir, from string, d Dialect, query string, opt Options, name string) {
	p, err := plan(t, query, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Aggregates {
		if p.Aggregates[i].Kind == Quantile {
			p.Aggregates[i].Bins = 1 << 20
		}
	}
	st, err := Print(p, d, from)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(st.SQL + "\n")
	for _, col := range st.Columns {
		b.WriteString("-- " + col.Name + " " + [...]string{"key", "rows", "count", "sum", "sumsq", "users", "hist", "units"}[col.Role] + "\n")
	}
	golden := filepath.Join("testdata", dir, name+".sql")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestPrintFromPlanOnly checks that nothing of the analyst's text reaches
// the statement: the dataset name and the aliases are not printed.
func TestPrintFromPlanOnly(t *testing.T) {
	t.Parallel()
	p, err := plan(t, `SELECT "region" AS "a""b", COUNT(*) AS "n""" FROM people GROUP BY region`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Print(p, DuckDB, "T")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"people", `a""b`, `n"""`} {
		if strings.Contains(st.SQL, s) {
			t.Errorf("%q is in the statement %s", s, st.SQL)
		}
	}
}

// A quantile prints only once the caller has set its grid from the
// mechanism's plan: without it (or with one beyond MaxQuantileBins) the
// printer cannot know the bins.
func TestPrintQuantileNeedsGrid(t *testing.T) {
	t.Parallel()
	for _, bins := range []int{0, -1, MaxQuantileBins + 1} {
		p, err := plan(t, "SELECT MEDIAN(age) FROM people", Options{})
		if err != nil {
			t.Fatal(err)
		}
		p.Aggregates[0].Bins = bins
		if _, err := Print(p, DuckDB, from); !errors.Is(err, ErrNotYet) {
			t.Errorf("bins %d: got %v, want ErrNotYet", bins, err)
		}
	}
}

// The quantile's grid is the mechanism's: bin b of the statement is grid
// point b of tabular.PlanQuantile's plan, Lo + b·Step with the same Step.
func TestQuantileGridOf(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]float64{{0, 120}, {-1, 1}, {0.1, 0.7}, {-3e5, 1e-3}, {1, 1 + 0x1p-40}} {
		qp, err := tabular.PlanQuantile(c[0], c[1], 0.5, 1)
		if err != nil {
			t.Fatal(err)
		}
		g, err := QuantileGridOf(Aggregate{Name: "q", Kind: Quantile, Lo: c[0], Hi: c[1], Bins: qp.Grid})
		if err != nil {
			t.Fatal(err)
		}
		if g.Lo != c[0] || g.Bins != qp.Grid {
			t.Errorf("%v: grid %+v, the mechanism's has %d steps", c, g, qp.Grid)
		}
		for _, k := range []int{1, 2, 3, qp.Grid / 3, qp.Grid / 2, qp.Grid - 1} {
			if k < 1 || k >= qp.Grid {
				continue
			}
			if got, want := g.Lo+float64(k)*g.Step, qp.GridPoint(k); got != want {
				t.Errorf("%v: bin %d is at %v, the mechanism's grid point at %v", c, k, got, want)
			}
		}
	}
	if _, err := QuantileGridOf(Aggregate{Name: "s", Kind: Sum, Lo: 0, Hi: 1, Bins: 4}); err == nil {
		t.Error("a SUM has a quantile grid")
	}
}

func TestDuckDBLiterals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		got, want string
	}{
		{DuckDB.Num(10), "CAST('10' AS DOUBLE)"},
		{DuckDB.Num(-0.1), "CAST('-0.1' AS DOUBLE)"},
		{DuckDB.Num(1e21), "CAST('1e+21' AS DOUBLE)"},
		{DuckDB.Str("it's"), "'it''s'"},
		{DuckDB.Ident(`a"b`), `"a""b"`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

func TestPostgreSQLLiterals(t *testing.T) {
	t.Parallel()
	tenth, fifth := 0.1, 0.2 // a float64 sum, not an exact constant
	for _, c := range []struct {
		got, want string
	}{
		{PostgreSQL.Num(10), "CAST('10' AS double precision)"},
		{PostgreSQL.Num(-0.1), "CAST('-0.1' AS double precision)"},
		{PostgreSQL.Num(tenth + fifth), "CAST('0.30000000000000004' AS double precision)"},
		{PostgreSQL.Num(1e21), "CAST('1e+21' AS double precision)"},
		{PostgreSQL.Str(`it's \n`), `'it''s \n'`},
		{PostgreSQL.Ident(`a"b`), `"a""b"`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

func TestClickHouseLiterals(t *testing.T) {
	t.Parallel()
	tenth, fifth := 0.1, 0.2
	for _, c := range []struct {
		got, want string
	}{
		{ClickHouse.Num(10), "toFloat64(10)"},
		{ClickHouse.Num(-0.1), "toFloat64(-0.1)"},
		{ClickHouse.Num(tenth + fifth), "toFloat64(0.30000000000000004)"},
		{ClickHouse.Num(1e21), "toFloat64(1e+21)"},
		// A subnormal, which the parser refuses, as an exact product.
		{ClickHouse.Num(5e-324), "((toFloat64(1) * toFloat64(2.2227587494850775e-162)) * toFloat64(2.2227587494850775e-162))"},
		{ClickHouse.Num(-3 * 0x1p-1074), "((toFloat64(-3) * toFloat64(2.2227587494850775e-162)) * toFloat64(2.2227587494850775e-162))"},
		{ClickHouse.Str(`it's \n`), `'it\'s \\n'`},
		{ClickHouse.Ident(`a"b\`), `"a\"b\\"`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

// A dialect without window functions prints a bounded plan (user-level
// data) only with arrays (arrayBounder, ClickHouse's); one without either
// is refused, not printed without its bound.
func TestBoundedWithoutWindows(t *testing.T) {
	t.Parallel()
	p, err := plan(t, example, Options{MaxGroups: 2, MaxRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := Print(p, noWindows{PostgreSQL}, `"public"."people"`); err == nil {
		t.Errorf("printed a bounded plan without windows or arrays: %s", st.SQL)
	}
	st, err := Print(p, ClickHouse, `"db"."people"`)
	if err != nil {
		t.Fatal(err)
	}
	// The bound is applied by the arrays, never by a window.
	for _, want := range []string{"arraySlice(arraySort(groupArray(tuple(", ")), 1, 3)", ")), 1, 2)"} {
		if !strings.Contains(st.SQL, want) {
			t.Errorf("ClickHouse's bounded statement lacks %q:\n%s", want, st.SQL)
		}
	}
	if strings.Contains(st.SQL, " OVER ") {
		t.Errorf("ClickHouse's bounded statement has a window:\n%s", st.SQL)
	}
}

// noWindows is a dialect without window functions or arrays.
type noWindows struct{ Dialect }

func (noWindows) Windows() bool { return false }

// TestClosedKeyDomain: a key over a Closed categorical column is tested
// for NULL, its whole domain being every non-NULL value, and on an
// unbounded plan with public keys not even that per row (groupsDropNull);
// an open one, a key list, or a CASE over the column still match their
// lists.
func TestClosedKeyDomain(t *testing.T) {
	t.Parallel()
	closed := people
	closed.Columns = append([]Column(nil), people.Columns...)
	for i := range closed.Columns {
		if closed.Columns[i].Kind == Categorical {
			closed.Columns[i].Closed = true
		}
	}
	const byRegion = "SELECT region, COUNT(*) FROM people GROUP BY region"
	for _, c := range []struct {
		name, query    string
		schema         Schema
		opt            Options
		isNull, isList bool
	}{
		{"closed column", byRegion, closed, Options{}, false, false},
		{"closed column, bounded", byRegion, closed, Options{MaxGroups: 2, MaxRows: 3}, true, false},
		{"open column", byRegion, people, Options{}, false, true},
		{"closed column, caller's keys", byRegion, closed, Options{Keys: map[string][]Value{"region": {String("north")}}}, false, true},
		{"closed column under CASE", "SELECT CASE WHEN region = 'north' THEN 'n' ELSE 's' END AS r, COUNT(*) FROM people GROUP BY r", closed, Options{}, false, false},
	} {
		q, err := Parse(ast(t, c.query))
		if err != nil {
			t.Fatal(err)
		}
		p, err := q.Plan(c.schema, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		st, err := Print(p, DuckDB, from)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := strings.Contains(st.SQL, `("region" IS NOT NULL)`); got != c.isNull {
			t.Errorf("%s: NULL test %v, want %v:\n%s", c.name, got, c.isNull, st.SQL)
		}
		if got := strings.Contains(st.SQL, "['north'"); got != c.isList {
			t.Errorf("%s: the domain's list printed %v, want %v:\n%s", c.name, got, c.isList, st.SQL)
		}
	}
}

// TestClosedKeyWithNull: a Closed key whose domain is its categories and
// NULL (a column analysis's by= with the "other" group) holds every row,
// so no condition is printed for it in any dialect; without NULL it is
// the NULL test, which an unbounded plan with public keys leaves to the
// reader (groupsDropNull) but partition selection keeps per row, since
// each group the statement returns is a candidate; an open key still
// matches its list.
func TestClosedKeyWithNull(t *testing.T) {
	t.Parallel()
	key := func(closed, null bool) Key {
		k := Key{Name: "region", Expr: &Expr{Op: OpColumn, Column: "region", Type: TypeString}, Source: FromCaller, Closed: closed,
			Domain: []Value{String("north"), String("south")}}
		if null {
			k.Domain = append(k.Domain, Value{Kind: ValueNull})
		}
		return k
	}
	city := Key{Name: "city", Expr: &Expr{Op: OpColumn, Column: "city", Type: TypeString}, Source: PartitionSelection}
	for _, c := range []struct {
		name        string
		key         Key
		selection   bool
		where, list bool
		notNull     bool
	}{
		{"closed with NULL", key(true, true), false, false, false, false},
		{"closed without NULL", key(true, false), false, false, false, false},
		{"closed without NULL, partition selection", key(true, false), true, true, false, true},
		{"open with NULL", key(false, true), false, true, true, false},
		{"open without NULL", key(false, false), false, true, true, false},
	} {
		p := &Plan{Keys: []Key{c.key}, Aggregates: []Aggregate{{Name: "n", Kind: Count}},
			Outputs: []Output{{Key: 0, Agg: -1}, {Key: -1, Agg: 0}}}
		if c.selection {
			p.Keys = append(p.Keys, city)
			p.Outputs = append(p.Outputs, Output{Key: 1, Agg: -1})
		}
		for _, d := range []Dialect{DuckDB, PostgreSQL, ClickHouse} {
			st, err := Print(p, d, from)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := strings.Contains(st.SQL, " WHERE "); got != c.where {
				t.Errorf("%s: WHERE printed %v, want %v:\n%s", c.name, got, c.where, st.SQL)
			}
			if got := strings.Contains(st.SQL, "'north'"); got != c.list {
				t.Errorf("%s: the domain's list printed %v, want %v:\n%s", c.name, got, c.list, st.SQL)
			}
			if got := strings.Contains(st.SQL, "IS NOT NULL"); got != c.notNull {
				t.Errorf("%s: NULL test printed %v, want %v:\n%s", c.name, got, c.notNull, st.SQL)
			}
		}
	}
}

// ClickHouseOver writes an aggregate over its projection's table, each
// column replaced by its expression (the golden print_ch_over), and
// otherwise prints as ClickHouse: over another table reference, when an
// alias of the statement names one of the projection's columns (which
// ClickHouse would read as the alias), and never with a column the
// projection lacks.
func TestClickHouseOverInline(t *testing.T) {
	t.Parallel()
	withN := map[string]string{"n": `"n"`}
	for k, v := range chCols {
		withN[k] = v
	}
	noIncome := map[string]string{}
	for k, v := range chCols {
		if k != "income" {
			noIncome[k] = v
		}
	}
	cases := []struct {
		name    string
		d       Dialect
		from    string
		inlined bool   // the statement reads "db"."people" directly
		err     string // the error, if any
	}{
		{"projection", chOver, chFrom, true, ""},
		{"other reference", chOver, `"db"."other"`, false, ""},
		{"alias names a column", ClickHouseOver(chFrom, `"db"."people"`, withN), chFrom, false, ""},
		{"column outside the projection", ClickHouseOver(chFrom, `"db"."people"`, noIncome), chFrom, false, `column "income" is not in the table reference`},
	}
	p, err := plan(t, example, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		st, err := Print(p, c.d, c.from)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error saying %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plain, err := Print(p, ClickHouse, c.from)
		if err != nil {
			t.Fatal(err)
		}
		if c.inlined {
			if !strings.Contains(st.SQL, ` FROM "db"."people" WHERE `) || !strings.Contains(st.SQL, chCols["region"]) || st.SQL == plain.SQL {
				t.Errorf("%s: not written over the table: %s", c.name, st.SQL)
			}
		} else if st.SQL != plain.SQL {
			t.Errorf("%s: got\n%s\nwant ClickHouse's\n%s", c.name, st.SQL, plain.SQL)
		}
	}
	// A bounded plan is not inlined: its rows are read through the
	// projection in FROM, which a Distributed table's shards answer with
	// rows, so that each unit's rows are bounded together on the
	// initiator (clickHouse.BoundedRows).
	bp, err := plan(t, example, Options{MaxGroups: 2, MaxRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Print(bp, chOver, chFrom)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Print(bp, ClickHouse, chFrom)
	if err != nil {
		t.Fatal(err)
	}
	if st.SQL != plain.SQL || !strings.Contains(st.SQL, " FROM "+chFrom+" WHERE ") {
		t.Errorf("a bounded plan over the projection: got\n%s\nwant ClickHouse's over it\n%s", st.SQL, plain.SQL)
	}
}

// TestPostgreSQLConstHistogram: PostgreSQL refuses array_agg of a value
// that reads no column inside a sub-select's FROM, so a quantile of a
// constant is printed as the group's one bin and row count, and only
// then: an argument that reads a column anywhere in its tree (under a
// cast or a function) keeps the rows' own histogram, and DuckDB, whose
// histogram takes any argument, prints its own either way.
func TestPostgreSQLConstHistogram(t *testing.T) {
	t.Parallel()
	num := func(x float64) *Expr {
		return &Expr{Op: OpLiteral, Value: Value{Kind: ValueNumber, Num: x}, Type: TypeNumber}
	}
	col := &Expr{Op: OpColumn, Column: "age", Type: TypeNumber}
	nested := &Expr{Op: OpFunc, Func: "ln", Args: []*Expr{{Op: OpCast, Cast: TypeNumber, Args: []*Expr{col}, Type: TypeNumber}}, Type: TypeNumber}
	constant := &Expr{Op: OpFunc, Func: "ln", Args: []*Expr{{Op: OpAdd, Args: []*Expr{num(2), num(1)}, Type: TypeNumber}}, Type: TypeNumber}
	key := Key{Name: "region", Expr: &Expr{Op: OpColumn, Column: "region", Type: TypeString}, Source: FromCaller, Closed: true,
		Domain: []Value{String("north"), String("south")}}
	agg := Aggregate{Name: "m", Kind: Quantile, Lo: 0, Hi: 10, Q: 0.5, Bins: 10}
	qg, err := QuantileGridOf(agg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		arg      *Expr
		constant bool // printed as the constant's one bin on PostgreSQL
	}{
		{"literal", num(3), true},
		{"expression of literals", constant, true},
		{"column", col, false},
		{"column under a cast and a function", nested, false},
	} {
		a := agg
		a.Arg = c.arg
		p := &Plan{Keys: []Key{key}, Aggregates: []Aggregate{a}, Outputs: []Output{{Key: 0, Agg: -1}, {Key: -1, Agg: 0}}}
		for _, d := range []Dialect{PostgreSQL, DuckDB} {
			st, err := Print(p, d, from)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			arg, err := (&printer{d: d}).expr(c.arg)
			if err != nil {
				t.Fatal(err)
			}
			bin := d.Bin(d.Clamp(arg, d.Num(a.Lo), d.Num(a.Hi)), qg)
			want := d.Histogram(bin)
			if c.constant && d == PostgreSQL {
				want = PostgreSQL.(constHistogram).ConstHistogram(bin)
				if strings.Contains(st.SQL, "array_agg") {
					t.Errorf("%s: array_agg of a constant printed for PostgreSQL:\n%s", c.name, st.SQL)
				}
			}
			if !strings.Contains(st.SQL, want+" AS "+d.Ident("a0_hist")) {
				t.Errorf("%s, %T: the statement\n%s\nhas not the histogram\n%s", c.name, d, st.SQL, want)
			}
		}
	}
}

// ClickHouse reads a column reference as the SELECT's alias of that
// name, so a statement that reads a column named as one of its own
// columns (a user-level analysis's outer statement reads the inner
// one's n) names its columns in an outer SELECT; DuckDB's is as before.
func TestClickHouseAliasShadowing(t *testing.T) {
	t.Parallel()
	p, err := plan(t, ungrouped, Options{})
	if err != nil {
		t.Fatal(err)
	}
	walk(p.Aggregates[1].Arg, func(e *Expr) error {
		if e.Op == OpColumn {
			e.Column = "n"
		}
		return nil
	})
	st, err := Print(p, ClickHouse, `"db"."t"`)
	if err != nil {
		t.Fatal(err)
	}
	outer, inner, ok := strings.Cut(st.SQL, " FROM (SELECT ")
	if !ok || !strings.HasPrefix(outer, `SELECT "__pn_o0" AS "n", "__pn_o1" AS "a1_sum", `) || strings.Contains(inner, `AS "n"`) || !strings.Contains(inner, `toFloat64("n")`) {
		t.Errorf("ClickHouse: %s", st.SQL)
	}
	if st.Columns[0].Name != "n" || st.Columns[1].Name != "a1_sum" {
		t.Errorf("columns %+v", st.Columns)
	}
	duck, err := Print(p, DuckDB, from)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(duck.SQL, "__pn_o") || !strings.HasPrefix(duck.SQL, `SELECT count(*) AS "n"`) {
		t.Errorf("DuckDB: %s", duck.SQL)
	}
	// Without a clash ClickHouse's statement is not wrapped.
	q, err := plan(t, ungrouped, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := Print(q, ClickHouse, `"db"."t"`); err != nil || strings.Contains(st.SQL, "__pn_o") {
		t.Errorf("no clash: %v %v", st, err)
	}
}
