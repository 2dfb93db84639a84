package pgsource_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// Every operation of the PostgreSQL dialect is total: over extreme,
// non-finite and malformed values, where PostgreSQL's own operators raise
// (overflow, underflow, x/0, ln and exp out of range, bad casts), the
// dialect's expressions give a value or NULL and the statement runs. (An
// error after a charge would be an outcome that depends on the data.)
func TestDialectIsTotal(t *testing.T) {
	srv := startServer(t)
	srv.exec(t, `CREATE TABLE v (x double precision)`)
	srv.exec(t, `INSERT INTO v VALUES (0), ('-0'), (1), (-1), (2.5), (-2.5), (0.1), (1e308), (-1e308), (1.7976931348623157e308),
		(5e-324), (-5e-324), (1e-300), (1e300), (1e-160), (1e160), (709.5), (-745.5), ('NaN'), ('Infinity'), ('-Infinity'), (NULL)`)
	srv.exec(t, `CREATE TABLE s (t text)`)
	srv.exec(t, `INSERT INTO s VALUES ('1'), (' 2.5 '), ('abc'), ('1e999'), ('1e-999'), ('1e308'), ('1e309'), (''), ('NaN'), ('-0'), ('+.5e3'),
		('0x10'), ('1e'), (repeat('9', 50)), ('12345678901234567890123456789012345678'), (NULL)`)
	d := sqlplan.PostgreSQL
	x, y := "a.x", "b.x"
	var exprs []string
	for _, op := range []string{"+", "-", "*", "/"} {
		exprs = append(exprs, d.Arith(op, x, y))
		// With a literal operand, which PostgreSQL folds with the
		// guards' operations on it in every branch of their CASE.
		for _, c := range []float64{0, 5e-324, 1e-300, 0.5, 1e300, math.MaxFloat64} {
			exprs = append(exprs, d.Arith(op, x, d.Num(c)), d.Arith(op, d.Num(-c), x))
		}
	}
	exprs = append(exprs, d.Func("exp", []string{x}), d.Func("round", []string{x}), d.Ln(x),
		d.ToNumber(x, false, true), d.ToText(x), d.Func("abs", []string{x}), d.Func("floor", []string{x}))
	for _, k := range []string{"-300", "-3", "0", "2", "20", "300"} {
		exprs = append(exprs, d.Func("round", []string{x, k}))
	}
	for _, b := range [][2]float64{{0, 1}, {-1e300, 1e300}, {-1, 1}, {0, 1e-300}, {1e6, 1e6 + 1}} {
		c := d.Clamp(x, d.Num(b[0]), d.Num(b[1]))
		for _, kind := range []sqlplan.AggKind{sqlplan.Sum, sqlplan.Avg} {
			g, err := sqlplan.GridOf(sqlplan.Aggregate{Name: "a", Kind: kind, Lo: b[0], Hi: b[1]})
			if err != nil {
				continue // bounds the planner refuses
			}
			exprs = append(exprs, d.Quantize(c, g), d.Square(d.Quantize(c, g)))
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
			srv.exec(t, "SELECT count("+e+") FROM v AS a CROSS JOIN v AS b")
		})
	}
	for _, integer := range []bool{false, true} {
		srv.exec(t, "SELECT count("+d.ToNumber("t", true, integer)+") FROM s")
	}
	// The histogram of bins that are NULL, repeated or absent.
	srv.exec(t, "SELECT "+d.Histogram(d.Bin(d.Clamp("x", d.Num(0), d.Num(1)), sqlplan.QuantileGrid{Lo: 0, Step: 0.25, Bins: 4}))+" FROM v")
}
