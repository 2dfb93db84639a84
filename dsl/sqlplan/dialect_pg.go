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
// (DuckDB: ±inf, 0 or NULL), or DuckDB's value where it is exact to
// write (x/0, NaN and ±inf operands and texts). A guard copies a short
// operand into each place that reads it and binds a long one once in a
// sub-select (let), so that nested expressions are not copied. Its
// rounding is half away from zero as DuckDB's (PostgreSQL's round of a
// double rounds half to even).
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

// inlineMax is the longest operand a guard copies into each place that
// reads it; a longer one is bound once in a scalar sub-select. PostgreSQL
// runs such a sub-select as a sub-plan, once per row and value (at 10⁶
// rows the grouped statement of BenchmarkScale took 13 times its plain
// aggregate), and pulls the binding subquery up into it anyway: copying
// the common operands (a column, its cast, a clamp, a short guard) costs
// a few cheap operations per copy instead. Only a nested expression,
// whose copies would multiply with its depth, pays for the sub-plan, so
// the statement's text stays linear in the query's.
const inlineMax = 400

// let is body over the operands exprs, named names[i] in the body when
// bound: each operand of at most inlineMax bytes is copied, parenthesised,
// into body's every use; the longer ones are bound once per row in a
// scalar sub-select of no table.
func let(body func(v ...string) string, names []string, exprs ...string) string {
	args := make([]string, len(exprs))
	var cols []string
	for i, e := range exprs {
		if len(e) <= inlineMax {
			args[i] = "(" + e + ")"
			continue
		}
		args[i] = names[i]
		cols = append(cols, e+" AS "+names[i])
	}
	if len(cols) == 0 {
		return body(args...)
	}
	return "(SELECT " + body(args...) + " FROM (SELECT " + strings.Join(cols, ", ") + ") AS __pn_b)"
}

// roundHalf is ½ − 2⁻⁵⁴, the largest double below ½.
const roundHalf = 0.49999999999999994

// roundAway is v rounded half away from zero, exact for every double as
// DuckDB's round: |v| + roundHalf rounds up to the next integer exactly
// when |v|'s fraction is at least ½ (at |v| = ½ − 2⁻⁵⁴, where |v| + ½
// would round up, the sum is 1 − 2⁻⁵³, exact; at and beyond 2⁵², where
// every double is an integer, it rounds back to |v|). It reads v twice
// (the form with trunc, four times).
func roundAway(v string) string {
	return "(sign(" + v + ") * floor(abs(" + v + ") + " + PostgreSQL.Num(roundHalf) + "))"
}

// numberRE is what a string must look like to be converted to a number:
// an optional sign, digits with an optional point, and an exponent of at
// most three digits, at most 40 characters in all; a longer text or one
// whose value is beyond a double's range is NULL, not an error.
const numberRE = `'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})?\s*$'`

// nanRE and infRE match DuckDB's texts of NaN and ±inf (case-insensitive).
const (
	nanRE = `'^\s*[-+]?nan\s*$'`
	infRE = `'^\s*[-+]?inf(inity)?\s*$'`
)

func (d postgres) ToNumber(x string, fromString, integer bool) string {
	if fromString {
		// The exponent's range is checked on the value's log: a text of
		// at most 40 characters matching numberRE is a decimal whose
		// float8 conversion can only fail by overflow or underflow.
		// CASE evaluates its conditions in order (AND does not promise
		// to), so the casts see only texts that passed the pattern. The
		// operand is typed text: PostgreSQL converts a cast of a bare
		// literal ('abc') when it parses the statement, before any CASE
		// could skip it, while a cast of a text is folded only where
		// the CASE reaches it.
		x = let(func(v ...string) string {
			s := v[0]
			// DuckDB reads NaN and the infinities in any case, signed,
			// with blanks around; PostgreSQL's cast would refuse some
			// of its spellings ("+nan", "-nan"), so they are matched.
			nonFinite := "CASE WHEN " + s + " ~* " + nanRE + " THEN CAST('NaN' AS double precision) WHEN " + s + " ~* " + infRE + " THEN CAST(CASE WHEN " + s + " ~ '-' THEN '-Infinity' ELSE 'Infinity' END AS double precision) END"
			return "CASE WHEN NOT (length(" + s + ") <= 40 AND " + s + " ~ " + numberRE + ") THEN " + nonFinite + " WHEN CAST(" + s + " AS numeric) = 0 THEN CAST(0 AS double precision) WHEN abs(CAST(" + s + " AS numeric)) BETWEEN CAST('1e-300' AS numeric) AND CAST('1e300' AS numeric) THEN CAST(" + s + " AS double precision) END"
		}, []string{"s"}, "CAST("+x+" AS text)")
	}
	if integer {
		x = let(func(v ...string) string { return roundAway(v[0]) }, []string{"v"}, x)
	}
	return x
}

// ToText writes PostgreSQL's shortest round-trip text of the double
// (DuckDB writes 1 as "1.0", PostgreSQL as "1").
func (postgres) ToText(x string) string { return "CAST(" + x + " AS text)" }

// Ln guards ln, which raises an error for x ≤ 0.
func (postgres) Ln(x string) string {
	return let(func(v ...string) string { return "CASE WHEN " + v[0] + " > 0 THEN ln(" + v[0] + ") END" }, []string{"v"}, x)
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
// in PostgreSQL) when 1/Step is below 1. The clamp to the grid's range is on
// the double, whose bounds are exact integers (below 2^GridBits), so the
// cast to bigint cannot fail; it is the clamp of the integer DuckDB's
// statement takes.
func (d postgres) Quantize(x string, g Grid) string {
	return let(func(v ...string) string {
		c := v[0]
		if g.Centre != 0 {
			c = "(" + v[0] + " - " + d.Num(g.Centre) + ")"
		}
		r := "least(greatest(" + roundAway(c+" * "+d.Num(1/g.Step)) + ", " + d.Num(float64(g.Lo)) + "), " + d.Num(float64(g.Hi)) + ")"
		if g.Step <= 1 {
			// |c|·(1/Step) ≥ |c|: no underflow, and no copy of c for
			// the flush.
			return "CASE WHEN " + v[0] + " IS NULL THEN NULL ELSE CAST(" + r + " AS bigint) END"
		}
		return "CASE WHEN " + v[0] + " IS NULL THEN NULL WHEN abs(" + c + ") < " + d.Num(g.Step/4) + " THEN CAST(0 AS bigint) ELSE CAST(" + r + " AS bigint) END"
	}, []string{"v"}, x)
}

// Square is exact in numeric (PostgreSQL has no 128-bit integer; its sum
// of numeric is exact).
func (postgres) Square(x string) string {
	return "(CAST(" + x + " AS numeric) * CAST(" + x + " AS numeric))"
}

// Bin as DuckDB's ceil((x − Lo)/Step), except that a difference d in
// (0, Step) is bin 1 without the division, which could underflow.
func (d postgres) Bin(x string, g QuantileGrid) string {
	return let(func(v ...string) string {
		diff := "(" + v[0] + " - " + d.Num(g.Lo) + ")"
		return "CASE WHEN " + v[0] + " IS NULL THEN NULL WHEN " + diff + " <= 0 THEN CAST(0 AS bigint) WHEN " + diff + " < " + d.Num(g.Step) +
			" THEN CAST(1 AS bigint) ELSE least(CAST(ceil(" + diff + " / " + d.Num(g.Step) + ") AS bigint), CAST(" + strconv.Itoa(g.Bins) + " AS bigint)) END"
	}, []string{"v"}, x)
}

// Histogram has no aggregate of its own in PostgreSQL: the group's bins,
// collected by array_agg (an aggregate of the outer query inside the
// sub-select), are counted by a GROUP BY in a sub-select, which returns
// one bigint array, the sorted bins followed by their counts (NULL for a
// group without values). Only the pairs leave the engine.
func (postgres) Histogram(x string) string {
	return "(SELECT array_agg(b ORDER BY b) || array_agg(c ORDER BY b) FROM (SELECT b, count(*) AS c FROM unnest(array_agg(" + x + ")) AS __pn_u(b) WHERE b IS NOT NULL GROUP BY b) AS __pn_h)"
}

// ConstHistogram is Histogram for a bin that reads no column (a quantile
// of a constant): array_agg of it would be an aggregate of the innermost
// sub-select, which PostgreSQL refuses in a FROM clause. The group's rows
// all fall in that one bin, or, for a NULL bin, in none.
func (postgres) ConstHistogram(bin string) string {
	return "(CASE WHEN (" + bin + ") IS NULL OR count(*) = 0 THEN NULL ELSE ARRAY[CAST((" + bin + ") AS bigint), count(*)] END)"
}

func (postgres) Float(x string) string { return "CAST(" + x + " AS double precision)" }

// The guards of Arith: an operation whose result is finite and, unless
// an operand is 0, non-zero never raises an error. |l·r| and |l/r| are
// bounded on ln|l| ± ln|r| in [-740, 709], inside the doubles' range
// (e^709 < 1.8e308, e^-740 > 4.9e-324) with a margin for ln's rounding;
// a sum cannot overflow when both operands are below 2^1022. A finite
// result beyond them is NULL (DuckDB's: ±inf, 0 or a subnormal); NaN and
// ±inf operands, and x/0, give DuckDB's values.
const (
	lnMin = "-740"
	lnMax = "709"
	half  = "CAST(4.49423283715579e307 AS double precision)" // 2^1022 rounded down
)

func (postgres) Arith(op, l, r string) string {
	return let(func(v ...string) string {
		l, r := v[0], v[1]
		// A NaN or infinite operand raises no error in PostgreSQL's
		// double arithmetic, which then follows IEEE 754 as DuckDB's
		// (except x/0, below); the guards are for finite operands.
		// A product or quotient with a zero operand cannot overflow or
		// underflow, and keeps IEEE's signed zero.
		nonFinite := "NOT (abs(" + l + ") < 'Infinity' AND abs(" + r + ") < 'Infinity') THEN " + l + " " + op + " " + r
		switch op {
		case "+", "-":
			// Operands of opposite signs (+) or of the same sign (-)
			// cannot overflow either.
			same := "sign(" + l + ") * sign(" + r + ") <= 0"
			if op == "-" {
				same = "sign(" + l + ") * sign(" + r + ") >= 0"
			}
			return "CASE WHEN " + nonFinite + " WHEN abs(" + l + ") < " + half + " AND abs(" + r + ") < " + half + " OR " + same + " THEN " + l + " " + op + " " + r + " END"
		case "*":
			return "CASE WHEN " + nonFinite + " WHEN " + l + " = 0 OR " + r + " = 0 THEN " + l + " * " + r + " WHEN ln(abs(" + l + ")) + ln(abs(" + r + ")) BETWEEN " + lnMin + " AND " + lnMax + " THEN " + l + " * " + r + " END"
		}
		// "/": x/0 is DuckDB's (IEEE 754's) ±inf, signed by x and by
		// the zero (atan2(−0, −1) = −π, atan2(0, −1) = π), or NaN for
		// 0/0 and NaN/0; PostgreSQL raises an error for it.
		zero := "CAST(CASE WHEN " + l + " = 0 OR " + l + " = 'NaN' THEN 'NaN' WHEN (" + l + " > 0) = (atan2(" + r + ", -1) > 0) THEN 'Infinity' WHEN " + l + " IS NOT NULL THEN '-Infinity' END AS double precision)"
		return "CASE WHEN " + r + " = 0 THEN " + zero + " WHEN " + nonFinite + " WHEN " + l + " = 0 THEN " + l + " / " + r + " WHEN ln(abs(" + l + ")) - ln(abs(" + r + ")) BETWEEN " + lnMin + " AND " + lnMax + " THEN " + l + " / " + r + " END"
	}, []string{"l", "r"}, l, r)
}

// Func guards exp (an error beyond the doubles' range: NULL above 709, 0
// below -740, where DuckDB's is inf and 0) and writes round(x, digits),
// which PostgreSQL has only for numeric, as a division of round(x·10^k)
// when that product is within range (else x, already an integer there).
func (d postgres) Func(name string, args []string) string {
	switch name {
	case "exp":
		return let(func(v ...string) string {
			return "CASE WHEN " + v[0] + " BETWEEN " + lnMin + " AND " + lnMax + " THEN exp(" + v[0] + ") WHEN " + v[0] + " < " + lnMin + " THEN CAST(0 AS double precision) END"
		}, []string{"v"}, args[0])
	case "round":
		if len(args) == 1 {
			return let(func(v ...string) string { return roundAway(v[0]) }, []string{"v"}, args[0])
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
			return let(func(v ...string) string {
				return "CASE WHEN abs(" + v[0] + ") < " + d.Num(1e300/pf) + " THEN " + roundAway(v[0]+" * "+p) + " / " + p + " ELSE " + v[0] + " END"
			}, []string{"v"}, args[0])
		}
		// |v| < p/2 rounds to 0 (v/p could underflow); otherwise
		// v/p ≥ 0.5, and the product of its integer and p stays finite
		// below 1e300.
		return let(func(v ...string) string {
			return "CASE WHEN abs(" + v[0] + ") < " + d.Num(pf/2) + " THEN CAST(0 AS double precision) WHEN abs(" + v[0] + ") < " + d.Num(1e300) + " THEN " + roundAway(v[0]+" / "+p) + " * " + p + " ELSE " + v[0] + " END"
		}, []string{"v"}, args[0])
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

// LayerFence keeps a layer of the moments statement (PrintMoments) from
// being pulled up into the next without OFFSET 0, under which PostgreSQL
// runs the whole pass in one process: a subquery whose output holds a
// volatile function stays a subquery, and clock_timestamp is volatile and
// parallel-safe, so the aggregate over the layers runs in the parallel
// workers as PostgreSQL's own (Analyze Gauss at 10⁶ rows: 3.2 s → 1.9 s).
func (postgres) LayerFence() string { return "clock_timestamp()" }

// InStrings is an IN list, which PostgreSQL evaluates as a hashed array
// comparison, inside a CASE that keeps a NULL x NULL (as IN does). The
// CASE is for the planner: it estimates an IN list over an expression
// (such as a live table's domain-checked key, release.InDomain) to keep
// 0.5% of the rows per literal, so the keys' domain conditions made it
// expect a few hundred of 10⁶ rows and sort them all on disk for a
// grouped aggregate instead of hashing them; a CASE it estimates at one
// half.
func (postgres) InStrings(x string, lits []string) string {
	return let(func(v ...string) string {
		return "CASE WHEN " + v[0] + " IS NULL THEN NULL ELSE " + v[0] + " IN (" + strings.Join(lits, ", ") + ") END"
	}, []string{"v"}, x)
}
