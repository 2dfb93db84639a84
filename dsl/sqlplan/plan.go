package sqlplan

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Kind is the kind of a dataset column in its public schema.
type Kind int

// The column kinds.
const (
	// Numeric columns take part in arithmetic and aggregates; their
	// declared bounds (if any) clamp aggregates without explicit bounds
	// and give floor(col / c) its key domain.
	Numeric Kind = iota
	// Categorical columns are strings with a declared, public list of
	// categories: a GROUP BY key over one has that list as its domain.
	Categorical
	// Text columns are free strings: usable in comparisons and as keys
	// found by partition selection.
	Text
	// Date columns feed the date-part functions.
	Date
)

// Column is one column's public facts, as the data owner declared them.
type Column struct {
	Name       string
	Kind       Kind
	Bounded    bool    // Lo, Hi are declared (Numeric only)
	Lo, Hi     float64 // the declared bounds
	Categories []string
	// Closed (Categorical only) says the table holds no value outside
	// Categories: each other value reads as NULL, as a snapshot stores it
	// and a live table's projection reads it. A key over the column then
	// lies in its domain exactly when it is not NULL, which the printer
	// tests instead of matching the list per row.
	Closed bool
}

// Schema is a dataset's public schema: everything Plan may know.
type Schema struct {
	Columns []Column
	// Unit is the privacy-unit column (user-level data), "" when every
	// row is its own unit.
	Unit string
}

// Options are the caller's public inputs to planning.
type Options struct {
	// Keys gives a group key's domain by the key's output name (its
	// alias, or the column's name): the keys= keyword of private_sql.
	Keys map[string][]Value
	// MaxGroups and MaxRows bound each privacy unit's contribution on
	// user-level data (Schema.Unit set): a unit keeps its first MaxGroups
	// distinct groups and, in each, its first MaxRows rows (see Bound).
	// 0 asks for no bounding, for a caller that bounds otherwise or
	// releases only COUNT(DISTINCT unit); on row-level data (no Unit)
	// each must be 0 or 1, since a row is its own unit in one group.
	MaxGroups, MaxRows int
}

// Bound is a plan's contribution bounding on user-level data. Among the
// rows that pass WHERE and whose keys lie in their public domains, each
// unit keeps the rows of its first Groups distinct groups, ordered by the
// group's first row, and in each of them its first Rows rows, "first" in
// the snapshot's row order (the column RowColumn of the table reference).
// The rule reads only the unit's own rows, so adding, removing or
// replacing one unit changes at most Groups groups by at most Rows rows
// each (twice that many groups under replace-one), which the noise step's
// sensitivities assume.
type Bound struct {
	Unit         string // the privacy-unit column
	Groups, Rows int
}

// RowColumn is the column of a bounded plan's table reference that holds
// each row's position in the snapshot (DuckDB's file_row_number of the
// snapshot's Parquet file): a deterministic order that no other unit's
// rows can change. The reserved prefix keeps it apart from data columns.
const RowColumn = "__pn_row"

// MaxKeys bounds the domain a key's enumeration (floor over bounds) may
// have, and MaxGroups the number of groups of the cross product of all
// keys' domains. Beyond them the query is refused: every listed group is
// released (with noise), so a huge domain is a huge, mostly empty table.
const (
	MaxKeys   = 10_000
	MaxGroups = 1_000_000
)

// MaxUserGroups and MaxUserRows bound Options.MaxGroups and MaxRows. The
// sensitivities grow linearly with them, so beyond them the noise
// outweighs any group's value: with public keys max_groups is also at
// most the number of groups; 1000 rows per group of one unit give a
// COUNT noise of 1000 rows per unit of 1/ε, and a quantile a rank error
// of as many (clamp or pre-aggregate instead).
const (
	MaxUserGroups = MaxKeys
	MaxUserRows   = 1000
)

// DomainSource says where a group key's public domain came from.
type DomainSource int

// The sources of key domains.
const (
	// PartitionSelection: no public domain; keys must be chosen by
	// differentially private partition selection (the call needs δ > 0).
	PartitionSelection DomainSource = iota
	FromCategories                  // the owner's declared categories
	FromCase                        // the literal results of a CASE
	FromBounds                      // floor over a bounded numeric column
	FromCaller                      // the caller's keys= list
)

func (s DomainSource) String() string {
	return [...]string{"partition selection", "declared categories", "CASE results", "column bounds", "keys="}[s]
}

// Key is one GROUP BY key.
type Key struct {
	Name   string // output name
	Expr   *Expr
	Source DomainSource
	Domain []Value // nil when Source is PartitionSelection
	// Closed marks a key that is a Closed categorical column over its
	// whole declared domain: in the domain exactly when not NULL.
	Closed bool
}

// AggKind is the kind of an aggregate release.
type AggKind int

// The aggregate kinds.
const (
	Count AggKind = iota
	CountDistinct
	Sum
	Avg
	Variance
	Stddev
	Quantile
)

func (k AggKind) String() string {
	return [...]string{"COUNT", "COUNT DISTINCT", "SUM", "AVG", "VARIANCE", "STDDEV", "QUANTILE"}[k]
}

// BoundsSource says where an aggregate's clamping bounds came from.
type BoundsSource int

// The sources of clamping bounds.
const (
	NoBounds   BoundsSource = iota // COUNT needs none
	FromQuery                      // the analyst's lo, hi in the call
	FromSchema                     // the owner's declared bounds
)

// Aggregate is one release.
type Aggregate struct {
	Name   string // output name
	Kind   AggKind
	Arg    *Expr // nil for COUNT(*); the unit column for COUNT DISTINCT
	Lo, Hi float64
	Bounds BoundsSource
	Q      float64 // Quantile's q (0.5 for MEDIAN)
	// Bins is a Quantile's public grid: the exponential mechanism's
	// output is one of the points Lo + k·(Hi − Lo)/Bins, k = 0…Bins, and
	// the statement returns per group the histogram of the clamped values
	// on them (QuantileGrid). Plan leaves it 0; the caller sets it from
	// the mechanism's plan (release: tabular.PlanQuantile) before Print.
	Bins int
	// SharedHist marks a Quantile whose histogram is that of an earlier
	// Quantile of the same argument, bounds and grid: 1 + that
	// aggregate's index (0: its own). The statement computes the
	// histogram once, for the first; the caller sets it where one
	// release reads the histogram for several quantiles (release's joint
	// quantiles).
	SharedHist int
}

// Output is one column of the released table, in SELECT order: a key
// (Key ≥ 0) or an aggregate (Agg ≥ 0); the other index is -1.
type Output struct{ Key, Agg int }

// Plan is a query planned from public facts.
type Plan struct {
	Server, Dataset string
	Where           *Expr // nil: every row
	Keys            []Key
	Aggregates      []Aggregate
	Outputs         []Output
	// Bound is the contribution bounding on user-level data, nil on
	// row-level data (Options.MaxGroups 0).
	Bound *Bound
}

// PartitionSelection reports whether the released groups must be chosen
// by DP partition selection (some key has no public domain): the call
// then needs δ > 0.
func (p *Plan) PartitionSelection() bool {
	for _, k := range p.Keys {
		if k.Source == PartitionSelection {
			return true
		}
	}
	return false
}

// planner holds the state of one Plan call.
type planner struct {
	cols  map[string]Column
	unit  string
	items []item
}

// Plan checks q against the dataset's public schema and plans it.
func (q *Query) Plan(s Schema, opt Options) (*Plan, error) {
	pl := &planner{cols: map[string]Column{}, unit: s.Unit, items: q.items}
	for _, c := range s.Columns {
		pl.cols[c.Name] = c
	}
	p := &Plan{Server: q.Server, Dataset: q.Dataset}
	if q.where != nil {
		t, err := pl.typeOf(q.where)
		if err != nil {
			return nil, err
		}
		if t != TypeBool {
			return nil, refuse("WHERE "+q.where.String(), q.where.pos, "WHERE needs a condition (a comparison, IN, BETWEEN, IS NULL, AND/OR/NOT), not a %s value", t)
		}
		p.Where = q.where
	}
	// Group keys: GROUP BY may name a SELECT alias, as in DuckDB.
	names := map[string]bool{}
	for _, g := range q.groups {
		if g.Op == OpColumn {
			if _, isCol := pl.cols[g.Column]; !isCol {
				for _, it := range q.items {
					if it.alias == g.Column && it.expr.Op != opAgg {
						g = it.expr
						break
					}
				}
			}
		}
		if _, err := pl.typeOf(g); err != nil {
			return nil, err
		}
		for _, k := range p.Keys {
			if Equal(k.Expr, g) {
				return nil, refuse("GROUP BY "+g.String(), g.pos, "this key is listed twice")
			}
		}
		p.Keys = append(p.Keys, Key{Expr: g, Name: "key_" + strconv.Itoa(len(p.Keys)+1)})
	}
	for i, it := range q.items {
		if it.expr.Op == opAgg {
			a, err := pl.aggregate(it.expr, it.alias, i)
			if err != nil {
				return nil, err
			}
			p.Outputs = append(p.Outputs, Output{Key: -1, Agg: len(p.Aggregates)})
			p.Aggregates = append(p.Aggregates, a)
			continue
		}
		k := -1
		for j := range p.Keys {
			if Equal(p.Keys[j].Expr, it.expr) {
				k = j
				break
			}
		}
		if k < 0 {
			if _, err := pl.typeOf(it.expr); err != nil {
				return nil, err
			}
			return nil, refuse(it.expr.String(), it.expr.pos, "every SELECT item that is not an aggregate must be a GROUP BY expression; add it to GROUP BY or aggregate it")
		}
		switch {
		case it.alias != "":
			p.Keys[k].Name = it.alias
		case it.expr.Op == OpColumn:
			p.Keys[k].Name = it.expr.Column
		}
		p.Outputs = append(p.Outputs, Output{Key: k, Agg: -1})
	}
	if len(p.Aggregates) == 0 {
		return nil, refuse("SELECT", -1, "a private query releases aggregates: add one, e.g. COUNT(*) or AVG(col, lo, hi)")
	}
	// Keys not in the SELECT list keep their column name when they are one.
	for i := range p.Keys {
		if p.Keys[i].Name == "key_"+strconv.Itoa(i+1) && p.Keys[i].Expr.Op == OpColumn {
			p.Keys[i].Name = p.Keys[i].Expr.Column
		}
	}
	for _, o := range p.Outputs {
		n := ""
		if o.Key >= 0 {
			n = p.Keys[o.Key].Name
		} else {
			n = p.Aggregates[o.Agg].Name
		}
		if names[n] {
			return nil, refuse("output "+strconv.Quote(n), -1, "two outputs have this name; give them distinct aliases (AS name)")
		}
		names[n] = true
	}
	for name := range opt.Keys {
		found := false
		for _, k := range p.Keys {
			found = found || k.Name == name
		}
		if !found {
			return nil, refuse("keys="+strconv.Quote(name), -1, "no GROUP BY key has this name; the keys are named by their alias or column")
		}
	}
	groups := 1.0
	for i := range p.Keys {
		if err := pl.domain(&p.Keys[i], opt.Keys); err != nil {
			return nil, err
		}
		if p.Keys[i].Source != PartitionSelection {
			groups *= float64(len(p.Keys[i].Domain))
		}
	}
	if groups > MaxGroups {
		return nil, refuse("GROUP BY", -1, "the keys' public domains make %.0f groups, more than %d; coarsen a key (e.g. floor(col / 10)) or give a shorter keys= list", groups, MaxGroups)
	}
	if err := planBound(p, s.Unit, opt, groups); err != nil {
		return nil, err
	}
	return p, nil
}

// planBound checks the contribution bounds and sets p.Bound: on row-level
// data only 1 (or 0, unset); on user-level data 1..MaxUserRows rows and
// 1..the number of groups (at most MaxUserGroups under partition
// selection, where the groups are the data's).
func planBound(p *Plan, unit string, opt Options, groups float64) error {
	k, r := opt.MaxGroups, opt.MaxRows
	if unit == "" {
		if k > 1 || r > 1 || k < 0 || r < 0 {
			return refuse(fmt.Sprintf("max_groups=%d, max_rows=%d", k, r), -1, "the dataset is row-level: every row is its own unit, in one group; leave max_groups and max_rows out")
		}
		return nil
	}
	if k == 0 && r == 0 {
		return nil
	}
	limit := MaxUserGroups
	what := "the most groups a unit may reach when the groups are chosen by partition selection"
	if !p.PartitionSelection() && groups < float64(limit) {
		limit = int(groups)
		what = "the number of groups of the keys' public domains"
	}
	if k < 1 || k > limit {
		return refuse(fmt.Sprintf("max_groups=%d", k), -1, "max_groups must be an integer from 1 to %d, %s", limit, what)
	}
	if r < 1 || r > MaxUserRows {
		return refuse(fmt.Sprintf("max_rows=%d", r), -1, "max_rows must be an integer from 1 to %d (the noise grows with it; clamp the values or aggregate per unit instead)", MaxUserRows)
	}
	p.Bound = &Bound{Unit: unit, Groups: k, Rows: r}
	return nil
}

// aggregate plans one aggregate call; i is the SELECT position.
func (pl *planner) aggregate(e *Expr, alias string, i int) (Aggregate, error) {
	a := Aggregate{Name: alias}
	name := func(base string) {
		if a.Name != "" {
			return
		}
		if len(e.Args) > 0 && e.Args[0].Op == OpColumn {
			a.Name = base + "_" + e.Args[0].Column
		} else {
			a.Name = base + "_" + strconv.Itoa(i+1)
		}
	}
	args := e.Args
	for _, x := range args {
		if err := walk(x, func(n *Expr) error {
			if n.Op == opAgg {
				return refuse(n.Func+"()", n.pos, "aggregates cannot be nested")
			}
			return nil
		}); err != nil {
			return a, err
		}
	}
	call := e.Func + "()"
	switch e.Func {
	case "count_star":
		a.Kind = Count
		if a.Name == "" {
			a.Name = "count"
		}
		return a, nil
	case "count":
		if !e.distinct {
			return a, refuse("COUNT(expr)", e.pos, "use COUNT(*) (with WHERE col IS NOT NULL to skip NULLs), or COUNT(DISTINCT unit_column) for users")
		}
		if len(args) != 1 || args[0].Op != OpColumn {
			return a, refuse("COUNT(DISTINCT …)", e.pos, "COUNT(DISTINCT …) takes the privacy-unit column")
		}
		if pl.unit == "" {
			return a, refuse("COUNT(DISTINCT "+args[0].Column+")", e.pos, "this dataset has no privacy-unit column (every row is a unit); use COUNT(*)")
		}
		if args[0].Column != pl.unit {
			return a, refuse("COUNT(DISTINCT "+args[0].Column+")", e.pos, "the number of distinct values of a column is not accepted; COUNT(DISTINCT %s) counts users", pl.unit)
		}
		a.Kind, a.Arg = CountDistinct, args[0]
		name("count_distinct")
		return a, nil
	}
	if e.distinct {
		return a, refuse(e.Func+"(DISTINCT …)", e.pos, "DISTINCT is accepted only in COUNT(DISTINCT unit_column)")
	}
	var bounds []*Expr
	switch e.Func {
	case "sum", "avg", "mean", "variance", "stddev", "median":
		a.Kind = map[string]AggKind{"sum": Sum, "avg": Avg, "mean": Avg, "variance": Variance, "stddev": Stddev, "median": Quantile}[e.Func]
		if len(args) != 1 && len(args) != 3 {
			return a, refuse(call, e.pos, "write %s(x) with the owner's bounds or %s(x, lo, hi)", e.Func, e.Func)
		}
		bounds = args[1:]
		a.Q = 0.5
	case "quantile":
		a.Kind = Quantile
		if len(args) != 2 && len(args) != 4 {
			return a, refuse(call, e.pos, "write quantile(x, q) with the owner's bounds or quantile(x, q, lo, hi)")
		}
		q, ok := number(args[1])
		if !ok || !(q > 0 && q < 1) {
			return a, refuse(call, e.pos, "q must be a numeric literal strictly between 0 and 1")
		}
		a.Q = q
		bounds = args[2:]
	}
	name(map[AggKind]string{Sum: "sum", Avg: "avg", Variance: "variance", Stddev: "stddev", Quantile: "quantile"}[a.Kind])
	if e.Func == "median" {
		a.Name = alias
		name("median")
	}
	a.Arg = args[0]
	t, err := pl.typeOf(a.Arg)
	if err != nil {
		return a, err
	}
	if t != TypeNumber {
		return a, refuse(call, a.Arg.pos, "%s needs a numeric argument, not a %s one", e.Func, t)
	}
	if len(bounds) == 2 {
		lo, ok1 := number(bounds[0])
		hi, ok2 := number(bounds[1])
		if !ok1 || !ok2 {
			return a, refuse(call, e.pos, "the clamping bounds lo, hi must be numeric literals (public values)")
		}
		if !(lo < hi) {
			return a, refuse(call, e.pos, "the clamping bounds need lo < hi (got %g, %g)", lo, hi)
		}
		a.Lo, a.Hi, a.Bounds = lo, hi, FromQuery
		return a, nil
	}
	if a.Arg.Op != OpColumn {
		return a, refuse(call, e.pos, "an expression has no declared bounds; give them: %s(expr, lo, hi)", e.Func)
	}
	c := pl.cols[a.Arg.Column]
	if !c.Bounded {
		return a, refuse("column "+strconv.Quote(c.Name), a.Arg.pos,
			"%s has no declared bounds: give clamping bounds in the query, %s(%s, lo, hi), or ask the data owner to declare them (dataset add --bounds %s=lo:hi)",
			c.Name, strings.ToUpper(e.Func), c.Name, c.Name)
	}
	a.Lo, a.Hi, a.Bounds = c.Lo, c.Hi, FromSchema
	return a, nil
}

// number is the value of a numeric literal (possibly negated).
func number(e *Expr) (float64, bool) {
	switch {
	case e.Op == OpLiteral && e.Value.Kind == ValueNumber:
		return e.Value.Num, true
	case e.Op == OpNeg:
		x, ok := number(e.Args[0])
		return -x, ok
	}
	return 0, false
}

// domain derives a key's public domain.
func (pl *planner) domain(k *Key, caller map[string][]Value) error {
	e := k.Expr
	if keys, ok := caller[k.Name]; ok {
		if len(keys) == 0 || len(keys) > MaxGroups {
			return refuse("keys="+strconv.Quote(k.Name), e.pos, "give between 1 and %d keys", MaxGroups)
		}
		seen := map[Value]bool{}
		for _, v := range keys {
			if v.typ() != e.Type && v.Kind != ValueNull {
				return refuse("keys="+strconv.Quote(k.Name), e.pos, "the key %s is %s and the list holds a %s value", k.Name, e.Type, v.typ())
			}
			if v.Kind == ValueNumber && (math.IsNaN(v.Num) || math.IsInf(v.Num, 0)) {
				return refuse("keys="+strconv.Quote(k.Name), e.pos, "keys must be finite numbers")
			}
			if seen[v] {
				return refuse("keys="+strconv.Quote(k.Name), e.pos, "the key %v is listed twice", v)
			}
			seen[v] = true
		}
		k.Source, k.Domain = FromCaller, append([]Value(nil), keys...)
		return nil
	}
	switch {
	case e.Op == OpColumn && pl.cols[e.Column].Kind == Categorical && len(pl.cols[e.Column].Categories) > 0:
		for _, c := range pl.cols[e.Column].Categories {
			k.Domain = append(k.Domain, String(c))
		}
		k.Source, k.Closed = FromCategories, pl.cols[e.Column].Closed
		return nil
	case e.Op == OpCase:
		var dom []Value
		seen := map[Value]bool{}
		lits := true
		for i, a := range e.Args {
			if i%2 == 0 && i != len(e.Args)-1 {
				continue // a WHEN condition
			}
			v, ok := constValue(a)
			if !ok {
				lits = false
				break
			}
			if !seen[v] {
				seen[v] = true
				dom = append(dom, v)
			}
		}
		if lits {
			k.Source, k.Domain = FromCase, dom
			return nil
		}
	case e.Op == OpFunc && e.Func == "floor":
		if dom, ok, err := floorDomain(pl, e); err != nil {
			return err
		} else if ok {
			k.Source, k.Domain = FromBounds, dom
			return nil
		}
	}
	k.Source = PartitionSelection
	return nil
}

// constValue is the value of a literal (or a negated numeric literal).
func constValue(e *Expr) (Value, bool) {
	if e.Op == OpLiteral {
		return e.Value, true
	}
	if x, ok := number(e); ok {
		return Number(x), true
	}
	return Value{}, false
}

// floorDomain enumerates floor(col) or floor(col / c) over col's declared
// bounds, in increasing order. ok is false when the expression has another
// form or the column has no bounds (the key then needs partition
// selection); a domain beyond MaxKeys is an error.
func floorDomain(pl *planner, e *Expr) (dom []Value, ok bool, err error) {
	x, c := e.Args[0], 1.0
	if x.Op == OpDiv {
		d, isNum := number(x.Args[1])
		if !isNum || d == 0 {
			return nil, false, nil
		}
		x, c = x.Args[0], d
	}
	if x.Op != OpColumn {
		return nil, false, nil
	}
	col := pl.cols[x.Column]
	if col.Kind != Numeric || !col.Bounded {
		return nil, false, nil
	}
	a, b := math.Floor(col.Lo/c), math.Floor(col.Hi/c)
	if a > b {
		a, b = b, a
	}
	if b-a+1 > MaxKeys || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return nil, false, refuse("GROUP BY "+e.String(), e.pos, "over %s's bounds [%g, %g] this key has %g values, more than %d; divide by a larger number", col.Name, col.Lo, col.Hi, b-a+1, MaxKeys)
	}
	for v := a; v <= b; v++ {
		dom = append(dom, Number(v))
	}
	return dom, true, nil
}

// typeOf infers and records the type of e and everything below it,
// refusing unknown columns and ill-typed operations.
func (pl *planner) typeOf(e *Expr) (Type, error) {
	if e.Op == opAgg {
		return 0, refuse(e.Func+"()", e.pos, "an aggregate may only stand as a whole SELECT item")
	}
	var ts []Type
	for _, a := range e.Args {
		t, err := pl.typeOf(a)
		if err != nil {
			return 0, err
		}
		ts = append(ts, t)
	}
	need := func(want Type, what string) error {
		for i, t := range ts {
			if t != want && t != TypeNull {
				return refuse(e.String(), e.Args[i].pos, "%s needs %s operands; %s is %s", what, want, e.Args[i].String(), t)
			}
		}
		return nil
	}
	same := func(what string, args []*Expr, types []Type) (Type, error) {
		t := TypeNull
		for i, u := range types {
			switch {
			case u == TypeNull:
			case t == TypeNull:
				t = u
			case u != t:
				return 0, refuse(e.String(), args[i].pos, "%s mixes %s and %s values; compare like with like (CAST if needed)", what, t, u)
			}
		}
		return t, nil
	}
	var t Type
	switch e.Op {
	case OpColumn:
		c, ok := pl.cols[e.Column]
		if !ok {
			return 0, refuse("column "+strconv.Quote(e.Column), e.pos, "the dataset has no such column; %%datasets lists its columns (%s)", pl.columnList())
		}
		t = [...]Type{Numeric: TypeNumber, Categorical: TypeString, Text: TypeString, Date: TypeDate}[c.Kind]
	case OpLiteral:
		t = e.Value.typ()
	case OpNeg, OpAdd, OpSub, OpMul, OpDiv:
		if err := need(TypeNumber, "arithmetic"); err != nil {
			return 0, err
		}
		t = TypeNumber
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe, OpBetween, OpIn, OpNotIn:
		if _, err := same("this comparison", e.Args, ts); err != nil {
			return 0, err
		}
		if ts[0] == TypeBool {
			return 0, refuse(e.String(), e.pos, "compare values, not conditions")
		}
		t = TypeBool
	case OpAnd, OpOr, OpNot:
		if err := need(TypeBool, "AND, OR and NOT"); err != nil {
			return 0, err
		}
		t = TypeBool
	case OpIsNull, OpIsNotNull:
		t = TypeBool
	case OpCase:
		var res []*Expr
		var rt []Type
		for i := range e.Args {
			if i%2 == 0 && i != len(e.Args)-1 {
				if ts[i] != TypeBool {
					return 0, refuse(e.String(), e.Args[i].pos, "a WHEN needs a condition")
				}
				continue
			}
			res, rt = append(res, e.Args[i]), append(rt, ts[i])
		}
		u, err := same("this CASE", res, rt)
		if err != nil {
			return 0, err
		}
		t = u
	case OpCoalesce:
		u, err := same("COALESCE", e.Args, ts)
		if err != nil {
			return 0, err
		}
		t = u
	case OpCast:
		if ts[0] == TypeBool || ts[0] == TypeDate {
			return 0, refuse("CAST("+e.Args[0].String()+" AS …)", e.pos, "casts are accepted from numbers and strings")
		}
		t = e.Cast
	case OpFunc:
		switch e.Func {
		case "year", "month", "day":
			if err := need(TypeDate, e.Func+"()"); err != nil {
				return 0, err
			}
		case "date_part":
			part, ok := constValue(e.Args[0])
			if !ok || part.Kind != ValueString || !datePart[part.Str] {
				return 0, refuse(e.String(), e.pos, "date_part's first argument is one of 'year', 'quarter', 'month', 'week', 'day', 'dow', 'doy'")
			}
			if ts[1] != TypeDate {
				return 0, refuse(e.String(), e.pos, "date_part needs a date column")
			}
		case "round":
			if err := need(TypeNumber, "round()"); err != nil {
				return 0, err
			}
			if len(e.Args) == 2 {
				if d, ok := number(e.Args[1]); !ok || d != math.Trunc(d) || math.Abs(d) > 20 {
					return 0, refuse(e.String(), e.pos, "round's digits must be an integer literal")
				}
			}
		default:
			if err := need(TypeNumber, e.Func+"()"); err != nil {
				return 0, err
			}
		}
		t = TypeNumber
	default:
		return 0, refuse(e.String(), e.pos, "not accepted here")
	}
	e.Type = t
	return t, nil
}

// columnList names the schema's columns for messages, sorted.
func (pl *planner) columnList() string {
	var n []string
	for c := range pl.cols {
		n = append(n, c)
	}
	sort.Strings(n)
	return fmt.Sprint(n)
}
