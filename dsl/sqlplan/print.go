package sqlplan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Dialect is what the printer needs to know about a SQL engine: how to
// quote, how to write literals, and how to write the few operations whose
// spelling or failure behaviour differs between engines. The printed
// statement must never fail on the data (a failure after the charge would
// be an outcome that depends on private rows), so each method returns an
// expression that is total: NULL, never an error, where the engine's plain
// function would raise one.
type Dialect interface {
	// Ident quotes an identifier.
	Ident(name string) string
	// Str writes a string literal.
	Str(s string) string
	// Num writes a finite number as a DOUBLE literal.
	Num(x float64) string
	// ToNumber converts x (a number or a string) to DOUBLE, NULL where it
	// is not a number; integer rounds it (half away from zero) as a cast
	// to INTEGER would, without the cast's range error.
	ToNumber(x string, fromString, integer bool) string
	// ToText converts a number to text.
	ToText(x string) string
	// Ln is the natural logarithm, NULL for x ≤ 0.
	Ln(x string) string
	// DatePart is one part ('year', 'month', …) of a date.
	DatePart(part, x string) string
	// Clamp limits x to [lo, hi]; NULL stays NULL.
	Clamp(x, lo, hi string) string
	// Quantize is x (a DOUBLE) on the grid g as a 64-bit integer,
	// clamp(round((x − g.Centre)/g.Step), g.Lo, g.Hi), rounded half to
	// even (Grid); NULL stays NULL.
	// Print passes x already clamped to the aggregate's bounds, so a
	// dialect whose arithmetic keeps q in [g.Lo, g.Hi] by itself may
	// leave the integer clamp out (see duckDB.Quantize).
	Quantize(x string, g Grid) string
	// Square is x·x of a 64-bit integer x as a 128-bit integer.
	Square(x string) string
	// Bin is the bin of x (a DOUBLE clamped to [g.Lo, hi]) on a
	// quantile's grid g, a 64-bit integer in [0, g.Bins] (see
	// QuantileGrid); NULL stays NULL.
	Bin(x string, g QuantileGrid) string
	// Histogram is the aggregate of a group's non-NULL bins as a map
	// from bin to count (the reader of the engine's result turns it into
	// bin, count pairs).
	Histogram(x string) string
	// Float converts a numeric column to DOUBLE.
	Float(x string) string
	// Arith is l op r of two DOUBLEs, op one of + - * /.
	Arith(op, l, r string) string
	// Func is one of the scalar functions exp, round, abs, floor, ceil,
	// least and greatest of DOUBLE arguments (round's second argument
	// an integer literal), with DuckDB's values: round is half away from
	// zero, unlike the grid's quantization (Grid), which users never see.
	Func(name string, args []string) string
	// InStrings is the condition that x is one of the string literals
	// lits (NULL for a NULL x).
	InStrings(x string, lits []string) string
}

// DuckDB is the Dialect of DuckDB (the snapshots' engine).
var DuckDB Dialect = duckDB{}

type duckDB struct{}

func (duckDB) Ident(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Str doubles embedded quotes: DuckDB's plain string literals have no
// backslash escapes.
func (duckDB) Str(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// Num casts explicitly: DuckDB reads 10 as INTEGER and 0.5 as DECIMAL,
// whose arithmetic differs from (and can overflow unlike) DOUBLE's. The
// number is cast from a string: DuckDB converts a wide DECIMAL literal
// (17 significant digits) to DOUBLE through a rounded integer, one ulp
// off x for about one literal in 250, while its string to DOUBLE
// conversion is correctly rounded, so the shortest digits of x give x's
// bits. The statement's bounds are then the float64s the mechanism
// planned with, which duckDB.Quantize's range argument needs.
func (duckDB) Num(x float64) string {
	return "CAST('" + strconv.FormatFloat(x, 'g', -1, 64) + "' AS DOUBLE)"
}

func (duckDB) ToNumber(x string, fromString, integer bool) string {
	if fromString {
		x = "TRY_CAST(" + x + " AS DOUBLE)"
	}
	if integer {
		x = "round(" + x + ")"
	}
	return x
}

func (duckDB) ToText(x string) string { return "CAST(" + x + " AS VARCHAR)" }

// Ln guards DuckDB's ln, which raises an error for x ≤ 0; DuckDB evaluates
// a CASE branch only on the rows that select it.
func (duckDB) Ln(x string) string {
	return "CASE WHEN " + x + " > 0 THEN ln(" + x + ") END"
}

func (d duckDB) DatePart(part, x string) string { return "date_part(" + d.Str(part) + ", " + x + ")" }

// Clamp is one CASE, which keeps NULL NULL (both comparisons are NULL,
// so the ELSE branch returns x) without the IS NOT NULL guard that
// GREATEST and LEAST would need (they skip NULL arguments, so NULL would
// become lo): a guard evaluates x once more per row. DuckDB orders NaN
// above every number, so NaN > hi and a NaN becomes hi, the documented
// rule; ±inf become lo and hi.
func (duckDB) Clamp(x, lo, hi string) string {
	return "CASE WHEN " + x + " < " + lo + " THEN " + lo + " WHEN " + x + " > " + hi + " THEN " + hi + " ELSE " + x + " END"
}

// Quantize is q = CAST((x − Centre) · 2^k AS BIGINT) with 2^k = 1/Step:
// DuckDB's cast of a DOUBLE to BIGINT rounds half to even, the grid's
// rounding (Grid), so no round is printed (round(·) before the cast cost
// as much as the integer sum: at 10⁷ rows, one thread, 0.359 s against
// 0.274 s for the bare cast). There is no integer clamp or NULL guard
// (NULL stays NULL through the arithmetic). Print's x is Clamp(arg, lo,
// hi) with the aggregate's bounds, so x is NULL or a double in [lo, hi]
// (NaN and ±inf are clamped), and q lies in [g.Lo, g.Hi] by itself: the
// subtraction, the multiplication (by a power of two) and the cast's
// rounding half to even (as Go's math.RoundToEven) are each correctly
// rounded or exact, hence monotone, so lo ≤ x ≤ hi gives
// round((lo − Centre)·2^k) ≤ q ≤ round((hi − Centre)·2^k), and GridOf
// computes g.Lo and g.Hi by exactly these float64 operations on the same
// bits (Num prints lo, hi, Centre and 2^k exactly), where
// |q| ≤ 2^GridBits also keeps the cast in range. When Centre is 0 no
// subtraction is printed; x − 0 is x.
func (d duckDB) Quantize(x string, g Grid) string {
	v := x
	if g.Centre != 0 {
		v = "(" + x + " - " + d.Num(g.Centre) + ")"
	}
	return "CAST(" + v + " * " + d.Num(1/g.Step) + " AS BIGINT)"
}

func (duckDB) Square(x string) string {
	return "(CAST(" + x + " AS HUGEINT) * CAST(" + x + " AS HUGEINT))"
}

// Bin divides rather than multiplying by 1/Step (not a power of two, so
// its reciprocal would round once more) and limits the integer to Bins,
// which the quotient's rounding can exceed at hi. It needs no lower
// clamp: x ≥ g.Lo (the same bits, Num being exact) gives x − g.Lo ≥ 0
// (a correctly rounded difference keeps its sign), so the quotient and
// its ceiling are at least 0. The NULL guard stays, as LEAST skips NULL.
func (d duckDB) Bin(x string, g QuantileGrid) string {
	b := "CAST(ceil((" + x + " - " + d.Num(g.Lo) + ") / " + d.Num(g.Step) + ") AS BIGINT)"
	return "CASE WHEN " + x + " IS NOT NULL THEN least(" + b + ", CAST(" + strconv.Itoa(g.Bins) + " AS BIGINT)) END"
}

// Histogram is DuckDB's histogram aggregate, which skips NULLs and
// returns MAP(BIGINT, UBIGINT) (NULL for a group without values).
func (duckDB) Histogram(x string) string { return "histogram(" + x + ")" }

func (duckDB) Float(x string) string { return "CAST(" + x + " AS DOUBLE)" }

// Arith is DuckDB's DOUBLE arithmetic, which follows IEEE 754: an
// overflow is ±inf and x/0 is ±inf or NULL, never an error.
func (duckDB) Arith(op, l, r string) string { return "(" + l + " " + op + " " + r + ")" }

// Func is DuckDB's function of that name: exp overflows to inf, and
// round(x, digits) is defined on DOUBLE.
func (duckDB) Func(name string, args []string) string {
	return name + "(" + strings.Join(args, ", ") + ")"
}

// InStrings is not x IN (…): DuckDB pushes an IN list of strings into
// the Parquet scan, where it cost 0.7 s at 10⁷ rows, more than the whole
// grouped aggregate; list_contains (the same byte equality, NULL for a
// NULL x) is evaluated after the scan.
func (duckDB) InStrings(x string, lits []string) string {
	return "list_contains([" + strings.Join(lits, ", ") + "], " + x + ")"
}

// Role is what a column of the printed statement holds.
type Role int

// The roles of the statement's columns.
const (
	RoleKey   Role = iota // the value of key Index
	RoleRows              // COUNT(*) of the group (one column, shared)
	RoleCount             // aggregate Index: its number of non-NULL values
	RoleSum               // aggregate Index: Σ q, the exact integer sum of its values on its Grid (SUM: the clamped value; AVG, VARIANCE, STDDEV: the clamped value minus the midpoint)
	RoleSumSq             // aggregate Index: Σ q², the exact integer sum of the squares
	RoleUsers             // aggregate Index: the number of distinct privacy units
	RoleHist              // aggregate Index (QUANTILE): the map from bin to count of its clamped values on its QuantileGrid
	RoleUnits             // the group's number of distinct units (a bounded plan under partition selection: the count it thresholds)
)

// StatementColumn is one column of the printed statement's result.
type StatementColumn struct {
	Name  string
	Role  Role
	Index int // the key or aggregate it belongs to; 0 for RoleRows
}

// Statement is the printed statement and the meaning of its columns.
type Statement struct {
	SQL     string
	Columns []StatementColumn
}

// ErrNotYet marks a plan the printer cannot execute yet (a quantile whose
// grid the caller has not set).
var ErrNotYet = errors.New("not yet")

// Print writes the one statement that computes, per group of p, what the
// noise step needs, over the table reference from (the caller's trusted
// reference to the dataset's snapshot, such as a read_parquet call). It
// reads only p: nothing of the analyst's text is copied.
//
// For each aggregate, with c the value clamped to [lo, hi], m the
// midpoint (lo + hi)/2 and q the integer of a value on the aggregate's
// Grid (GridOf: q·Step ≈ c for SUM, ≈ c − m otherwise):
//
//	COUNT(*)           the group's row count (column n, shared)
//	COUNT(DISTINCT u)  the number of distinct units
//	SUM                Σ q
//	AVG                count of non-NULL values, Σ q
//	VARIANCE, STDDEV   count, Σ q, Σ q²
//	QUANTILE           the histogram of the bins of c on its QuantileGrid
//
// The sums are exact integers (BIGINT terms summed in 128 bits), so they
// do not depend on the engine's summation order. Re-centring on m halves
// the sensitivity of the sums that a mean or variance divides
// (|c − m| ≤ (hi − lo)/2). On a plan with a Bound (user-level data) the
// statement aggregates a subquery that keeps each unit's first Groups
// groups and first Rows rows per group (bounded), with the keys computed
// there; under partition selection it also returns each group's number
// of units (RoleUnits). Sums over no rows print as 0, not NULL. A QUANTILE
// whose grid the caller has not set (Aggregate.Bins) is an error wrapping
// ErrNotYet.
//
// A dialect with an Inline method (ClickHouseOver) may have the
// statement read another table than from, with each column reference
// replaced by its expression in from (see inliner).
func Print(p *Plan, d Dialect, from string) (*Statement, error) {
	if p.Bound != nil && windowless(d) {
		if _, arrays := d.(arrayBounder); !arrays {
			// The bounded subquery ranks each unit's rows with windows.
			return nil, errors.New("sqlplan: user-level data (a bounded plan) needs window functions, which this engine lacks; snapshot the data to query it")
		}
	}
	if in, ok := d.(inliner); ok && p.Bound == nil {
		if table, cols, ok := in.Inline(from); ok {
			st, err := printStatement(p, &printer{d: d, cols: cols}, table)
			if err != nil || !aliasesColumns(st, cols) {
				return st, err
			}
			// An alias of the statement (n, k0, …) names a column of
			// the table, whose references ClickHouse would read as the
			// alias over the table itself: the statement reads from,
			// as it did before inlining.
		}
	}
	return printStatement(p, &printer{d: d}, from)
}

// inliner is a dialect whose engine runs an aggregate over a table
// reference that is a projection (a subquery in FROM) worse than one
// over the projection's table: Inline(from) is that table and, for each
// column of from, its expression over the table's column of the same
// name (and false when from is not such a projection). Print then
// writes the statement over table with each column reference replaced
// by its expression, which computes the same values per row.
type inliner interface {
	Inline(from string) (table string, cols map[string]string, ok bool)
}

// aliasesColumns reports whether a column of st is named as one of cols.
func aliasesColumns(st *Statement, cols map[string]string) bool {
	for _, c := range st.Columns {
		if _, ok := cols[c.Name]; ok {
			return true
		}
	}
	return false
}

// printStatement is Print with the printer pr (its dialect and, for an inlined
// projection, its column expressions) over the table reference from.
func printStatement(p *Plan, pr *printer, from string) (*Statement, error) {
	d := pr.d
	st := &Statement{}
	var sel, group []string
	add := func(sql string, c StatementColumn) {
		sel = append(sel, sql)
		st.Columns = append(st.Columns, c)
	}
	var keyExprs []string // the keys over the table's columns
	for i, k := range p.Keys {
		s, err := pr.expr(k.Expr)
		if err != nil {
			return nil, err
		}
		keyExprs = append(keyExprs, s)
		if p.Bound != nil {
			s = d.Ident(boundKey(i)) // computed once, by the inner query
		}
		add(s, StatementColumn{Name: "k" + strconv.Itoa(i), Role: RoleKey, Index: i})
		group = append(group, s)
	}
	add("count(*)", StatementColumn{Name: "n", Role: RoleRows})
	if p.Bound != nil && p.PartitionSelection() {
		add("count(DISTINCT "+d.Ident(p.Bound.Unit)+")", StatementColumn{Name: "nu", Role: RoleUnits})
	}
	for i, a := range p.Aggregates {
		name := func(s string) string { return "a" + strconv.Itoa(i) + "_" + s }
		switch a.Kind {
		case Count:
			continue // the shared row count
		case CountDistinct:
			s, err := pr.expr(a.Arg)
			if err != nil {
				return nil, err
			}
			add("count(DISTINCT "+s+")", StatementColumn{Name: name("users"), Role: RoleUsers, Index: i})
			continue
		case Quantile:
			if a.SharedHist > 0 {
				continue // computed once, for the aggregate it names
			}
			qg, err := QuantileGridOf(a)
			if err != nil {
				return nil, err
			}
			arg, err := pr.expr(a.Arg)
			if err != nil {
				return nil, err
			}
			bin := d.Bin(d.Clamp(arg, d.Num(a.Lo), d.Num(a.Hi)), qg)
			hist := d.Histogram(bin)
			if c, ok := d.(constHistogram); ok && !readsColumn(a.Arg) {
				hist = c.ConstHistogram(bin)
			}
			add(hist, StatementColumn{Name: name("hist"), Role: RoleHist, Index: i})
			continue
		}
		g, err := GridOf(a)
		if err != nil {
			return nil, err
		}
		arg, err := pr.expr(a.Arg)
		if err != nil {
			return nil, err
		}
		q := d.Quantize(d.Clamp(arg, d.Num(a.Lo), d.Num(a.Hi)), g)
		if a.Kind != Sum {
			add("count("+arg+")", StatementColumn{Name: name("n"), Role: RoleCount, Index: i})
		}
		add("coalesce(sum("+q+"), 0)", StatementColumn{Name: name("sum"), Role: RoleSum, Index: i})
		if a.Kind == Variance || a.Kind == Stddev {
			add("coalesce(sum("+d.Square(q)+"), 0)", StatementColumn{Name: name("sumsq"), Role: RoleSumSq, Index: i})
		}
	}
	var conds []string
	if p.Where != nil {
		w, err := pr.expr(p.Where)
		if err != nil {
			return nil, err
		}
		conds = append(conds, w)
	}
	// Rows whose key lies outside its public domain are in no released
	// group: the statement drops them, so what comes back is at most the
	// domain's groups, whatever the data hold. The one exception is
	// groupsDropNull's NULL group.
	nullGroup := groupsDropNull(p)
	for i, k := range p.Keys {
		if k.Source == PartitionSelection {
			continue
		}
		if nullGroup && closedWithoutNull(k) {
			continue
		}
		c, err := pr.inDomain(keyExprs[i], k)
		if err != nil {
			return nil, err
		}
		if c != "" {
			conds = append(conds, c)
		}
	}
	var b strings.Builder
	if p.Bound != nil {
		b.WriteString(" FROM " + bounded(d, p, from, keyExprs, conds))
	} else {
		b.WriteString(" FROM " + from)
		if len(conds) > 0 {
			b.WriteString(" WHERE " + strings.Join(conds, " AND "))
		}
	}
	if len(group) > 0 {
		b.WriteString(" GROUP BY " + strings.Join(group, ", "))
	}
	named := make([]string, len(sel))
	if shadowsColumn(d, p, st) {
		// The aggregates are named __pn_oI, which no column is, and
		// an outer SELECT gives them their names.
		inner := make([]string, len(sel))
		for i, c := range st.Columns {
			tmp := d.Ident("__pn_o" + strconv.Itoa(i))
			inner[i] = sel[i] + " AS " + tmp
			named[i] = tmp + " AS " + d.Ident(c.Name)
		}
		st.SQL = "SELECT " + strings.Join(named, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + b.String() + ")"
		return st, nil
	}
	for i, c := range st.Columns {
		named[i] = sel[i] + " AS " + d.Ident(c.Name)
	}
	st.SQL = "SELECT " + strings.Join(named, ", ") + b.String()
	return st, nil
}

// aliasShadower is a dialect whose engine reads a column reference as
// the SELECT's alias of that name where there is one (ClickHouse: an
// alias n of count(*) makes sum(n) of a table's column n an aggregate of
// an aggregate, which the server refuses).
type aliasShadower interface{ AliasesShadowColumns() bool }

// shadowsColumn reports whether st's statement of p, in dialect d, names
// one of its columns as a column that p reads (the nested statements of
// user-level column analyses read an inner statement's n and a0_sum).
func shadowsColumn(d Dialect, p *Plan, st *Statement) bool {
	if sh, ok := d.(aliasShadower); !ok || !sh.AliasesShadowColumns() {
		return false
	}
	reads := map[string]bool{}
	mark := func(e *Expr) error {
		if e.Op == OpColumn {
			reads[e.Column] = true
		}
		return nil
	}
	walk(p.Where, mark)
	for _, k := range p.Keys {
		walk(k.Expr, mark)
	}
	for _, a := range p.Aggregates {
		walk(a.Arg, mark)
	}
	if p.Bound != nil {
		reads[p.Bound.Unit] = true
	}
	for _, c := range st.Columns {
		if reads[c.Name] {
			return true
		}
	}
	return false
}

// groupsDropNull reports whether the statement of p leaves a Closed
// key's test for NULL (closedWithoutNull) to the reader of its result: on
// a plan whose groups are all listed in public domains and whose rows are
// not bounded per unit, a condition on a key's value alone selects whole
// groups, so grouping the NULL rows too and dropping that group after the
// aggregate (the reader skips every group outside the domains, as
// release.fillSQL does) gives each listed group the same rows and the
// same exact sums. It is worth it in DuckDB, where the test, pushed into
// the Parquet scan, turns every later vector into a selection: 10 % of
// the CPU of a grouped SUM and AVG at 10⁷ rows (issue 27). The NULL group
// is the only extra one (a Closed column holds nothing else outside its
// categories), so the result stays bounded by public facts. A bounded
// plan keeps the test per row, since a unit's rows outside the domains
// must not take its group slots (Bound), and so does partition
// selection, where every returned group is a candidate.
func groupsDropNull(p *Plan) bool {
	return p.Bound == nil && !p.PartitionSelection()
}

// closedWithoutNull reports whether k is in its domain exactly when its
// value is not NULL: a Closed key whose domain lacks NULL (inDomain's
// NULL test).
func closedWithoutNull(k Key) bool {
	if !k.Closed || len(k.Domain) == 0 {
		return false
	}
	for _, v := range k.Domain {
		if v.Kind == ValueNull {
			return false
		}
	}
	return true
}

// boundKey names key i's column in a bounded plan's inner query (the
// reserved prefix keeps it apart from the data's columns).
func boundKey(i int) string { return "__pn_k" + strconv.Itoa(i) }

// bounded is the subquery of a bounded plan (Bound): the rows of from
// that pass conds (WHERE and the keys' domains), with the keys computed
// as columns, keeping for each unit its first b.Groups distinct groups
// (ranked by the group's first row, RowColumn) and in each its first
// b.Rows rows. A unit's rows are partitioned by the unit and ordered by
// their snapshot position, so what a unit keeps depends only on its own
// rows. Two rows of a unit in different groups have different positions,
// so the groups' first rows are distinct and dense_rank ranks them
// without ties.
//
// For speed (a window sorts the rows it sees): the subquery carries only
// the columns the aggregates read; the one sort over every row is the
// row_number within the unit's group; the rows beyond b.Rows are dropped
// before the groups are ranked — every group keeps its first row, so the
// groups' first rows and ranks are unchanged — and the other two windows
// see at most b.Rows rows per unit and group.
//
// A dialect without windows that is an arrayBounder writes the same rule
// with arrays (arrayBounder).
func bounded(d Dialect, p *Plan, from string, keyExprs, conds []string) string {
	b := p.Bound
	unit, row := d.Ident(b.Unit), d.Ident(RowColumn)
	var carried []string // the columns the aggregates read
	seen := map[string]bool{b.Unit: true, RowColumn: true}
	for _, a := range p.Aggregates {
		walk(a.Arg, func(e *Expr) error {
			if e.Op == OpColumn && !seen[e.Column] {
				seen[e.Column] = true
				carried = append(carried, d.Ident(e.Column))
			}
			return nil
		})
	}
	cols := append([]string{unit, row}, carried...)
	part := []string{unit}
	for i, k := range keyExprs {
		cols = append(cols, k+" AS "+d.Ident(boundKey(i)))
		part = append(part, d.Ident(boundKey(i)))
	}
	rows := "SELECT " + strings.Join(cols, ", ") + " FROM " + from
	if len(conds) > 0 {
		rows += " WHERE " + strings.Join(conds, " AND ")
	}
	if ab, ok := d.(arrayBounder); ok && windowless(d) {
		return ab.BoundedRows(rows, unit, row, carried, part[1:], *b)
	}
	rn, first, g := d.Ident("__pn_r"), d.Ident("__pn_first"), d.Ident("__pn_g")
	group := "PARTITION BY " + strings.Join(part, ", ")
	// Every subquery has an alias, which PostgreSQL (before 16) requires.
	as := func(i int) string { return ") AS " + d.Ident("__pn_s"+strconv.Itoa(i)) }
	rows = "SELECT *, row_number() OVER (" + group + " ORDER BY " + row + ") AS " + rn + " FROM (" + rows + as(1)
	firstRows := rn + " <= " + strconv.Itoa(b.Rows)
	if len(keyExprs) == 0 {
		return "(SELECT * FROM (" + rows + as(2) + " WHERE " + firstRows + as(3) // one group
	}
	rows = "SELECT *, min(" + row + ") OVER (" + group + ") AS " + first + " FROM (" + rows + as(2) + " WHERE " + firstRows
	rows = "SELECT *, dense_rank() OVER (PARTITION BY " + unit + " ORDER BY " + first + ") AS " + g + " FROM (" + rows + as(3)
	return "(SELECT * FROM (" + rows + as(4) + " WHERE " + g + " <= " + strconv.Itoa(b.Groups) + as(5)
}

// windowless reports whether d says it has no window functions (a
// Windows method that returns false); bounded then needs its arrays.
func windowless(d Dialect) bool {
	w, ok := d.(interface{ Windows() bool })
	return ok && !w.Windows()
}

// arrayBounder is a dialect without window functions (Windows false) that
// writes bounded's rule with arrays. BoundedRows(rows, unit, row,
// carried, keys, b) is a subquery in FROM (parenthesised) over the rows
// of the statement rows, which hold the columns unit and row (quoted),
// the columns carried and the keys' columns keys (quoted, none for a
// plan without keys), already filtered: for each unit, its first b.Groups
// distinct groups (ranked by the group's first row) and in each its first
// b.Rows rows, with the columns unit, keys and carried, named as in rows.
// It must read each unit's rows only (its result for a unit is a function
// of that unit's rows, ties in row included) and all of them wherever
// they are stored (a distributed table's shards).
type arrayBounder interface {
	BoundedRows(rows, unit, row string, carried, keys []string, b Bound) string
}

// inDomain is the condition that key expression x (printed) of k lies in
// k's domain: a range for an enumeration over bounds (whose values are
// consecutive integers), else a list, with NULL matched explicitly when
// the domain holds it (x IN (…) is never true for a NULL x). It is ""
// (no condition) for a Closed key whose domain holds NULL too: every row
// is in it, and a per-row test of a list of strings costs the engine as
// much as the grouped sum it filters.
func (p *printer) inDomain(x string, k Key) (string, error) {
	d := p.d
	var lits []string
	null, strs := false, false
	for _, v := range k.Domain {
		switch v.Kind {
		case ValueNull:
			null = true
		case ValueNumber:
			if !finite(v.Num) {
				return "", fmt.Errorf("sqlplan: the key value %g is not finite", v.Num)
			}
			lits = append(lits, d.Num(v.Num))
		default:
			if strings.ContainsRune(v.Str, 0) {
				return "", errors.New("sqlplan: a key holds a NUL byte")
			}
			lits = append(lits, d.Str(v.Str))
			strs = true
		}
	}
	var c string
	switch {
	case k.Closed && null && len(lits) > 0:
		// Every value of the column is NULL or in its domain.
		return "", nil
	case k.Closed && !null && len(lits) > 0:
		// Every non-NULL value of the column is in its domain (Column.Closed).
		c = "(" + x + " IS NOT NULL)"
	case k.Source == FromBounds && len(lits) > 0:
		c = "(" + x + " BETWEEN " + lits[0] + " AND " + lits[len(lits)-1] + ")"
	case strs:
		c = d.InStrings(x, lits)
	case len(lits) > 0:
		c = "(" + x + " IN (" + strings.Join(lits, ", ") + "))"
	default:
		c = "FALSE"
	}
	if null {
		c = "(" + c + " OR (" + x + " IS NULL))"
	}
	return c, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// constHistogram is a dialect whose Histogram needs its argument to read
// a column (PostgreSQL's array_agg inside a sub-select's FROM is an
// aggregate of the outer query only when its argument refers to it):
// ConstHistogram(bin) is Histogram's value for a bin the same on every
// row, the group's one bin and its number of rows.
type constHistogram interface{ ConstHistogram(bin string) string }

// readsColumn reports whether e refers to a column.
func readsColumn(e *Expr) bool {
	if e.Op == OpColumn {
		return true
	}
	for _, a := range e.Args {
		if readsColumn(a) {
			return true
		}
	}
	return false
}

// nullIn is a dialect whose x IN (…) is not NULL for a NULL x (and
// whose NOT IN would then match it): NullIn(x, c) is c kept NULL for a
// NULL x, as in DuckDB.
type nullIn interface{ NullIn(x, c string) string }

// printer writes row expressions in a dialect. Every operation is
// parenthesised, so the printed text never depends on the engine's
// precedence rules (and a negative literal never follows a minus sign).
//
// cols, when set, are the expressions of the columns over the statement's
// table (an inlined projection, inliner); a column outside it is an error
// (the projection holds the registered columns only).
type printer struct {
	d    Dialect
	cols map[string]string
}

var opText = map[Op]string{
	OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/",
	OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=",
}

func (p *printer) expr(e *Expr) (string, error) {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		s, err := p.expr(a)
		if err != nil {
			return "", err
		}
		args[i] = s
	}
	d := p.d
	switch e.Op {
	case OpColumn:
		c := d.Ident(e.Column)
		if p.cols != nil {
			x, ok := p.cols[e.Column]
			if !ok {
				return "", fmt.Errorf("sqlplan: the column %q is not in the table reference", e.Column)
			}
			if x != c {
				c = "(" + x + ")"
			}
		}
		// Numeric columns compute in DOUBLE: integer arithmetic could
		// overflow (an error on the data), and key domains are
		// enumerated in float64.
		if e.Type == TypeNumber {
			return d.Float(c), nil
		}
		return c, nil
	case OpLiteral:
		switch e.Value.Kind {
		case ValueNumber:
			if !finite(e.Value.Num) {
				return "", fmt.Errorf("sqlplan: the literal %g is not finite", e.Value.Num)
			}
			return d.Num(e.Value.Num), nil
		case ValueString:
			if strings.ContainsRune(e.Value.Str, 0) {
				return "", errors.New("sqlplan: a string literal holds a NUL byte")
			}
			return d.Str(e.Value.Str), nil
		}
		return "NULL", nil
	case OpNeg:
		return "(-" + args[0] + ")", nil
	case OpAdd, OpSub, OpMul, OpDiv:
		return d.Arith(opText[e.Op], args[0], args[1]), nil
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		return "(" + args[0] + " " + opText[e.Op] + " " + args[1] + ")", nil
	case OpAnd:
		return "(" + strings.Join(args, " AND ") + ")", nil
	case OpOr:
		return "(" + strings.Join(args, " OR ") + ")", nil
	case OpNot:
		return "(NOT " + args[0] + ")", nil
	case OpIn, OpNotIn:
		in := " IN ("
		if e.Op == OpNotIn {
			in = " NOT IN ("
		}
		c := "(" + args[0] + in + strings.Join(args[1:], ", ") + "))"
		if n, ok := d.(nullIn); ok {
			c = n.NullIn(args[0], c)
		}
		return c, nil
	case OpBetween:
		return "(" + args[0] + " BETWEEN " + args[1] + " AND " + args[2] + ")", nil
	case OpIsNull:
		return "(" + args[0] + " IS NULL)", nil
	case OpIsNotNull:
		return "(" + args[0] + " IS NOT NULL)", nil
	case OpCase:
		var b strings.Builder
		b.WriteString("CASE")
		for i := 0; i+1 < len(args); i += 2 {
			b.WriteString(" WHEN " + args[i] + " THEN " + args[i+1])
		}
		b.WriteString(" ELSE " + args[len(args)-1] + " END")
		return b.String(), nil
	case OpCoalesce:
		return "coalesce(" + strings.Join(args, ", ") + ")", nil
	case OpCast:
		if e.Cast == TypeString {
			if e.Args[0].Type == TypeString {
				return args[0], nil
			}
			return d.ToText(args[0]), nil
		}
		return d.ToNumber(args[0], e.Args[0].Type == TypeString, e.Int), nil
	case OpFunc:
		switch e.Func {
		case "ln":
			return d.Ln(args[0]), nil
		case "year", "month", "day":
			return d.DatePart(e.Func, args[0]), nil
		case "date_part":
			return d.DatePart(e.Args[0].Value.Str, args[1]), nil
		case "round":
			if len(args) == 2 {
				// The digits are an integer literal (checked by Plan).
				dg, _ := number(e.Args[1])
				args[1] = strconv.Itoa(int(dg))
			}
			return d.Func("round", args), nil
		case "exp", "abs", "floor", "ceil", "least", "greatest":
			return d.Func(e.Func, args), nil
		}
	}
	return "", fmt.Errorf("sqlplan: cannot print %v", e.Op)
}
