package sqlplan

import (
	"math"
	"strconv"
	"strings"
)

// PostgreSQL is the Dialect of PostgreSQL (a live table, dsl/pgsource).
//
// PostgreSQL raises an error where DuckDB follows IEEE 754: a DOUBLE
// operation that overflows or underflows, x/0, exp out of range, ln of
// x ≤ 0, a cast of a string that is not a number. A statement that fails
// on some rows would make the outcome of a charged call depend on the
// data, so every such operation is guarded and yields NULL instead
// (DuckDB: ±inf, 0 or NULL), and the guards bind their operands once in
// a sub-select so that nested expressions are not copied. Its rounding
// is half away from zero as DuckDB's (PostgreSQL's round of a double
// rounds half to even).
var PostgreSQL Dialect = postgres{}

type postgres struct{}

func (postgres) Ident(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Str doubles embedded quotes: with standard_conforming_strings (on since
// PostgreSQL 9.1, and set by dsl/pgsource for its sessions) a plain
// literal has no backslash escapes.
func (postgres) Str(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// Num writes the shortest decimal that reads back as x (PostgreSQL's
// float8 input is correctly rounded) as a typed double precision literal.
func (postgres) Num(x float64) string {
	return "CAST('" + strconv.FormatFloat(x, 'g', -1, 64) + "' AS double precision)"
}

// bind evaluates body with the names bound to the expressions exprs, each
// computed once per row: a scalar sub-select of no table.
func bind(body string, names, exprs []string) string {
	cols := make([]string, len(names))
	for i := range names {
		cols[i] = exprs[i] + " AS " + names[i]
	}
	return "(SELECT " + body + " FROM (SELECT " + strings.Join(cols, ", ") + ") AS __pn_b)"
}

// roundAway is v rounded half away from zero, exact for every double:
// v − trunc(v) is exact.
func roundAway(v string) string {
	return "(trunc(" + v + ") + CASE WHEN abs(" + v + " - trunc(" + v + ")) >= 0.5 THEN sign(" + v + ") ELSE 0 END)"
}

// numberRE is what a string must look like to be converted to a number:
// an optional sign, digits with an optional point, and an exponent of at
// most three digits, at most 40 characters in all; a longer text or one
// whose value is beyond a double's range is NULL, not an error.
const numberRE = `'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})?\s*$'`

func (d postgres) ToNumber(x string, fromString, integer bool) string {
	if fromString {
		// The exponent's range is checked on the value's log: a text of
		// at most 40 characters matching numberRE is a decimal whose
		// float8 conversion can only fail by overflow or underflow.
		// CASE evaluates its conditions in order (AND does not promise
		// to), so the casts see only texts that passed the pattern.
		x = bind("CASE WHEN NOT (length(s) <= 40 AND s ~ "+numberRE+") THEN NULL WHEN CAST(s AS numeric) = 0 THEN CAST(0 AS double precision) WHEN abs(CAST(s AS numeric)) BETWEEN CAST('1e-300' AS numeric) AND CAST('1e300' AS numeric) THEN CAST(s AS double precision) END",
			[]string{"s"}, []string{x})
	}
	if integer {
		x = bind(roundAway("v"), []string{"v"}, []string{x})
	}
	return x
}

// ToText writes PostgreSQL's shortest round-trip text of the double
// (DuckDB writes 1 as "1.0", PostgreSQL as "1").
func (postgres) ToText(x string) string { return "CAST(" + x + " AS text)" }

// Ln guards ln, which raises an error for x ≤ 0.
func (postgres) Ln(x string) string {
	return bind("CASE WHEN v > 0 THEN ln(v) END", []string{"v"}, []string{x})
}

// DatePart returns a double, as DuckDB's date_part returns a number.
func (d postgres) DatePart(part, x string) string {
	return "CAST(date_part(" + d.Str(part) + ", " + x + ") AS double precision)"
}

// Clamp as DuckDB's: PostgreSQL also orders NaN above every number, so a
// NaN becomes hi, and its GREATEST and LEAST skip NULLs.
func (postgres) Clamp(x, lo, hi string) string {
	return "CASE WHEN " + x + " IS NOT NULL THEN least(greatest(" + x + ", " + lo + "), " + hi + ") END"
}

// Quantize as DuckDB's, with two differences: the rounding is half away
// from zero written out (roundAway), and a centred value below a quarter
// step is 0 without the multiplication, which could underflow (an error
// in PostgreSQL) when 1/Step is small. The cast to bigint cannot fail: x
// is clamped, so the product lies within the grid's range.
func (d postgres) Quantize(x string, g Grid) string {
	v := "v"
	if g.Centre != 0 {
		v = "(v - " + d.Num(g.Centre) + ")"
	}
	w := "CASE WHEN abs(" + v + ") < " + d.Num(g.Step/4) + " THEN CAST(0 AS double precision) ELSE " + v + " * " + d.Num(1/g.Step) + " END"
	q := "CAST(" + roundAway("w") + " AS bigint)"
	lo := "CAST(" + strconv.FormatInt(g.Lo, 10) + " AS bigint)"
	hi := "CAST(" + strconv.FormatInt(g.Hi, 10) + " AS bigint)"
	inner := bind("CASE WHEN v IS NOT NULL THEN "+w+" END", []string{"v"}, []string{x})
	return bind("CASE WHEN w IS NOT NULL THEN least(greatest("+q+", "+lo+"), "+hi+") END", []string{"w"}, []string{inner})
}

// Square is exact in numeric (PostgreSQL has no 128-bit integer; its sum
// of numeric is exact).
func (postgres) Square(x string) string {
	return "(CAST(" + x + " AS numeric) * CAST(" + x + " AS numeric))"
}

// Bin as DuckDB's ceil((x − Lo)/Step), except that a difference d in
// (0, Step) is bin 1 without the division, which could underflow.
func (d postgres) Bin(x string, g QuantileGrid) string {
	b := "CASE WHEN v - " + d.Num(g.Lo) + " <= 0 THEN CAST(0 AS bigint) WHEN v - " + d.Num(g.Lo) + " < " + d.Num(g.Step) +
		" THEN CAST(1 AS bigint) ELSE least(CAST(ceil((v - " + d.Num(g.Lo) + ") / " + d.Num(g.Step) + ") AS bigint), CAST(" + strconv.Itoa(g.Bins) + " AS bigint)) END"
	return bind("CASE WHEN v IS NOT NULL THEN "+b+" END", []string{"v"}, []string{x})
}

// Histogram has no aggregate of its own in PostgreSQL: the group's bins,
// collected by array_agg (an aggregate of the outer query inside the
// sub-select), are counted by a GROUP BY in a sub-select, which returns
// one bigint array, the sorted bins followed by their counts (NULL for a
// group without values). Only the pairs leave the engine.
func (postgres) Histogram(x string) string {
	return "(SELECT array_agg(b ORDER BY b) || array_agg(c ORDER BY b) FROM (SELECT b, count(*) AS c FROM unnest(array_agg(" + x + ")) AS __pn_u(b) WHERE b IS NOT NULL GROUP BY b) AS __pn_h)"
}

func (postgres) Float(x string) string { return "CAST(" + x + " AS double precision)" }

// The guards of Arith: an operation whose result is finite and, unless
// an operand is 0, non-zero never raises an error. |l·r| and |l/r| are
// bounded on ln|l| ± ln|r| in [-740, 709], inside the doubles' range
// (e^709 < 1.8e308, e^-740 > 4.9e-324) with a margin for ln's rounding;
// a sum cannot overflow when both operands are below 2^1022. NaN and ±inf
// operands fail the guards (their ln is not within the range).
const (
	lnMin = "-740"
	lnMax = "709"
	half  = "CAST(4.49423283715579e307 AS double precision)" // 2^1022 rounded down
)

func (postgres) Arith(op, l, r string) string {
	var body string
	switch op {
	case "+", "-":
		// Operands of opposite signs (+) or of the same sign (-) cannot
		// overflow either.
		same := "sign(l) * sign(r) <= 0"
		if op == "-" {
			same = "sign(l) * sign(r) >= 0"
		}
		body = "CASE WHEN abs(l) < " + half + " AND abs(r) < " + half + " OR " + same + " AND abs(l) < 'Infinity' AND abs(r) < 'Infinity' THEN l " + op + " r END"
	case "*":
		body = "CASE WHEN l = 0 AND abs(r) < 'Infinity' OR r = 0 AND abs(l) < 'Infinity' THEN CAST(0 AS double precision) WHEN l <> 0 AND r <> 0 AND ln(abs(l)) + ln(abs(r)) BETWEEN " + lnMin + " AND " + lnMax + " THEN l * r END"
	default: // "/"
		body = "CASE WHEN r <> 0 AND l = 0 AND abs(r) < 'Infinity' THEN CAST(0 AS double precision) WHEN l <> 0 AND r <> 0 AND ln(abs(l)) - ln(abs(r)) BETWEEN " + lnMin + " AND " + lnMax + " THEN l / r END"
	}
	return bind(body, []string{"l", "r"}, []string{l, r})
}

// Func guards exp (an error beyond the doubles' range: NULL above 709, 0
// below -740, where DuckDB's is inf and 0) and writes round(x, digits),
// which PostgreSQL has only for numeric, as a division of round(x·10^k)
// when that product is within range (else x, already an integer there).
func (d postgres) Func(name string, args []string) string {
	switch name {
	case "exp":
		return bind("CASE WHEN v BETWEEN "+lnMin+" AND "+lnMax+" THEN exp(v) WHEN v < "+lnMin+" THEN CAST(0 AS double precision) END", []string{"v"}, args)
	case "round":
		if len(args) == 1 {
			return bind(roundAway("v"), []string{"v"}, args)
		}
		k, _ := strconv.Atoi(args[1])
		if k > 300 || k < -300 {
			return args[0] // no double has digits there to round
		}
		pf := math.Pow(10, math.Abs(float64(k)))
		p := d.Num(pf)
		if k >= 0 {
			// v·p ≥ |v| cannot underflow, and is below 1e300 when
			// |v| < 1e300/p; a larger |v| has no digits left at k
			// places (as exactly as a double says).
			return bind("CASE WHEN abs(v) < "+d.Num(1e300/pf)+" THEN "+roundAway("v * "+p)+" / "+p+" ELSE v END", []string{"v"}, args[:1])
		}
		// |v| < p/2 rounds to 0 (v/p could underflow); otherwise
		// v/p ≥ 0.5, and the product of its integer and p stays finite
		// below 1e300.
		return bind("CASE WHEN abs(v) < "+d.Num(pf/2)+" THEN CAST(0 AS double precision) WHEN abs(v) < "+d.Num(1e300)+" THEN "+roundAway("v / "+p)+" * "+p+" ELSE v END", []string{"v"}, args[:1])
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

// InStrings is a plain IN list, which PostgreSQL evaluates as a hashed
// array comparison.
func (postgres) InStrings(x string, lits []string) string {
	return "(" + x + " IN (" + strings.Join(lits, ", ") + "))"
}
