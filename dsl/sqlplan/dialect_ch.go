package sqlplan

import (
	"math"
	"strconv"
	"strings"
)

// ClickHouse is the Dialect of ClickHouse (a live, possibly distributed
// table, dsl/chsource), written for the oldest server the project runs
// against, Debian's 18.16.
//
// ClickHouse's Float64 arithmetic follows IEEE 754 as DuckDB's (an
// overflow is ±inf, x/0 is ±inf or NaN, log of x ≤ 0 is NaN or -inf),
// so the arithmetic needs no guards; what differs, and is written out:
//
//   - the exact sums: Int64 sums wrap around, so each grid integer is a
//     Decimal(38, 0), whose sum and product are exact 128-bit integers
//     (the grid keeps Σ q² below 2^127, GridBits);
//   - a cast of a double beyond Int64's range wraps rather than failing,
//     so the grid's value is clamped as a double before the cast;
//   - greatest and least return NULL for a NULL argument and order NaN
//     by their argument's position, so Clamp and least/greatest treat
//     NULL and NaN explicitly (DuckDB: NULL skipped, NaN the largest);
//   - x IN (…) is 0, not NULL, for a NULL x (NullIn);
//   - string literals have backslash escapes;
//   - the parser refuses a subnormal literal and the string conversion
//     reads one as 0, so a subnormal is built by exact scaling;
//   - round is written out (half away from zero, as DuckDB's), and so is
//     the grid's rounding half to even (chRoundEven): 18.16's round of a
//     Float64 rounds half away from zero, and it has no rint.
//
// There are no correlated sub-selects, so an operand that a guard reads
// twice is written twice; the server computes an identical expression
// once per block. There are no window functions: a bounded plan (user-
// level data) is printed with arrays instead (BoundedRows).
var ClickHouse Dialect = clickHouse{}

// clickHouse is the dialect; over, when set, is the source's table
// reference as a projection of its table (ClickHouseOver).
type clickHouse struct{ over *projection }

// projection is a table reference from that is the subquery SELECT
// cols[c] AS c, … FROM table: each of the registered columns as an
// expression that reads only the table's column of the same name.
type projection struct {
	from, table string
	cols        map[string]string
}

// ClickHouseOver is the ClickHouse dialect of a source whose statements
// read the table reference from, the projection SELECT cols[c] AS c, …
// FROM table of the registered table (each expression reading only the
// table's column c, such as a categorical value mapped to NULL outside
// its domain).
//
// Print writes its aggregate statement over table itself, each column
// reference replaced by the column's expression (Inline): a Distributed
// table sends a statement's subquery in FROM to its shards and
// aggregates what they return on the initiator, so over from every row
// of every shard would travel (18.16: each shard sent its 1 500 rows for
// a grouped query), while an aggregate over the Distributed table itself
// runs on the shards, which send one partial aggregate per group. The
// other statements (PrintMoments, PrintRowSum, a nested plan) read from
// as given.
func ClickHouseOver(from, table string, cols map[string]string) Dialect {
	c := make(map[string]string, len(cols))
	for k, v := range cols {
		c[k] = v
	}
	return clickHouse{over: &projection{from: from, table: table, cols: c}}
}

// Inline reports, for the table reference from of an aggregate
// statement, the table and column expressions to write it over instead:
// those of ClickHouseOver when from is its projection.
func (d clickHouse) Inline(from string) (table string, cols map[string]string, ok bool) {
	if d.over == nil || from != d.over.from {
		return "", nil, false
	}
	return d.over.table, d.over.cols, true
}

// Windows reports that the dialect has no window functions: the bounded
// subquery (Print, bounded) is written with arrays (BoundedRows).
func (clickHouse) Windows() bool { return false }

// BoundedRows writes bounded's rule (Bound) with 18.16's arrays in place
// of windows. Per unit and group, the group's rows as tuples (row,
// carried…) are sorted and cut to their first b.Rows, and the group's
// first row is min(row); per unit, the groups as tuples (first, keys…,
// rows) are sorted and cut to their first b.Groups; arrayJoin turns what
// is kept back into rows. Sorting whole tuples makes ties in row harmless:
// rows of a unit tied in row are taken in the order of their carried
// values and groups tied in their first row in the order of their keys,
// so what a unit keeps is a function of its own rows, whatever order the
// server reads them in (the snapshot's row positions have no ties; a
// live table's --order column may). Equal tuples are the same row for
// the aggregates.
//
// rows reads a Distributed table through the projection in FROM (the
// statement is not inlined for a bounded plan), so the shards send every
// row that passes the filters and the initiator groups them: each unit's
// rows are bounded together, wherever they are stored. A per-shard
// bound would let a unit split over k shards keep k times its rows.
func (d clickHouse) BoundedRows(rows, unit, row string, carried, keys []string, b Bound) string {
	r, first, rs, g := d.Ident("__pn_r"), d.Ident("__pn_first"), d.Ident("__pn_rs"), d.Ident("__pn_g")
	// firstN is the first n of a group's tuples of elems, sorted.
	firstN := func(elems []string, n int) string {
		return "arraySlice(arraySort(groupArray(tuple(" + strings.Join(elems, ", ") + "))), 1, " + strconv.Itoa(n) + ")"
	}
	// out reads the kept rows (one a row of src, the tuple r) back into
	// the columns unit, keys and carried.
	out := func(src string) string {
		sel := append([]string{unit}, keys...)
		for j, c := range carried {
			sel = append(sel, "tupleElement("+r+", "+strconv.Itoa(j+2)+") AS "+c)
		}
		return "(SELECT " + strings.Join(sel, ", ") + " FROM (" + src + "))"
	}
	rowTuple := append([]string{row}, carried...)
	if len(keys) == 0 {
		// One group.
		return out("SELECT " + unit + ", arrayJoin(" + firstN(rowTuple, b.Rows) + ") AS " + r + " FROM (" + rows + ") GROUP BY " + unit)
	}
	byGroup := strings.Join(append([]string{unit}, keys...), ", ")
	groups := "SELECT " + byGroup + ", min(" + row + ") AS " + first + ", " + firstN(rowTuple, b.Rows) + " AS " + rs +
		" FROM (" + rows + ") GROUP BY " + byGroup
	groupTuple := append(append([]string{first}, keys...), rs)
	kept := "SELECT " + unit + ", arrayJoin(" + firstN(groupTuple, b.Groups) + ") AS " + g + " FROM (" + groups + ") GROUP BY " + unit
	sel := []string{unit}
	for i, k := range keys {
		sel = append(sel, "tupleElement("+g+", "+strconv.Itoa(i+2)+") AS "+k)
	}
	sel = append(sel, "arrayJoin(tupleElement("+g+", "+strconv.Itoa(len(keys)+2)+")) AS "+r)
	return out("SELECT " + strings.Join(sel, ", ") + " FROM (" + kept + ")")
}

// AliasesShadowColumns reports that ClickHouse reads a column reference
// as the SELECT's alias of that name (Print then names the statement's
// columns in an outer SELECT).
func (clickHouse) AliasesShadowColumns() bool { return true }

// Ident writes a double-quoted identifier; inside it ClickHouse reads
// backslash escapes, so backslashes and quotes are escaped.
func (clickHouse) Ident(name string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
}

// Str escapes backslashes and quotes: a ClickHouse string literal reads
// backslash escapes.
func (clickHouse) Str(s string) string {
	return `'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + `'`
}

// Num writes the shortest decimal that reads back as x (the parser reads
// a float literal with the C library's correctly rounded strtod) inside
// toFloat64, so that an integer literal is not an unsigned or narrow
// integer. A subnormal x, which the parser refuses, is its integer
// multiple of 2^-1074 scaled twice by 2^-537: both products are exact.
func (clickHouse) Num(x float64) string {
	if x != 0 && math.Abs(x) < 0x1p-1022 {
		m := x * 0x1p537 * 0x1p537 // an integer below 2^52, exactly
		return "((toFloat64(" + strconv.FormatFloat(m, 'g', -1, 64) + ") * toFloat64(" + strconv.FormatFloat(0x1p-537, 'g', -1, 64) + ")) * toFloat64(" + strconv.FormatFloat(0x1p-537, 'g', -1, 64) + "))"
	}
	return "toFloat64(" + strconv.FormatFloat(x, 'g', -1, 64) + ")"
}

// chRoundAway is v rounded half away from zero, exact for every double
// (v − trunc(v) is exact); ClickHouse has no sign function.
func chRoundAway(v string) string {
	return "(trunc(" + v + ") + CASE WHEN abs(" + v + " - trunc(" + v + ")) >= 0.5 THEN (CASE WHEN " + v + " < 0 THEN toFloat64(-1) ELSE toFloat64(1) END) ELSE toFloat64(0) END)"
}

// ToNumber reads a string with toFloat64OrNull, NULL for a text that is
// not a number (it also refuses surrounding blanks, where DuckDB trims
// them: such a value is missing on ClickHouse).
func (clickHouse) ToNumber(x string, fromString, integer bool) string {
	if fromString {
		x = "toFloat64OrNull(" + x + ")"
	}
	if integer {
		x = chRoundAway(x)
	}
	return x
}

// ToText writes the shortest round-trip text (1 as "1", as PostgreSQL).
func (clickHouse) ToText(x string) string { return "toString(" + x + ")" }

// Ln is log, NULL for x ≤ 0 as the other dialects' (ClickHouse's is NaN
// or -inf there).
func (clickHouse) Ln(x string) string { return "CASE WHEN " + x + " > 0 THEN log(" + x + ") END" }

// DatePart maps DuckDB's parts to ClickHouse's functions: dow counts
// from Sunday = 0 (toDayOfWeek from Monday = 1), week is the ISO week.
func (clickHouse) DatePart(part, x string) string {
	f := map[string]string{
		"year": "toYear", "quarter": "toQuarter", "month": "toMonth", "day": "toDayOfMonth",
		"doy": "toDayOfYear", "week": "toISOWeek",
	}[part]
	if part == "dow" {
		return "toFloat64(toDayOfWeek(" + x + ") % 7)"
	}
	return "toFloat64(" + f + "(" + x + "))"
}

// Clamp as DuckDB's: NULL stays NULL and a NaN becomes hi (ClickHouse's
// greatest and least would pass NaN through or not by position). A NULL
// x needs no branch of its own: isNaN(NULL) is NULL, which selects the
// ELSE branch, and greatest and least of NULL are NULL. Without a NULL
// branch the result of a column that is not Nullable is not Nullable
// either, which the server computes faster (a grouped private_sql
// statement took about 15% less).
func (clickHouse) Clamp(x, lo, hi string) string {
	return "CASE WHEN isNaN(" + x + ") THEN " + hi + " ELSE least(greatest(" + x + ", " + lo + "), " + hi + ") END"
}

// Quantize scales the clamped value, clamps it to the grid's range as a
// double (exact: |Lo|, |Hi| ≤ 2^GridBits), rounds it half to even (the
// grid's rounding, chRoundEven) and converts it, now an integer within
// Int64, to Decimal(38, 0), whose sums are exact 128-bit integers. Step
// is a power of two, so the scaling by 1/Step is exact. NULL stays NULL
// without a guard (as in Clamp): the arithmetic, greatest, least and the
// conversions of NULL are NULL.
func (d clickHouse) Quantize(x string, g Grid) string {
	v := x
	if g.Centre != 0 {
		v = "(" + x + " - " + d.Num(g.Centre) + ")"
	}
	w := "least(greatest(" + v + " * " + d.Num(1/g.Step) + ", " + d.Num(float64(g.Lo)) + "), " + d.Num(float64(g.Hi)) + ")"
	return "toDecimal128(toInt64(" + chRoundEven(w, max(-g.Lo, g.Hi)) + "), 0)"
}

// roundEvenShift is 1.5·2^52: for |w| ≤ 2^51, w + roundEvenShift lies in
// [2^52, 2^53], where the doubles are the integers, so the sum is w
// rounded to an integer, half to even (the IEEE default; the shift is
// even), and subtracting the shift again is exact.
const roundEvenShift = 0x1.8p52

// chRoundEven is w rounded half to even, exact for |w| ≤ m (ClickHouse
// 18.16 has no rint: its round of a Float64 rounds half away from zero,
// and toInt64 truncates). For m ≤ 2^51, which every grid of GridOf has,
// it is the branch-free shift and unshift of roundEvenShift (the server
// computes (w + s) − s as written: it does not reassociate doubles);
// otherwise the shift is by 2^52 on |w|, for |w| < 2^52, below which the
// doubles of [2^52, 2^53) are again the integers, and w itself beyond,
// where every double is an integer. NULL stays NULL, NaN NaN.
func chRoundEven(w string, m int64) string {
	if m <= 1<<51 {
		s := ClickHouse.Num(roundEvenShift)
		return "((" + w + " + " + s + ") - " + s + ")"
	}
	p := ClickHouse.Num(0x1p52)
	return "(CASE WHEN abs(" + w + ") >= " + p + " THEN " + w + " WHEN " + w + " < 0 THEN " + p + " - (" + p + " - " + w + ") ELSE (" + w + " + " + p + ") - " + p + " END)"
}

// Square multiplies two Decimal(38, 0) integers of at most 2^GridBits:
// the product is exact.
func (clickHouse) Square(x string) string { return "(" + x + " * " + x + ")" }

// Bin as the PostgreSQL dialect's: ceil((x − Lo)/Step), a difference in
// (0, Step) being bin 1 without the division, clamped to [0, Bins].
func (d clickHouse) Bin(x string, g QuantileGrid) string {
	diff := "(" + x + " - " + d.Num(g.Lo) + ")"
	return "CASE WHEN " + x + " IS NULL THEN NULL WHEN " + diff + " <= 0 THEN toInt64(0) WHEN " + diff + " < " + d.Num(g.Step) +
		" THEN toInt64(1) ELSE toInt64(least(ceil(" + diff + " / " + d.Num(g.Step) + "), " + d.Num(float64(g.Bins)) + ")) END"
}

// Histogram counts the group's non-NULL bins with sumMap, which returns
// the sorted bins and their counts as two arrays; they are concatenated
// into one Int64 array, the bins then the counts, as the PostgreSQL
// dialect's (empty for a group without values). Only the pairs leave the
// engine.
func (clickHouse) Histogram(x string) string {
	h := "sumMapIf([assumeNotNull(" + x + ")], [toInt64(1)], isNotNull(" + x + "))"
	return "arrayConcat(tupleElement(" + h + ", 1), tupleElement(" + h + ", 2))"
}

func (clickHouse) Float(x string) string { return "toFloat64(" + x + ")" }

// Arith is ClickHouse's Float64 arithmetic, which follows IEEE 754 and
// never raises an error.
func (clickHouse) Arith(op, l, r string) string { return "(" + l + " " + op + " " + r + ")" }

// Func writes round out (half away from zero, as DuckDB's; with digits,
// by a power of ten when the product stays finite, as the PostgreSQL
// dialect's) and least and greatest with DuckDB's rules: NULL arguments
// are skipped and NaN is larger than every number.
func (d clickHouse) Func(name string, args []string) string {
	switch name {
	case "round":
		if len(args) == 1 {
			return chRoundAway(args[0])
		}
		v := args[0]
		k, _ := strconv.Atoi(args[1])
		if k > 300 || k < -300 {
			return v
		}
		pf := math.Pow(10, math.Abs(float64(k)))
		p := d.Num(pf)
		if k >= 0 {
			return "CASE WHEN abs(" + v + ") < " + d.Num(1e300/pf) + " THEN " + chRoundAway("("+v+" * "+p+")") + " / " + p + " ELSE " + v + " END"
		}
		return "CASE WHEN abs(" + v + ") < " + d.Num(pf/2) + " THEN toFloat64(0) WHEN abs(" + v + ") < " + d.Num(1e300) + " THEN " + chRoundAway("("+v+" / "+p+")") + " * " + p + " ELSE " + v + " END"
	case "least", "greatest":
		acc := args[0]
		for _, b := range args[1:] {
			a := acc
			nan := "WHEN isNaN(" + a + ") THEN " + b + " WHEN isNaN(" + b + ") THEN " + a // least: the number
			if name == "greatest" {
				nan = "WHEN isNaN(" + a + ") OR isNaN(" + b + ") THEN nan"
			}
			acc = "CASE WHEN " + a + " IS NULL THEN " + b + " WHEN " + b + " IS NULL THEN " + a + " " + nan +
				" ELSE " + name + "(" + a + ", " + b + ") END"
		}
		return acc
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

// LayerFence is a constant column in each layer of the moments statement
// (PrintMoments) in place of OFFSET 0, which 18.16 does not parse without
// a LIMIT (its moments statement failed, and Analyze Gauss on a live table
// released the noise alone). ClickHouse computes a subquery's columns once
// and does not inline them into the outer query, so nothing more is needed.
func (clickHouse) LayerFence() string { return "toUInt8(0)" }

// ExactTerm converts a moments grid integer (an Int64 of at most 2⁴⁷ in
// magnitude) to Decimal(38, 0): a sum of Int64 wraps around past 2⁶³,
// which 2¹⁶ rows of norm 1 reach, while the Decimal sums, and the sum of
// the shards' partial sums, are exact 128-bit integers.
func (clickHouse) ExactTerm(q string) string { return "toDecimal128(" + q + ", 0)" }

// InStrings is x IN (…) with a NULL x kept NULL (NullIn).
func (d clickHouse) InStrings(x string, lits []string) string {
	return d.NullIn(x, "("+x+" IN ("+strings.Join(lits, ", ")+"))")
}

// NullIn keeps the condition c on x (x IN or NOT IN a list) NULL for a
// NULL x: ClickHouse's IN is 0 for it, which NOT, or NOT IN, would turn
// into a match where DuckDB matches nothing.
func (clickHouse) NullIn(x, c string) string {
	return "CASE WHEN " + x + " IS NULL THEN NULL ELSE " + c + " END"
}
