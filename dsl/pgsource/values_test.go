package pgsource_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/gridtest"
	"github.com/privnotes/privnotes/internal/pgtest"
)

// roundValues are doubles at the edges of rounding half away from zero:
// ties, the largest double below ½ (where |x| + ½ rounds up), odd
// integers above 2^52 (where x + ½ is a tie rounded to even), signed
// zeros, subnormals and non-finite values.
var roundValues = []float64{0, math.Copysign(0, -1), 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 0.49999999999999994, -0.49999999999999994,
	0.5000000000000001, 1, 3, 5, -3, 0.1, -0.7, 1e-300, 5e-324, 1<<52 + 1, -(1<<52 + 1), 1 << 53, 1<<52 - 0.5, 1e300,
	math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}

// pad wraps x in a no-op CASE longer than the dialect copies in place,
// so that the guard around it binds it in a sub-select instead: both of
// the dialect's paths are checked.
func pad(x string) string {
	return "CASE WHEN length('" + strings.Repeat("p", 500) + "') = 0 THEN NULL ELSE " + x + " END"
}

// superConn opens a session of the test server's superuser on database
// postgres; the caller closes it.
func superConn(t *testing.T, srv *server) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(srv.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = pgtest.SuperPassword
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// queryFloats evaluates exprs over one row per value of xs (column x of
// table v, in order) and returns them, NaN for NULL.
func queryFloats(t *testing.T, srv *server, xs []float64, exprs []string) [][]float64 {
	t.Helper()
	ctx := context.Background()
	conn := superConn(t, srv)
	defer conn.Close(ctx)
	out := make([][]float64, len(xs))
	for i, x := range xs {
		var sel []string
		for _, e := range exprs {
			sel = append(sel, "CAST("+e+" AS double precision)")
		}
		rows, err := conn.Query(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM (SELECT CAST($1 AS double precision) AS x) AS v", x)
		if err != nil {
			t.Fatalf("x = %g: %v", x, err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				f, ok := v.(float64)
				if !ok {
					f = math.NaN() // NULL
				}
				out[i] = append(out[i], f)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("x = %g: %v", x, err)
		}
		rows.Close()
	}
	return out
}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// The dialect's round and integer cast are DuckDB's (Go's math.Round,
// half away from zero, exact), and its grid integers the grid's (Go's
// math.RoundToEven, as DuckDB's cast), at every edge value, whether the
// operand is copied in place or bound in a sub-select.
func TestRoundingIsDuckDBs(t *testing.T) {
	srv := startServer(t)
	d := sqlplan.PostgreSQL
	type check struct {
		expr string
		want func(x float64) float64
	}
	var checks []check
	for _, x := range []string{"x", pad("x")} {
		checks = append(checks,
			check{d.Func("round", []string{x}), math.Round},
			check{d.ToNumber(x, false, true), math.Round})
		// Grids with Step 2 (the flushed branch), 1 and 2^-48, the clamp
		// in front as the printer writes it; q as DuckDB computes it.
		for _, a := range []sqlplan.Aggregate{
			{Name: "s", Kind: sqlplan.Sum, Lo: 0, Hi: 1 << 48},
			{Name: "a", Kind: sqlplan.Avg, Lo: -(1 << 47), Hi: 1 << 47},
			{Name: "a", Kind: sqlplan.Avg, Lo: -3, Hi: 5},
			{Name: "s", Kind: sqlplan.Sum, Lo: -1, Hi: 1},
		} {
			g, err := sqlplan.GridOf(a)
			if err != nil {
				t.Fatal(err)
			}
			checks = append(checks, check{d.Quantize(d.Clamp(x, d.Num(a.Lo), d.Num(a.Hi)), g), func(x float64) float64 {
				if math.IsNaN(x) {
					x = a.Hi // the clamp's NaN
				}
				c := min(max(x, a.Lo), a.Hi)
				q := math.RoundToEven((c - g.Centre) * (1 / g.Step))
				return min(max(q, float64(g.Lo)), float64(g.Hi))
			}})
		}
	}
	var exprs []string
	for _, c := range checks {
		exprs = append(exprs, c.expr)
	}
	got := queryFloats(t, srv, roundValues, exprs)
	for i, x := range roundValues {
		for j, c := range checks {
			if want := c.want(x); !same(got[i][j], want) {
				t.Errorf("x = %g, expression %d: got %g, want %g\n%s", x, j, got[i][j], want, c.expr)
			}
		}
	}
}

// The guards stay total when their operands are long enough to be bound
// in a sub-select rather than copied (TestDialectIsTotal's operands are
// all copied).
func TestDialectIsTotalBound(t *testing.T) {
	srv := startServer(t)
	srv.exec(t, `CREATE TABLE v (x double precision)`)
	srv.exec(t, `INSERT INTO v VALUES (0), ('-0'), (1), (-1), (2.5), (1e308), (-1e308), (5e-324), (1e-300), (1e300), (709.5), (-745.5),
		('NaN'), ('Infinity'), ('-Infinity'), (NULL)`)
	d := sqlplan.PostgreSQL
	x, y := pad("a.x"), pad("b.x")
	var exprs []string
	for _, op := range []string{"+", "-", "*", "/"} {
		exprs = append(exprs, d.Arith(op, x, y), d.Arith(op, "a.x", y))
	}
	exprs = append(exprs, d.Func("exp", []string{x}), d.Ln(x), d.Func("round", []string{x, "-3"}), d.Func("round", []string{x, "20"}))
	for _, e := range exprs {
		if !strings.Contains(e, "(SELECT") {
			t.Fatalf("not bound in a sub-select: %s", e)
		}
		srv.exec(t, "SELECT count("+e+") FROM v AS a CROSS JOIN v AS b")
	}
}

// A double divided by zero and the texts of NaN and ±inf are DuckDB's
// IEEE 754 values (which the statement then clamps to a bound), not
// NULL: x/0 is ±inf by the signs of x and of the zero, 0/0 and NaN/0 are
// NaN, and NaN and ±inf operands pass through the other guards.
func TestNonFiniteAsDuckDB(t *testing.T) {
	srv := startServer(t)
	d := sqlplan.PostgreSQL
	negZero := math.Copysign(0, -1)
	xs := []float64{0, negZero, 1, -2.5, 1e300, math.NaN(), math.Inf(1), math.Inf(-1)}
	type check struct {
		expr string
		want func(x float64) float64
	}
	var checks []check
	for _, x := range []string{"x", pad("x")} {
		checks = append(checks,
			check{d.Arith("/", x, d.Num(0)), func(x float64) float64 { return x / 0 }},
			check{d.Arith("/", x, "(-"+d.Num(0)+")"), func(x float64) float64 { return x / negZero }},
			check{d.Arith("/", d.Num(-3), x), func(x float64) float64 { return -3 / x }},
			check{d.Arith("+", x, d.Num(1)), func(x float64) float64 { return x + 1 }},
			check{d.Arith("-", x, x), func(x float64) float64 { return x - x }},
			check{d.Arith("*", x, d.Num(2)), func(x float64) float64 { return x * 2 }},
			check{d.Arith("*", x, d.Num(0)), func(x float64) float64 { return x * 0 }},
			check{d.Clamp(d.Arith("/", d.Num(1), x), d.Num(-5), d.Num(5)), func(x float64) float64 {
				if v := 1 / x; !math.IsNaN(v) {
					return min(max(v, -5), 5)
				}
				return 5 // NaN is above every number
			}},
		)
	}
	var exprs []string
	for _, c := range checks {
		exprs = append(exprs, c.expr)
	}
	got := queryFloats(t, srv, xs, exprs)
	for i, x := range xs {
		for j, c := range checks {
			want := c.want(x)
			if !same(got[i][j], want) || math.Signbit(got[i][j]) != math.Signbit(want) && !math.IsNaN(want) {
				t.Errorf("x = %g, expression %d: got %g, want %g\n%s", x, j, got[i][j], want, c.expr)
			}
		}
	}
	// Texts as DuckDB's TRY_CAST(s AS DOUBLE) reads them.
	texts := map[string]float64{
		"nan": math.NaN(), " NaN ": math.NaN(), "+nan": math.NaN(), "-nan": math.NaN(), "inf": math.Inf(1), "-inf": math.Inf(-1),
		"+Inf": math.Inf(1), "Infinity": math.Inf(1), " -INFINITY": math.Inf(-1), "infinit": math.NaN(), "infinityx": math.NaN(),
		"nano": math.NaN(), "2.5": 2.5, "abc": math.NaN(),
	}
	for s, want := range texts {
		null := s == "infinit" || s == "infinityx" || s == "nano" || s == "abc"
		got := queryText(t, srv, d.ToNumber(d.Str(s), true, false))
		switch {
		case null && got != nil:
			t.Errorf("%q: got %g, want NULL", s, *got)
		case !null && (got == nil || !same(*got, want)):
			t.Errorf("%q: got %v, want %g", s, got, want)
		}
	}
}

// queryText evaluates one double expression of no table; nil for NULL.
func queryText(t *testing.T, srv *server, expr string) *float64 {
	t.Helper()
	ctx := context.Background()
	conn := superConn(t, srv)
	defer conn.Close(ctx)
	var v *float64
	if err := conn.QueryRow(ctx, "SELECT "+expr).Scan(&v); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// edgeValues are finite doubles at the edges of the guards of Arith:
// where products, quotients and sums overflow (and at the ties that
// round to inf or to the largest double), underflow to zero (and at the
// ties that round to 0 or to the least subnormal), and around them.
var edgeValues = []float64{0, math.Copysign(0, -1), 1, -1, 2, 0.5, -0.75, 1.5, 2.5, 0.1, 1e10, 1e-10,
	math.MaxFloat64, -math.MaxFloat64, 1e308, -1e308, 1e300, 1e200, -1e160, 1e154, math.Ldexp(1, 1023), math.Ldexp(1, 971), math.Ldexp(1, 970), math.Ldexp(1, 969),
	math.Ldexp(1, 512), math.Ldexp(1.9999999999999998, 511), math.Nextafter(2, 0), math.Nextafter(1, 2),
	5e-324, -5e-324, 1e-320, 1e-300, 1e-200, 1e-160, math.Ldexp(1, -537), math.Ldexp(1, -538), math.Ldexp(3, -539), math.Ldexp(1.5, -600), math.Ldexp(1, -1022), 0.75,
	// Products that round to 2^-1075 (p in Arith's guard) from above and
	// from below, which round to the least subnormal and to 0.
	math.Nextafter(math.Ldexp(1, -537), 1), math.Ldexp(math.Nextafter(1, 0), -538), math.Ldexp(1-0x1p-52, -538)}

// Arithmetic that overflows or underflows is DuckDB's (IEEE 754's, as
// Go's) on every pair of edge values, bit for bit: ±inf, signed zeros and
// subnormals where PostgreSQL's own operators raise an error, with the
// operands copied in place or bound in a sub-select.
func TestArithAsDuckDB(t *testing.T) {
	srv := startServer(t)
	srv.exec(t, `CREATE TABLE e (x double precision)`)
	srv.exec(t, `INSERT INTO e SELECT unnest(CAST($1 AS double precision[]))`, edgeValues)
	srv.exec(t, `CREATE TABLE p AS SELECT e1.x AS a, e2.x AS b FROM e AS e1 CROSS JOIN e AS e2`)
	d := sqlplan.PostgreSQL
	ops := map[string]func(a, b float64) float64{
		"+": func(a, b float64) float64 { return a + b },
		"-": func(a, b float64) float64 { return a - b },
		"*": func(a, b float64) float64 { return a * b },
		"/": func(a, b float64) float64 { return a / b },
	}
	for op, f := range ops {
		for _, e := range []string{d.Arith(op, "a", "b"), d.Arith(op, pad("a"), "b")} {
			rows := queryRows(t, srv, "SELECT a, b, CAST("+e+" AS double precision) FROM p")
			if len(rows) != len(edgeValues)*len(edgeValues) {
				t.Fatalf("%s: %d rows", op, len(rows))
			}
			for _, r := range rows {
				a, b, got := r[0], r[1], r[2]
				if want := f(a, b); !same(got, want) || math.Signbit(got) != math.Signbit(want) && !math.IsNaN(want) {
					t.Errorf("%g %s %g: got %g, want %g", a, op, b, got, want)
				}
			}
		}
	}
}

// queryRows runs a statement of double columns as the superuser; NaN for
// NULL.
func queryRows(t *testing.T, srv *server, stmt string) [][]float64 {
	t.Helper()
	ctx := context.Background()
	conn := superConn(t, srv)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, stmt)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer rows.Close()
	var out [][]float64
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var row []float64
		for _, v := range vals {
			f, ok := v.(float64)
			if !ok {
				f = math.NaN()
			}
			row = append(row, f)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// exp and the conversion of texts give DuckDB's values at the edges of
// the doubles' range (the statements of both dialects run in both
// engines): exp is inf beyond expMax and 0 below expMin where
// PostgreSQL's raises an error, and a text beyond the range is ±inf or a
// signed zero.
func TestExpAndCastAsDuckDB(t *testing.T) {
	srv := startServer(t)
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	pg, dk := sqlplan.PostgreSQL, sqlplan.DuckDB
	type pair struct{ what, pg, duck string }
	var cases []pair
	for _, x := range []float64{709.782712893384, math.Nextafter(709.782712893384, 710), 709.5, 710, 1000, -720, -740.5,
		-745.1332191019411, math.Nextafter(-745.1332191019411, -746), -746, -1e300, 1e300, math.NaN(), math.Inf(1), math.Inf(-1)} {
		lit := "CAST('" + strconv.FormatFloat(x, 'g', -1, 64) + "' AS %s)"
		for _, p := range []string{"%s", pad("%s")} {
			cases = append(cases, pair{fmt.Sprintf("exp(%g)", x),
				pg.Func("exp", []string{fmt.Sprintf(p, fmt.Sprintf(lit, "double precision"))}),
				dk.Func("exp", []string{fmt.Sprintf(p, fmt.Sprintf(lit, "DOUBLE"))})})
		}
	}
	for _, s := range []string{"1e400", "-1e400", "1e0400", "1e-400", "-1e-400", "1e-320", "-0", "0.0e-999", "1e999", "-1e-999",
		"1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623158079372897140530341e308", "1.7976931348623158079372897140530342e308", "1.7976931348623159e308",
		"2.4703282292062327e-324", "2.4703282292062328e-324", "2.470328229206232720882843964341106e-324", "2.470328229206232720882843964341107e-324", "4.9406564584124654e-324", " +.5e3 ", "12e"} {
		cases = append(cases, pair{fmt.Sprintf("%q", s), pg.ToNumber(pg.Str(s), true, false), dk.ToNumber(dk.Str(s), true, false)})
	}
	for _, c := range cases {
		g := queryText(t, srv, c.pg)
		var w sql.NullFloat64
		if err := duck.QueryRow("SELECT " + c.duck).Scan(&w); err != nil {
			t.Fatalf("%s in DuckDB: %v", c.what, err)
		}
		switch {
		case g == nil || !w.Valid:
			if g != nil || w.Valid {
				t.Errorf("%s: PostgreSQL's %v, DuckDB's %v", c.what, g, w)
			}
		case !same(*g, w.Float64) || math.Signbit(*g) != math.Signbit(w.Float64):
			t.Errorf("%s: PostgreSQL's %g, DuckDB's %g", c.what, *g, w.Float64)
		}
	}
}

// At bounds that are grid ties, PostgreSQL's q of every value is the
// grid's (half to even, as DuckDB's: TestDuckDBGridTies in dsl/snapshot),
// and its range is exactly [Lo, Hi], also where the step is above 1 and
// the value is flushed.
func TestGridTies(t *testing.T) {
	srv := startServer(t)
	d := sqlplan.PostgreSQL
	for _, tc := range gridtest.Ties() {
		a, g := tc.Agg, tc.Grid
		e := d.Quantize(d.Clamp("x", d.Num(a.Lo), d.Num(a.Hi)), g)
		got := queryFloats(t, srv, append(tc.Values, math.NaN()), []string{e})
		for i, v := range tc.Values {
			if q := got[i][0]; q != float64(tc.Want(v)) || q < float64(g.Lo) || q > float64(g.Hi) {
				t.Errorf("[%v, %v] %s: %v quantized to %v, want %d in [%d, %d]", a.Lo, a.Hi, a.Kind, v, q, tc.Want(v), g.Lo, g.Hi)
			}
		}
		if got[0][0] != float64(g.Lo) || got[1][0] != float64(g.Hi) {
			t.Errorf("[%v, %v] %s: the bounds quantized to %v, %v, want [%d, %d]", a.Lo, a.Hi, a.Kind, got[0][0], got[1][0], g.Lo, g.Hi)
		}
		if q := got[len(tc.Values)][0]; q != float64(g.Hi) {
			t.Errorf("[%v, %v] %s: NaN quantized to %v, want Hi = %d", a.Lo, a.Hi, a.Kind, q, g.Hi)
		}
	}
}
