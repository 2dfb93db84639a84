package sqlplan

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// PostgreSQL is the Dialect of PostgreSQL (a live table, dsl/pgsource).
//
// PostgreSQL raises an error where DuckDB follows IEEE 754: a DOUBLE
// operation that overflows or underflows to a zero, x/0, exp out of
// range, ln of x ≤ 0, a cast of a string that is not a number or is out
// of range. A statement that fails on some rows would make the outcome
// of a charged call depend on the data, so every such operation is
// guarded and yields DuckDB's value instead: ±inf, a signed zero, NaN
// (x/0, NaN and ±inf operands and texts), or NULL where DuckDB's is NULL
// (ln of x ≤ 0, a text that is not a number), so that a statement's
// values, and the releases computed from them, are the same in both
// engines. (A text longer than 40 characters is NULL, where DuckDB
// would read it.) A guard copies a short
// operand into each place that reads it and binds a long one once in a
// sub-select (let), so that nested expressions are not copied. The
// SQL function round, and a conversion to an integer, round half away
// from zero as DuckDB's, written out (PostgreSQL's round of a double
// rounds half to even); the grid's quantization rounds half to even in
// every engine (Grid), which PostgreSQL's cast to bigint does by itself.
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
// most three digits after any zeros (PostgreSQL's numeric takes no
// exponent beyond ±1000), at most 40 characters in all; a longer text is
// NULL (DuckDB would read it), one beyond a double's range ±inf or a zero
// as in DuckDB.
const numberRE = `'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?0*[0-9]{1,3})?\s*$'`

// nanRE and infRE match DuckDB's texts of NaN and ±inf (case-insensitive).
const (
	nanRE = `'^\s*[-+]?nan\s*$'`
	infRE = `'^\s*[-+]?inf(inity)?\s*$'`
)

// overflowText and underflowText are numeric literals of 40 significant
// digits around 2^1024 − 2^970 and 2^-1075: the first is the least such
// number at or above it, the second the greatest at or below it. A text
// of at most 40 characters (numberRE) has at most 40 significant digits,
// so its value is at least 2^1024 − 2^970, where the double is ±inf, or
// at most 2^-1075, where it is a zero (both ties round to even), exactly
// when it is at least overflowText or at most underflowText.
var overflowText, underflowText = func() (string, string) {
	one := big.NewInt(1)
	over := new(big.Int).Sub(new(big.Int).Lsh(one, 1024), new(big.Int).Lsh(one, 970)).String()
	head, _ := new(big.Int).SetString(over[:40], 10)
	head.Add(head, one) // the threshold has non-zero digits after its 40th
	// 2^-1075 = 5^1075 · 10^-1075.
	under := new(big.Int).Exp(big.NewInt(5), big.NewInt(1075), nil).String()
	return "CAST('" + head.String() + "e" + strconv.Itoa(len(over)-40) + "' AS numeric)",
		"CAST('" + under[:40] + "e" + strconv.Itoa(len(under)-40-1075) + "' AS numeric)"
}()

func (d postgres) ToNumber(x string, fromString, integer bool) string {
	if fromString {
		// A text of at most 40 characters matching numberRE is a
		// decimal whose float8 conversion can only fail by overflow or
		// underflow to a zero, decided on its exact numeric value. CASE evaluates its conditions in order (AND does not promise
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
			// A decimal rounds to ±inf from (2^1024 − 2^970) up and to a
			// zero up to 2^-1075 (both ties round to even), where
			// PostgreSQL's cast raises an error; the numeric compares
			// the text's exact value with them.
			signed := func(x string) string {
				return "CAST(CASE WHEN " + s + " ~ '^\\s*-' THEN '-" + x + "' ELSE '" + x + "' END AS double precision)"
			}
			n := "abs(CAST(" + s + " AS numeric))"
			return "CASE WHEN NOT (length(" + s + ") <= 40 AND " + s + " ~ " + numberRE + ") THEN " + nonFinite +
				" WHEN " + n + " >= " + overflowText + " THEN " + signed("Infinity") + " WHEN " + n + " <= " + underflowText + " THEN " + signed("0") +
				" ELSE CAST(" + s + " AS double precision) END"
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

// Quantize as DuckDB's: PostgreSQL's cast of a double to bigint rounds
// half to even (rint), the grid's rounding, and its subtraction,
// multiplication by a power of two and rint are correctly rounded, hence
// monotone, so duckDB.Quantize's argument holds here too: for x in the
// aggregate's bounds (Print clamps it; NULL stays NULL) the integer lies
// in [g.Lo, g.Hi], well inside bigint's range, and the cast cannot fail.
// The subtraction cannot overflow (|x − Centre| is at most the grid's
// Magnitude) and raises no underflow error. The one guard left is for the
// multiplication when 1/Step is below 1 (bounds beyond 2^GridBits): it
// could underflow to a zero, an error in PostgreSQL, so a centred value
// below a quarter step is 0 without it (the cast would round it to 0).
func (d postgres) Quantize(x string, g Grid) string {
	c := func(x string) string {
		if g.Centre != 0 {
			return "(" + x + " - " + d.Num(g.Centre) + ")"
		}
		return x
	}
	if g.Step <= 1 {
		// |c|·(1/Step) ≥ |c|: no underflow, and c is read once.
		return "CAST(" + c(x) + " * " + d.Num(1/g.Step) + " AS bigint)"
	}
	return let(func(v ...string) string {
		return "CASE WHEN abs(" + c(v[0]) + ") < " + d.Num(g.Step/4) + " THEN CAST(0 AS bigint) ELSE CAST(" + c(v[0]) + " * " + d.Num(1/g.Step) + " AS bigint) END"
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

// The guards of Arith give DuckDB's IEEE 754 result where PostgreSQL's
// double arithmetic raises an error: an overflow is ±inf, an underflow
// to zero is a signed zero (a subnormal result raises none). An
// operation whose operands are both finite and non-zero and whose
// ln|l| ± ln|r| lies in [-740, 709] is computed as is: its result is
// inside the doubles' range (e^709 < 1.8e308, e^-740 > 4.9e-324) with a
// margin for ln's rounding. Beyond it:
//
//   - above 710 (e^710 > 2^1024) the result overflows; between 709 and
//     710 it is computed halved, (l/2)·r or (l/2)/r, which is exact
//     (l is normal there) and cannot overflow: the rounding commutes with
//     the halving in the normal range, so the result overflows exactly
//     when the halved one reaches 2^1023 (the tie with (2^1024 − 2^970)/2
//     rounds to even, to 2^1023, as the full result's tie rounds to inf);
//     otherwise it is twice the halved one, exact;
//   - below -760 (e^-760 < 2^-1075) the result is a zero; between -760
//     and -740 the result is a zero exactly when |l·r| or |l/r| is at most
//     2^-1075 (the tie rounds to even, to 0), else it is computed as is
//     (a subnormal is no error). For a quotient that test is exact on
//     scaled operands, |l|·2^600 ≤ |r|·2^-475 (both scalings are exact in
//     the normal range there); for a product, p = (|l|·2^300)·(|r|·2^300)
//     is compared with 2^-475, and when p is that power of two, rounded, the
//     exact product's side of it is the sign of the product's rounding
//     error, computed exactly by Dekker's product (twoProductErr).
//
// A sum of finite operands can overflow only when both are at least
// 2^970 (below, |l| + |r| < (2^1024 − 2^971) + 2^970, the overflow
// threshold) and of one sign (+) or opposite signs (-); then it is
// computed halved as above. NaN and ±inf operands, and x/0, give
// DuckDB's values.
const (
	lnMin = "-740"
	lnMax = "709"
	half  = "CAST(4.49423283715579e307 AS double precision)" // 2^1022 rounded down
)

// Powers of two of the guards, as exact literals.
var (
	pow2p1023 = PostgreSQL.Num(math.Ldexp(1, 1023))
	pow2p970  = PostgreSQL.Num(math.Ldexp(1, 970))
	pow2p600  = PostgreSQL.Num(math.Ldexp(1, 600))
	pow2p300  = PostgreSQL.Num(math.Ldexp(1, 300))
	pow2p100  = PostgreSQL.Num(math.Ldexp(1, 100))
	pow2m100  = PostgreSQL.Num(math.Ldexp(1, -100))
	pow2m475  = PostgreSQL.Num(math.Ldexp(1, -475))
	pow2m1074 = PostgreSQL.Num(math.Ldexp(1, -1074))
	halfNum   = PostgreSQL.Num(0.5)
	twoNum    = PostgreSQL.Num(2)
	infNum    = "CAST('Infinity' AS double precision)"
	zeroNum   = "CAST(0 AS double precision)"
)

// twoProductErr is the exact rounding error a·b − fl(a·b) of the product
// of the doubles a and b (Dekker's product: each is split at 27 bits into
// halves whose pairwise products are exact), for a·b, its halves' products
// and their sum in the normal range; p is fl(a·b). The operands are bound
// in a sub-select whatever their length: the error is needed only for a
// product that rounds to a tie, and the sub-select, which runs only then,
// keeps their many copies out of the statement's text.
func twoProductErr(a, b, p string) string {
	split := func(x string) (hi, lo string) {
		c := "(" + x + " * " + PostgreSQL.Num(134217729) + ")"
		hi = "(" + c + " - (" + c + " - " + x + "))"
		return hi, "(" + x + " - " + hi + ")"
	}
	ah, al := split("a")
	bh, bl := split("b")
	return "(SELECT ((" + ah + " * " + bh + " - " + p + ") + " + ah + " * " + bl + " + " + al + " * " + bh + ") + " + al + " * " + bl + " FROM (SELECT " + a + " AS a, " + b + " AS b) AS __pn_d)"
}

// PostgreSQL folds a sub-expression of constants when it plans the
// statement, in every branch of a CASE whose condition is not itself
// constant: a guard's operation on one operand, which could be a literal
// (x * 1e300), must then raise no error for any value of it, not only
// for those of its branch. Its scalings and halvings therefore bound
// the operand first, to a range that holds every value of the branch.

// halve is x/2, exact, for |x| at least lo (a power of two, 2^-100 or
// more), and a double with no error for any x.
func halve(x, lo string) string {
	return "(sign(" + x + ") * greatest(abs(" + x + "), " + lo + ") * " + halfNum + ")"
}

// rare is body over the operands l and r bound in a sub-select that
// PostgreSQL keeps as it is (OFFSET 0): a guard's branch for results
// beyond the range, which reads its operands many times, runs as a
// sub-plan on the rows that take it only, and is not pulled up into the
// expression around it, where the copies of nested operations would
// multiply with their depth in the plan (a product of a product took
// minutes to plan when they were).
func rare(body func(l, r string) string, l, r string) string {
	return "(SELECT " + body("__pn_l", "__pn_r") + " FROM (SELECT " + l + " AS __pn_l, " + r + " AS __pn_r OFFSET 0) AS __pn_o)"
}

func (postgres) Arith(op, l, r string) string {
	return let(func(v ...string) string {
		l, r := v[0], v[1]
		// A NaN or infinite operand raises no error in PostgreSQL's
		// double arithmetic, which then follows IEEE 754 as DuckDB's
		// (except x/0, below); the guards are for finite operands.
		// A product or quotient with a zero operand cannot overflow or
		// underflow, and keeps IEEE's signed zero. A NULL operand gives
		// NULL here too, before the guards below compute on the other
		// operand alone (an overflow there would be an error).
		nonFinite := "(abs(" + l + ") < 'Infinity' AND abs(" + r + ") < 'Infinity') IS NOT TRUE THEN " + l + " " + op + " " + r
		sign := func(l, r string) string { return "sign(" + l + ") * sign(" + r + ")" }
		inf := func(l, r string) string { return "(" + sign(l, r) + " * " + infNum + ")" }
		zero := func(l, r string) string { return "(" + sign(l, r) + " * " + zeroNum + ")" }
		// halved is the result of the halved operation h: inf when h
		// reaches 2^1023, else 2h.
		halved := func(h string) string {
			return "CASE WHEN abs(" + h + ") < " + pow2p1023 + " THEN (" + h + ") * " + twoNum + " ELSE sign(" + h + ") * " + infNum + " END"
		}
		switch op {
		case "+", "-":
			// Operands of opposite signs (+) or of the same sign (-)
			// cannot overflow either.
			same := "sign(" + l + ") * sign(" + r + ") <= 0"
			if op == "-" {
				same = "sign(" + l + ") * sign(" + r + ") >= 0"
			}
			return "CASE WHEN " + nonFinite + " WHEN abs(" + l + ") < " + half + " AND abs(" + r + ") < " + half + " OR " + same + " OR least(abs(" + l + "), abs(" + r + ")) < " + pow2p970 +
				" THEN " + l + " " + op + " " + r + " ELSE " + rare(func(l, r string) string {
				return halved("(" + halve(l, pow2p970) + " " + op + " " + halve(r, pow2p970) + ")")
			}, l, r) + " END"
		case "*":
			s := func(l, r string) string { return "ln(abs(" + l + ")) + ln(abs(" + r + "))" }
			return "CASE WHEN " + nonFinite + " WHEN " + l + " = 0 OR " + r + " = 0 THEN " + l + " * " + r + " WHEN " + s(l, r) + " BETWEEN " + lnMin + " AND " + lnMax + " THEN " + l + " * " + r +
				" ELSE " + rare(func(l, r string) string {
				a, b := "(least(abs("+l+"), "+pow2p100+") * "+pow2p300+")", "(least(abs("+r+"), "+pow2p100+") * "+pow2p300+")"
				p := "(" + a + " * " + b + ")"
				return "CASE WHEN " + s(l, r) + " > 710 THEN " + inf(l, r) + " WHEN " + s(l, r) + " > " + lnMax + " THEN " + halved(halve(l, pow2m100)+" * "+r) +
					" WHEN " + s(l, r) + " < -760 THEN " + zero(l, r) + " WHEN " + p + " > " + pow2m475 + " THEN " + l + " * " + r + " WHEN " + p + " < " + pow2m475 + " THEN " + zero(l, r) +
					" WHEN " + twoProductErr(a, b, pow2m475) + " > 0 THEN " + sign(l, r) + " * " + pow2m1074 + " ELSE " + zero(l, r) + " END"
			}, l, r) + " END"
		}
		// "/": x/0 is DuckDB's (IEEE 754's) ±inf, signed by x and by
		// the zero (atan2(−0, −1) = −π, atan2(0, −1) = π), or NaN for
		// 0/0 and NaN/0; PostgreSQL raises an error for it.
		byZero := "CAST(CASE WHEN " + l + " = 0 OR " + l + " = 'NaN' THEN 'NaN' WHEN (" + l + " > 0) = (atan2(" + r + ", -1) > 0) THEN 'Infinity' WHEN " + l + " IS NOT NULL THEN '-Infinity' END AS double precision)"
		s := func(l, r string) string { return "ln(abs(" + l + ")) - ln(abs(" + r + "))" }
		return "CASE WHEN " + r + " = 0 THEN " + byZero + " WHEN " + nonFinite + " WHEN " + l + " = 0 THEN " + l + " / " + r + " WHEN " + s(l, r) + " BETWEEN " + lnMin + " AND " + lnMax + " THEN " + l + " / " + r +
			" ELSE " + rare(func(l, r string) string {
			return "CASE WHEN " + s(l, r) + " > 710 THEN " + inf(l, r) + " WHEN " + s(l, r) + " > " + lnMax + " THEN " + halved(halve(l, pow2m100)+" / "+r) +
				" WHEN " + s(l, r) + " < -760 OR least(abs(" + l + "), 1) * " + pow2p600 + " <= greatest(abs(" + r + "), " + pow2m100 + ") * " + pow2m475 + " THEN " + zero(l, r) + " ELSE " + l + " / " + r + " END"
		}, l, r) + " END"
	}, []string{"l", "r"}, l, r)
}

// expMax and expMin bound the arguments whose exp is finite and not a
// zero, in the C library's exp that PostgreSQL and DuckDB call (found by
// bisection; the next double beyond each gives inf or 0, and
// PostgreSQL's exp an error).
const (
	expMax = "CAST('709.782712893384' AS double precision)"
	expMin = "CAST('-745.1332191019411' AS double precision)"
)

// Func guards exp (an error where DuckDB's is inf above expMax and 0
// below expMin; NaN and ±inf raise none) and writes round(x, digits),
// which PostgreSQL has only for numeric, as a division of round(x·10^k)
// when that product is within range (else x, already an integer there).
func (d postgres) Func(name string, args []string) string {
	switch name {
	case "exp":
		return let(func(v ...string) string {
			return "CASE WHEN " + v[0] + " > " + expMax + " AND " + v[0] + " < 'Infinity' THEN " + infNum + " WHEN " + v[0] + " < " + expMin + " AND " + v[0] + " > '-Infinity' THEN " + zeroNum + " ELSE exp(" + v[0] + ") END"
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
