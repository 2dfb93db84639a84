package release

// The column analyses on the data engine (issue 27, "one path"):
// private_count, private_sum, private_mean(col=), private_histogram and
// private_quantile, with by= and on filter subsets, are small private SQL
// queries. Each planner builds its data pass as a dsl/sqlplan plan from
// public facts only (the column's bounds or domain, the by column's
// domain, the subset's filters, max_groups), before the charge; the run
// executes the printed statement through private_sql's own code
// (querySQL, fillSQL), which returns exact per-group aggregates (counts,
// clamped sums on the fixed-point grid, the quantile's binned counts),
// and hands them to the mechanism's existing noise step
// (tabular's Release methods). Clamping, grouping and filtering are then
// done by the engine only, by the rules Data.Columns documents: a numeric
// value clamped to its public bounds, a categorical value as the index of
// its category (the domain's length for "other", which a snapshot stores
// as NULL), a filter comparing those.
//
// On user-level data the counts and histograms bound each user to their
// first max_groups groups (sqlplan.Bound, one row per group); a sum, mean
// or quantile aggregates one term per user (and group), the mean of the
// user's clamped values, which an inner statement computes from the
// user's exact grid sum and row count (tabUserTerm).
//
// The same plans run on a dataset in a live table (PostgreSQL,
// ClickHouse), printed in its dialect (dialectOf); each is printed there
// before the charge (engineFacts.checkPass), so that a plan the dialect
// cannot print is refused instead of failing after the charge. Data held
// in memory (the registry's memory format, a cell's synthetic data) run
// here too, on a memory table with a snapshot's columns (memtables.go).
//
// What still reads rows (Data.Columns): a build without the data engine,
// and a plan the printer cannot print (bounds too close to 0 for the
// sums' grid), which a live table therefore refuses before the charge.
// Every kind of data held in memory has a memory table (memoryRowsOf says
// why no producer makes categorical or matrix data in memory). A count of
// a whole dataset runs no statement on any engine: it takes the number
// of rows or users the data know (unitCount).

import (
	"context"
	"math"
	"math/big"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// tabPass is a column analysis's data pass: one planned statement and how
// to read its result.
type tabPass struct {
	sp     *sqlplan.Plan
	rels   []sqlRelease // what fillSQL reads per aggregate (vectors' count; quantile grid)
	groups int          // the keys' domain size, 1 without a key
	// inner is a user-level pass's statement of per-user terms, which sp
	// aggregates (nil: sp reads the table).
	inner *sqlplan.Plan
}

// Expression builders: every node carries the type Plan would infer, so
// that the printer casts numeric columns to DOUBLE as it does for a
// parsed query.
func tabCol(name string, t sqlplan.Type) *sqlplan.Expr {
	return &sqlplan.Expr{Op: sqlplan.OpColumn, Column: name, Type: t}
}

func tabNum(x float64) *sqlplan.Expr {
	return &sqlplan.Expr{Op: sqlplan.OpLiteral, Value: sqlplan.Number(x), Type: sqlplan.TypeNumber}
}

func tabOp(op sqlplan.Op, t sqlplan.Type, args ...*sqlplan.Expr) *sqlplan.Expr {
	return &sqlplan.Expr{Op: op, Type: t, Args: args}
}

func tabFunc(name string, args ...*sqlplan.Expr) *sqlplan.Expr {
	return &sqlplan.Expr{Op: sqlplan.OpFunc, Func: name, Type: sqlplan.TypeNumber, Args: args}
}

// tabFalse is a condition no row meets.
func tabFalse() *sqlplan.Expr { return tabOp(sqlplan.OpEq, sqlplan.TypeBool, tabNum(0), tabNum(1)) }

// tabValue is column col's value as Data.Columns gives it: a categorical
// column's category index (CASE over its public domain; NULL and every
// value outside the domain fall to ELSE, "other" = the domain's length),
// a numeric column clamped to its public bounds when it has some.
func tabValue(sc ledger.Schema, col string) *sqlplan.Expr {
	if dom, ok := sc.Categorical[col]; ok {
		c := &sqlplan.Expr{Op: sqlplan.OpCase, Type: sqlplan.TypeNumber}
		for i, v := range dom {
			when := tabOp(sqlplan.OpEq, sqlplan.TypeBool, tabCol(col, sqlplan.TypeString),
				&sqlplan.Expr{Op: sqlplan.OpLiteral, Value: sqlplan.String(v), Type: sqlplan.TypeString})
			c.Args = append(c.Args, when, tabNum(float64(i)))
		}
		c.Args = append(c.Args, tabNum(float64(len(dom))))
		if len(dom) == 0 {
			return tabNum(0)
		}
		return c
	}
	x := tabCol(col, sqlplan.TypeNumber)
	if b, ok := sc.Bounds[col]; ok {
		x = tabClamp(x, b[0], b[1])
	}
	return x
}

// tabClamp is least(greatest(x, lo), hi).
func tabClamp(x *sqlplan.Expr, lo, hi float64) *sqlplan.Expr {
	return tabFunc("least", tabFunc("greatest", x, tabNum(lo)), tabNum(hi))
}

var tabCompare = map[string]sqlplan.Op{"==": sqlplan.OpEq, "!=": sqlplan.OpNe, "<": sqlplan.OpLt, "<=": sqlplan.OpLe, ">": sqlplan.OpGt, ">=": sqlplan.OpGe}

// tabWhere is a subset's filters as the statement's WHERE (nil for the
// registered dataset): each compares the value of tabValue (over the
// registered schema) with the filter's value, as derive's pass does. A
// snapshot's values are finite (the registration refuses or drops other
// rows), so a filter with a non-finite value has the same outcome on
// every row: it is folded to no condition or to FALSE, since the printer
// writes finite literals only.
func tabWhere(src Ref) (*sqlplan.Expr, error) {
	dv := src.Derived
	if dv == nil {
		return nil, nil
	}
	var conds []*sqlplan.Expr
	for _, f := range dv.Filters {
		op, ok := tabCompare[f.Op]
		if !ok {
			return nil, Errorf(NameArgumentError, "filter: op=%q: use one of ==, !=, <, <=, >, >=", f.Op)
		}
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) {
			if !(&filtered{filters: []Filter{f}}).pass([]float64{0}) {
				return tabFalse(), nil
			}
			continue
		}
		conds = append(conds, tabOp(op, sqlplan.TypeBool, tabValue(dv.ParentSchema, f.Column), tabNum(f.Value)))
	}
	switch len(conds) {
	case 0:
		return nil, nil
	case 1:
		return conds[0], nil
	}
	return tabOp(sqlplan.OpAnd, sqlplan.TypeBool, conds...), nil
}

// tabKey is the by column's (or a categorical histogram's) key: the
// category, over the domain's categories and, when other is set, NULL,
// which is how a snapshot stores "other" (the registration turns every
// value outside the domain, and a missing one, into NULL). Grouping by
// the column itself, rather than by its index (tabValue), saves the
// engine a CASE per row; the groups are the same, in the same order. The
// key is Closed (sqlplan.Key) as private_sql's keys over a registered
// dataset are: its domain is the column's whole declared domain, and a
// registered dataset's table reads every other value as NULL, so the
// statement tests a row's key for NULL at most, rather than against the
// list of categories (which cost by= twice the engine's grouped sum).
func tabKey(sc ledger.Schema, col string, other bool) sqlplan.Key {
	k := sqlplan.Key{Name: col, Expr: tabCol(col, sqlplan.TypeString), Source: sqlplan.FromCaller, Closed: true}
	for _, c := range sc.Categorical[col] {
		k.Domain = append(k.Domain, sqlplan.String(c))
	}
	if other {
		k.Domain = append(k.Domain, sqlplan.Value{Kind: sqlplan.ValueNull})
	}
	return k
}

// tabBinKey is a numeric histogram's key: the bin of tabular's
// NumericBins, the last j with e_j ≤ v for v, the column's value clamped
// to its bounds. The edges are NumericBins' own float64 values, printed
// exactly, so the engine computes no quotient whose rounding could move
// a value across an edge: it only compares. The comparisons form a
// balanced tree, about log₂ n of them per row, each with an interior
// edge lo < e_m < hi, where clamping changes no comparison: x < lo,
// −inf included, is below every interior edge as lo is; x > hi, +inf and
// NaN (above every number in the engines' order, as the clamp sends it
// to hi) are above it as hi is. So the tree compares the column itself,
// and a NULL, out of every bin as NaN is on the row path, stays NULL.
// (An expression computed from the clamped value, nested several levels
// deep, is what PostgreSQL's dialect writes out in full: minutes on a
// few thousand rows.)
func tabBinKey(col string, bins *tabular.NumericBins) sqlplan.Key {
	v := tabCol(col, sqlplan.TypeNumber)
	edges := bins.Edges()
	var tree func(a, b int) *sqlplan.Expr // the bin of v, known to be in a..b
	tree = func(a, b int) *sqlplan.Expr {
		if a == b {
			return tabNum(float64(a))
		}
		m := (a + b + 1) / 2 // v < e_m: bins a..m−1; else m..b
		return &sqlplan.Expr{Op: sqlplan.OpCase, Type: sqlplan.TypeNumber, Args: []*sqlplan.Expr{
			tabOp(sqlplan.OpLt, sqlplan.TypeBool, v, tabNum(edges[m])), tree(a, m-1), tree(m, b)}}
	}
	n := bins.Len()
	bin := &sqlplan.Expr{Op: sqlplan.OpCase, Type: sqlplan.TypeNumber, Args: []*sqlplan.Expr{
		tabOp(sqlplan.OpIsNull, sqlplan.TypeBool, v), {Op: sqlplan.OpLiteral, Value: sqlplan.Value{Kind: sqlplan.ValueNull}, Type: sqlplan.TypeNull},
		tree(0, n-1)}}
	k := sqlplan.Key{Name: col, Expr: bin, Source: sqlplan.FromCaller}
	for j := range n {
		k.Domain = append(k.Domain, sqlplan.Number(float64(j)))
	}
	return k
}

// tabSum is the clamped sum of column col over [lo, hi].
func tabSum(col string, lo, hi float64) sqlplan.Aggregate {
	return tabSumOf(tabCol(col, sqlplan.TypeNumber), lo, hi)
}

// tabSumOf is the clamped sum of x over [lo, hi].
func tabSumOf(x *sqlplan.Expr, lo, hi float64) sqlplan.Aggregate {
	return sqlplan.Aggregate{Name: "sum", Kind: sqlplan.Sum, Arg: x, Lo: lo, Hi: hi, Bounds: sqlplan.FromSchema}
}

// newTabPass plans a pass: keys (at most one), aggregates, and on
// user-level data a bound of k groups and one row per group for each
// user (the grouped counts' rule). The statement is printed once here,
// from public facts: a plan the printer cannot print (or one on a
// user-level dataset whose column names hide the row positions,
// tabEngine) gives no pass (nil), and the call reads rows as before.
func newTabPass(src Ref, keys []sqlplan.Key, aggs []sqlplan.Aggregate, k int, qp *tabular.QuantilePlan) (*tabPass, error) {
	where, err := tabWhere(src)
	if err != nil {
		return nil, err
	}
	sp := &sqlplan.Plan{Where: where, Keys: keys, Aggregates: aggs}
	for i := range keys {
		sp.Outputs = append(sp.Outputs, sqlplan.Output{Key: i, Agg: -1})
	}
	t := &tabPass{sp: sp, groups: 1}
	for _, key := range keys {
		t.groups *= len(key.Domain)
	}
	for i, ag := range aggs {
		sp.Outputs = append(sp.Outputs, sqlplan.Output{Key: -1, Agg: i})
		r := sqlRelease{agg: ag, vecs: make([]sqlVector, 1)}
		if ag.Kind == sqlplan.Quantile {
			r.vecs, r.qp = nil, qp
		}
		t.rels = append(t.rels, r)
	}
	if k > 0 {
		sp.Bound = &sqlplan.Bound{Unit: registeredSchema(src).UserColumn, Groups: k, Rows: 1}
	}
	if !tabEngine(src) {
		return nil, nil
	}
	if _, err := sqlplan.Print(sp, sqlplan.DuckDB, "T"); err != nil {
		// Bounds too close to 0 for the sums' fixed-point grid
		// (sqlplan.GridOf), which tabular's float sums take: such a call
		// keeps the row path rather than gaining a refusal.
		return nil, nil
	}
	return t, nil
}

// registeredSchema is the schema of the registered dataset a source
// reads: its own, or a subset's parent's.
func registeredSchema(src Ref) ledger.Schema {
	if src.Derived != nil {
		return src.Derived.ParentSchema
	}
	return src.Schema
}

// tabEngine reports whether a call on src can run in the data engine: on
// user-level data the snapshot's table reference names the engine's row
// positions (file_row_number, the order in which a user's rows are
// bounded), which a column of that name hides, so that every statement
// over it would fail (private_sql refuses such a dataset; here the row
// path serves it).
func tabEngine(src Ref) bool {
	sc := registeredSchema(src)
	return sc.Unit != "user" || !sqlHasColumn(sc, "file_row_number")
}

// exact runs the pass's statement (private_sql's querySQL) and reads its
// rows (fillSQL): exact[i][g] is aggregate i's exact value at group g (a
// count, or a sum scaled from grid steps to the value's units, rounded
// once to float64), hists[i][g] a quantile's histogram. As in private_sql,
// an engine failure (whose message is never shown) leaves every aggregate
// 0, so the release is the noise alone, data-independent.
func (t *tabPass) exact(ctx context.Context, d *Data) (exact [][]float64, hists [][][]binCount, err error) {
	if t.inner != nil {
		d = &Data{Schema: d.Schema, SQL: nestedSQL{d.SQL, t.inner}, derived: true}
	}
	rows, qerr := querySQL(ctx, d, t.sp)
	if qerr != nil && ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	keyRows := sqlGroups(t.sp, t.groups)
	index := make(map[string]int, len(keyRows))
	for g, r := range keyRows {
		k, _ := groupKey(r)
		index[k] = g
	}
	vecs := make([][][]float64, len(t.rels))
	hists = make([][][]binCount, len(t.rels))
	for i, r := range t.rels {
		vecs[i] = [][]float64{make([]float64, t.groups)}
		if r.qp != nil {
			hists[i] = make([][]binCount, t.groups)
		}
	}
	if qerr != nil || !fillSQL(rows, t.sp, t.rels, index, vecs, hists) {
		for i := range vecs {
			clear(vecs[i][0])
			clear(hists[i])
		}
	}
	exact = make([][]float64, len(t.rels))
	for i, r := range t.rels {
		exact[i] = vecs[i][0]
		if r.agg.Kind == sqlplan.Sum {
			g, err := sqlplan.GridOf(r.agg)
			if err != nil {
				return nil, nil, err // planned: cannot happen
			}
			for j := range exact[i] {
				exact[i][j] *= g.Step // a power of two: exact
			}
		}
	}
	return exact, hists, nil
}

// tabTotal is the total of exact per-group sums, each a correctly
// rounded float64 of an exact integer: accumulated exactly and rounded
// once. Each conversion is within 2^-53 of its sum and the total of the
// exact sums is at most MaxRows·m in magnitude, so the total is within
// 2·2^-53·MaxRows·m of the exact one — below tabular.SumExcess(m), which
// the plan charges for it.
func tabTotal(sums []float64) float64 {
	acc := new(big.Float).SetPrec(2200) // exact for any float64s: 2^1024 down to 2^-1074, and 2^100 of them
	for _, s := range sums {
		acc.Add(acc, new(big.Float).SetFloat64(s))
	}
	f, _ := acc.Float64()
	return f
}

// histogram reads a quantile's histogram of group g into a dense buffer
// of its grid (a fresh one).
func tabHistogram(h []binCount, grid int) []int32 {
	buf := make([]int32, grid+1)
	for _, bc := range h {
		buf[bc.bin] = bc.count
	}
	return buf
}

// usable reports whether the pass runs on d: the data have a SQL engine
// (a snapshot, or data in memory loaded as a memory table).
func (t *tabPass) usable(d *Data) bool { return t != nil && d != nil && d.SQL != nil }

// tabCountPass is an ungrouped private_count's pass: its rows, or on
// user-level data its distinct users (COUNT(DISTINCT unit)). A
// snapshot's whole count needs no statement (tabUnitCount takes it from
// the verified metadata), but a live table's has no metadata: the
// statement counts it there.
func tabCountPass(src Ref) (*tabPass, error) {
	ag := sqlplan.Aggregate{Name: "n", Kind: sqlplan.Count}
	if src.Schema.Unit == "user" {
		ag = sqlplan.Aggregate{Name: "users", Kind: sqlplan.CountDistinct, Arg: tabCol(registeredSchema(src).UserColumn, sqlplan.TypeString)}
	}
	return newTabPass(src, nil, []sqlplan.Aggregate{ag}, 0, nil)
}

// tabUnitCount is the count of privacy units a count releases: as
// unitCount takes it from data with rows that are not a subset (a
// snapshot's metadata, or data in memory), else from the pass's
// statement (a subset, or a live table, which has no rows here).
func tabUnitCount(ctx context.Context, d *Data, t *tabPass) (int, error) {
	if !t.usable(d) || (d.Rows != nil && !d.derived) {
		return unitCount(ctx, d)
	}
	ex, _, err := t.exact(ctx, d)
	if err != nil {
		return 0, err
	}
	return int(ex[0][0]), nil
}

// nestedSQL is a reader whose table is a statement over another reader's
// table: a user-level pass's per-user terms, which the outer statement
// aggregates (querySQL prints the outer plan over Table()).
type nestedSQL struct {
	SQLReader
	inner *sqlplan.Plan
}

// Dialect is the outer reader's: the outer statement is printed in the
// dialect of the engine that runs it (dialectOf), as the inner one.
func (n nestedSQL) Dialect() sqlplan.Dialect { return dialectOf(n.SQLReader) }

func (n nestedSQL) Table() string {
	return nestedTable(n.inner, dialectOf(n.SQLReader), n.SQLReader.Table())
}

// nestedTable is inner printed over table in dialect d as a table
// reference of the outer statement: aliased, which PostgreSQL (before
// 16) requires of a subquery in FROM.
func nestedTable(inner *sqlplan.Plan, d sqlplan.Dialect, table string) string {
	st, err := sqlplan.Print(inner, d, table)
	if err != nil {
		// Printed before the charge (newTabUserPass, and on a live
		// table engineFacts.checkPass in its dialect): cannot happen; a
		// table that fails makes the statement fail, a fixed outcome.
		return "(SELECT)"
	}
	return "(" + st.SQL + ") AS " + d.Ident("__pn_users")
}

// tabUserTerm is the inner statement of a user-level sum, mean or
// quantile, and the expression of its term over the inner's columns. Its
// rows are the users (with by, each user's first k groups in row order,
// sqlplan.Bound with every row of a group kept), each with the number of
// its rows n and the exact sum of their clamped values on the grid; the
// term is that sum over n, the mean of the user's clamped values, which
// the outer aggregate clamps again (tabular's rule: one value per user
// and group, in [lo, hi]).
func tabUserTerm(src Ref, c tabColumn, by *sqlplan.Key, k int) (inner *sqlplan.Plan, term *sqlplan.Expr, byCol string, err error) {
	where, err := tabWhere(src)
	if err != nil {
		return nil, nil, "", err
	}
	unit := registeredSchema(src).UserColumn
	sum := tabSum(c.name, c.lo, c.hi)
	inner = &sqlplan.Plan{Where: where, Keys: []sqlplan.Key{{Name: "unit", Expr: tabCol(unit, sqlplan.TypeString), Source: sqlplan.PartitionSelection}},
		Aggregates: []sqlplan.Aggregate{sum}, Outputs: []sqlplan.Output{{Key: 0, Agg: -1}, {Key: -1, Agg: 0}}}
	if by != nil {
		inner.Keys = append(inner.Keys, *by)
		inner.Outputs = append(inner.Outputs, sqlplan.Output{Key: 1, Agg: -1})
		inner.Bound = &sqlplan.Bound{Unit: unit, Groups: k, Rows: sqlplan.MaxRows}
	}
	st, err := sqlplan.Print(inner, sqlplan.DuckDB, "T")
	if err != nil {
		return nil, nil, "", err
	}
	var n, s string
	for _, col := range st.Columns {
		switch {
		case col.Role == sqlplan.RoleRows:
			n = col.Name
		case col.Role == sqlplan.RoleSum:
			s = col.Name
		case col.Role == sqlplan.RoleKey && col.Index == 1:
			byCol = col.Name
		}
	}
	g, err := sqlplan.GridOf(sum)
	if err != nil {
		return nil, nil, "", err
	}
	term = tabOp(sqlplan.OpDiv, sqlplan.TypeNumber, tabOp(sqlplan.OpMul, sqlplan.TypeNumber, tabCol(s, sqlplan.TypeNumber), tabNum(g.Step)), tabCol(n, sqlplan.TypeNumber))
	return inner, term, byCol, nil
}

// newTabUserPass is the pass of a user-level sum, mean or quantile: aggs
// (given the term) over the users' terms, grouped by by's key when by is
// set. Like newTabPass, a plan that cannot be printed gives no pass.
func newTabUserPass(src Ref, c tabColumn, by *sqlplan.Key, k int, aggs func(term *sqlplan.Expr) []sqlplan.Aggregate, qp *tabular.QuantilePlan) (*tabPass, error) {
	if !tabEngine(src) {
		return nil, nil
	}
	inner, term, byCol, err := tabUserTerm(src, c, by, k)
	if err != nil {
		return nil, nil
	}
	outer := src
	outer.Derived = nil // the filters are the inner statement's
	var keys []sqlplan.Key
	if by != nil {
		keys = []sqlplan.Key{{Name: by.Name, Expr: tabCol(byCol, by.Expr.Type), Source: sqlplan.FromCaller, Domain: by.Domain}}
	}
	t, err := newTabPass(outer, keys, aggs(term), 0, qp)
	if t != nil {
		t.inner = inner
	}
	return t, err
}
