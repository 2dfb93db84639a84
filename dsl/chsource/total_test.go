package chsource_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/chtest"
	"github.com/privnotes/privnotes/internal/gridtest"
)

// Every operation of the ClickHouse dialect is total: over extreme,
// non-finite and malformed values the dialect's expressions give a value
// or NULL and the statement runs, including the exact Decimal sums of
// the grid's integers and their squares over the most extreme values.
// (An error after a charge would be an outcome that depends on the data.)
func TestDialectIsTotal(t *testing.T) {
	srv := chtest.Start(t)
	srv.Exec(t, "CREATE DATABASE db", "")
	srv.Exec(t, "CREATE TABLE db.v (x Nullable(Float64)) ENGINE = MergeTree ORDER BY tuple()", "")
	vals := []string{"0", "-0", "1", "-1", "2.5", "-2.5", "0.1", "1e308", "-1e308", "1.7976931348623157e308",
		"1e-300", "1e300", "1e-160", "1e160", "709.5", "-745.5", "nan", "inf", "-inf", `\N`}
	srv.Exec(t, "INSERT INTO db.v FORMAT TabSeparated", strings.Join(vals, "\n")+"\n")
	srv.Exec(t, "CREATE TABLE db.s (t Nullable(String)) ENGINE = MergeTree ORDER BY tuple()", "")
	strs := []string{"1", " 2.5 ", "abc", "1e999", "1e-999", "1e308", "1e309", "", "NaN", "-0", "+.5e3",
		"0x10", "1e", strings.Repeat("9", 50), "12345678901234567890123456789012345678", `\N`}
	srv.Exec(t, "INSERT INTO db.s FORMAT TabSeparated", strings.Join(strs, "\n")+"\n")
	d := sqlplan.ClickHouse
	x, y := "a.x", "b.x"
	var exprs []string
	for _, op := range []string{"+", "-", "*", "/"} {
		exprs = append(exprs, d.Arith(op, x, y))
	}
	exprs = append(exprs, d.Func("exp", []string{x}), d.Func("round", []string{x}), d.Ln(x),
		d.ToNumber(x, false, true), d.ToText(x), d.Func("abs", []string{x}), d.Func("floor", []string{x}),
		d.Func("least", []string{x, y}), d.Func("greatest", []string{x, y, d.Num(1)}))
	for _, k := range []string{"-300", "-3", "0", "2", "20", "300"} {
		exprs = append(exprs, d.Func("round", []string{x, k}))
	}
	var sums []string
	for _, b := range [][2]float64{{0, 1}, {-1e300, 1e300}, {-1, 1}, {0, 1e-300}, {1e6, 1e6 + 1}} {
		c := d.Clamp(x, d.Num(b[0]), d.Num(b[1]))
		for _, kind := range []sqlplan.AggKind{sqlplan.Sum, sqlplan.Avg} {
			g, err := sqlplan.GridOf(sqlplan.Aggregate{Name: "a", Kind: kind, Lo: b[0], Hi: b[1]})
			if err != nil {
				continue // bounds the planner refuses
			}
			exprs = append(exprs, d.Quantize(c, g))
			sums = append(sums, "sum("+d.Quantize(c, g)+")", "sum("+d.Square(d.Quantize(c, g))+")")
		}
		for _, bins := range []int{1, 1000, 1 << 20} {
			step := (b[1] - b[0]) / float64(bins)
			if !(step > 0) || math.IsInf(step, 0) {
				continue
			}
			exprs = append(exprs, d.Bin(c, sqlplan.QuantileGrid{Lo: b[0], Step: step, Bins: bins}))
		}
	}
	for i, e := range exprs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			srv.Exec(t, "SELECT count("+e+") FROM db.v AS a CROSS JOIN db.v AS b", "")
		})
	}
	for i, s := range sums {
		t.Run(fmt.Sprint("sum", i), func(t *testing.T) { srv.Exec(t, "SELECT "+s+" FROM db.v AS a", "") })
	}
	for _, integer := range []bool{false, true} {
		srv.Exec(t, "SELECT count("+d.ToNumber("t", true, integer)+") FROM db.s", "")
	}
	srv.Exec(t, "SELECT "+d.Histogram(d.Bin(d.Clamp("x", d.Num(0), d.Num(1)), sqlplan.QuantileGrid{Lo: 0, Step: 0.25, Bins: 4}))+" FROM db.v", "")
}

// The operations whose ClickHouse spelling differs from DuckDB's give
// DuckDB's values: NULL and NaN in the clamp, least and greatest, the
// rounding half away from zero, a NULL in a string list, a subnormal
// literal, and a sum beyond Int64 (exact in Decimal).
func TestDialectValues(t *testing.T) {
	srv := chtest.Start(t)
	d := sqlplan.ClickHouse
	null := "CAST(NULL AS Nullable(Float64))"
	nullStr := "CAST(NULL AS Nullable(String))"
	g := sqlplan.Grid{Step: 1, Lo: -1 << 40, Hi: 1 << 40}
	cases := []struct{ expr, want string }{
		{d.Clamp("nan", d.Num(0), d.Num(1)), "1"},
		{d.Clamp(null, d.Num(0), d.Num(1)), `\N`},
		{d.Clamp(d.Num(-3), d.Num(0), d.Num(1)), "0"},
		{d.Func("least", []string{"nan", d.Num(2)}), "2"},
		{d.Func("least", []string{d.Num(2), "nan"}), "2"},
		{d.Func("greatest", []string{d.Num(2), "nan"}), "nan"},
		{d.Func("greatest", []string{null, d.Num(2)}), "2"},
		{d.Func("least", []string{d.Num(3), null, d.Num(2)}), "2"},
		{d.Func("round", []string{d.Num(2.5)}), "3"},
		{d.Func("round", []string{d.Num(-2.5)}), "-3"},
		{d.Func("round", []string{d.Num(0.49999999999999994)}), "0"},
		{d.Func("round", []string{d.Num(1.25), "1"}), "1.3"},
		{d.Func("round", []string{d.Num(1250), "-2"}), "1300"},
		{d.ToNumber(d.Num(-0.5), false, true), "-1"},
		{d.InStrings(nullStr, []string{"'a'"}), `\N`},
		{"NOT " + d.InStrings(nullStr, []string{"'a'"}), `\N`},
		{d.InStrings("'a'", []string{"'a'", "'b'"}), "1"},
		{d.Num(5e-324) + " = " + d.Num(0), "0"},
		{d.Num(5e-324) + " * " + d.Num(0x1p537) + " * " + d.Num(0x1p537) + " = " + d.Num(1), "1"},
		{d.Quantize(d.Num(1e300), g), "1099511627776"},
		{d.Quantize(d.Num(-2.5), g), "-2"}, // half to even, the grid's rounding
		{d.Quantize(d.Num(3.5), g), "4"},
		// NULL stays NULL through the clamp and the grid without guards
		// of their own; ±inf are clamped.
		{d.Quantize(null, g), `\N`},
		{d.Quantize(d.Clamp(null, d.Num(0), d.Num(1)), g), `\N`},
		{d.Clamp("inf", d.Num(0), d.Num(1)), "1"},
		{d.Clamp("-inf", d.Num(0), d.Num(1)), "0"},
		{d.Bin(d.Num(0.3), sqlplan.QuantileGrid{Lo: 0, Step: 0.25, Bins: 4}), "2"},
		{d.Bin(d.Num(1e-300), sqlplan.QuantileGrid{Lo: 0, Step: 0.25, Bins: 4}), "1"},
		{d.DatePart("dow", "toDate('2024-06-02')"), "0"}, // a Sunday
		{d.DatePart("doy", "toDate('2024-02-01')"), "32"},
	}
	for _, c := range cases {
		if got := srv.Query(t, "SELECT "+c.expr); got != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
	// Σ of 2^20 terms of 2^62 is 2^82, beyond Int64 and exact in Decimal.
	if got := srv.Query(t, "SELECT sum("+d.Quantize(d.Num(0x1p62), sqlplan.Grid{Step: 1, Lo: 0, Hi: 1 << 62})+") FROM numbers(1048576)"); got != "4835703278458516698824704" {
		t.Errorf("the sum of 2^20 terms 2^62 is %s", got)
	}
	if got := srv.Query(t, "SELECT sum("+d.Square(d.Quantize(d.Num(0x1p48), sqlplan.Grid{Step: 1, Lo: 0, Hi: 1 << 48}))+") FROM numbers(1024)"); got != "81129638414606681695789005144064" {
		t.Errorf("the sum of 2^10 squares 2^96 is %s", got)
	}
}

// At bounds that are grid ties, ClickHouse's q of every value (computed
// per row, not folded as a constant) is the grid's (half to even, as
// DuckDB's: TestDuckDBGridTies in dsl/snapshot), and its range is exactly
// [Lo, Hi].
func TestGridTies(t *testing.T) {
	srv := chtest.Start(t)
	d := sqlplan.ClickHouse
	for _, tc := range gridtest.Ties() {
		a, g := tc.Agg, tc.Grid
		var lits []string
		for _, v := range tc.Values {
			lits = append(lits, d.Num(v))
		}
		out := srv.Query(t, "SELECT "+d.Quantize(d.Clamp("x", d.Num(a.Lo), d.Num(a.Hi)), g)+" FROM (SELECT arrayJoin(["+strings.Join(lits, ", ")+"]) AS x)")
		got := strings.Split(out, "\n")
		if len(got) != len(tc.Values) {
			t.Fatalf("[%v, %v] %s: %d results for %d values", a.Lo, a.Hi, a.Kind, len(got), len(tc.Values))
		}
		for i, v := range tc.Values {
			if want := strconv.FormatInt(tc.Want(v), 10); got[i] != want {
				t.Errorf("[%v, %v] %s: %v quantized to %s, want %s", a.Lo, a.Hi, a.Kind, v, got[i], want)
			}
		}
		if got[0] != strconv.FormatInt(g.Lo, 10) || got[1] != strconv.FormatInt(g.Hi, 10) {
			t.Errorf("[%v, %v] %s: the bounds quantized to %s, %s, want [%d, %d]", a.Lo, a.Hi, a.Kind, got[0], got[1], g.Lo, g.Hi)
		}
	}
}
