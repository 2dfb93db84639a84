package sqlplan

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Query is a statement that passed the grammar: one SELECT over one
// dataset, with its row expressions and aggregate calls decoded. It knows
// nothing yet about the dataset's columns; Plan checks those.
type Query struct {
	// Server is the data server named as `server.name`, "" for a local
	// dataset; Dataset is the registered dataset name.
	Server, Dataset string

	alias  string // the FROM item's alias, a valid column qualifier
	items  []item
	where  *Expr
	groups []*Expr
}

// item is one SELECT item: a row expression or an aggregate call (an
// opAgg node), with the alias the analyst gave ("" if none).
type item struct {
	expr  *Expr
	alias string
}

// node is one object of DuckDB's JSON syntax tree.
type node = map[string]any

// Parse checks DuckDB's JSON syntax tree of a query (json_serialize_sql's
// output) against the accepted grammar and decodes it. Anything outside
// the grammar, including anything this package does not recognise in the
// tree, is an *Error.
func Parse(ast []byte) (*Query, error) {
	dec := json.NewDecoder(bytes.NewReader(ast))
	dec.UseNumber()
	var root node
	if err := dec.Decode(&root); err != nil {
		// DuckDB writes a literal beyond float64's range as inf, which is
		// not JSON: such a query is not one we can plan anyway.
		return nil, refuse("query", -1, "the parser's output could not be read (%v); a numeric literal may be out of range", err)
	}
	if b, _ := root["error"].(bool); b {
		msg, _ := root["error_message"].(string)
		typ, _ := root["error_type"].(string)
		pos := -1
		if p, ok := root["position"].(string); ok {
			if n, err := strconv.Atoi(p); err == nil {
				pos = n
			}
		}
		if typ == "not implemented" {
			return nil, refuse("statement", pos, "only a SELECT statement can be a private query (%s)", msg)
		}
		return nil, refuse("syntax", pos, "%s", msg)
	}
	stmts, _ := root["statements"].([]any)
	switch {
	case len(stmts) == 0:
		return nil, refuse("statement", -1, "the query is empty; write one SELECT statement")
	case len(stmts) > 1:
		return nil, refuse("second statement", -1, "a private query is exactly one SELECT statement; run each statement as its own call")
	}
	st, _ := stmts[0].(node)
	if m, _ := st["named_param_map"].([]any); len(m) > 0 {
		return nil, refuse("parameter", -1, "prepared-statement parameters are not accepted; write the values as literals")
	}
	n, _ := st["node"].(node)
	return parseSelect(n)
}

// selectKeys are the fields of a SELECT_NODE that parseSelect understands;
// any other field that is not empty is refused, so that a construct a
// newer DuckDB adds is never silently ignored.
var selectKeys = map[string]bool{
	"type": true, "modifiers": true, "cte_map": true, "select_list": true, "from_table": true,
	"where_clause": true, "group_expressions": true, "group_sets": true, "aggregate_handling": true,
	"having": true, "sample": true, "qualify": true,
}

func parseSelect(n node) (*Query, error) {
	switch t, _ := n["type"].(string); t {
	case "SELECT_NODE":
	case "SET_OPERATION_NODE":
		op, _ := n["setop_type"].(string)
		return nil, refuse(op, -1, "set operations (UNION, INTERSECT, EXCEPT) are not accepted; run each SELECT as its own call")
	default:
		return nil, refuse(t, -1, "only a plain SELECT is accepted")
	}
	for k, v := range n {
		if !selectKeys[k] && !empty(v) {
			return nil, refuse(k, -1, "this part of the query is not accepted in a private query")
		}
	}
	for _, m := range list(n["modifiers"]) {
		mod, _ := m.(node)
		switch t, _ := mod["type"].(string); t {
		case "LIMIT_MODIFIER", "LIMIT_PERCENT_MODIFIER":
			c := "LIMIT"
			if mod["limit"] == nil {
				c = "OFFSET"
			}
			return nil, refuse(c, -1, "LIMIT and OFFSET would pick private rows or groups by their data; remove them (every group with a public key is released)")
		case "ORDER_MODIFIER":
			return nil, refuse("ORDER BY", -1, "the order of private groups depends on the data; remove ORDER BY and sort the released table instead")
		case "DISTINCT_MODIFIER":
			return nil, refuse("DISTINCT", -1, "SELECT DISTINCT lists private values; use GROUP BY with an aggregate (or COUNT(DISTINCT unit) for users)")
		default:
			return nil, refuse(t, -1, "this modifier is not accepted")
		}
	}
	if cte, _ := n["cte_map"].(node); cte != nil && len(list(cte["map"])) > 0 {
		return nil, refuse("WITH", -1, "common table expressions are not accepted; write the expression in the SELECT, WHERE or GROUP BY")
	}
	if !empty(n["having"]) {
		return nil, refuse("HAVING", pos(n["having"]), "HAVING filters groups by private aggregates; filter rows with WHERE, or filter the released table")
	}
	if !empty(n["qualify"]) {
		return nil, refuse("QUALIFY", pos(n["qualify"]), "window functions and QUALIFY are not accepted")
	}
	if !empty(n["sample"]) {
		return nil, refuse("USING SAMPLE", -1, "sampling is random and would make the query non-deterministic; remove it")
	}
	if h, _ := n["aggregate_handling"].(string); h != "STANDARD_HANDLING" {
		return nil, refuse("GROUP BY ALL", -1, "name the group-by expressions explicitly (%s)", h)
	}
	q := &Query{}
	if err := q.from(n["from_table"]); err != nil {
		return nil, err
	}
	for _, raw := range list(n["select_list"]) {
		x, _ := raw.(node)
		if c, _ := x["class"].(string); c == "STAR" {
			return nil, refuse("SELECT *", pos(x), "a private query releases aggregates only; name the group-by columns and aggregates, e.g. SELECT region, COUNT(*) … GROUP BY region")
		}
		e, err := q.expr(x, true)
		if err != nil {
			return nil, err
		}
		alias, _ := x["alias"].(string)
		q.items = append(q.items, item{expr: e, alias: alias})
	}
	if w := n["where_clause"]; !empty(w) {
		e, err := q.expr(w.(node), false)
		if err != nil {
			return nil, err
		}
		q.where = e
	}
	for _, raw := range list(n["group_expressions"]) {
		x, _ := raw.(node)
		if c, _ := x["class"].(string); c == "CONSTANT" {
			return nil, refuse("GROUP BY position", pos(x), "write the group-by expression itself, not its position in the SELECT list")
		}
		e, err := q.expr(x, false)
		if err != nil {
			return nil, err
		}
		q.groups = append(q.groups, e)
	}
	// One grouping set holding every group expression in order is a plain
	// GROUP BY; anything else is GROUPING SETS, ROLLUP or CUBE.
	sets := list(n["group_sets"])
	plain := len(q.groups) == 0 && len(sets) == 0
	if len(sets) == 1 {
		s := list(sets[0])
		plain = len(s) == len(q.groups)
		for i, v := range s {
			if num, ok := v.(json.Number); !ok || num.String() != strconv.Itoa(i) {
				plain = false
			}
		}
	}
	if !plain {
		return nil, refuse("GROUPING SETS", -1, "GROUPING SETS, ROLLUP and CUBE are not accepted; run one query per grouping")
	}
	return q, nil
}

// from decodes the FROM clause: one base table, the registered dataset.
func (q *Query) from(v any) error {
	t, _ := v.(node)
	typ, _ := t["type"].(string)
	switch typ {
	case "BASE_TABLE":
	case "EMPTY", "":
		return refuse("FROM", -1, "name the registered dataset: SELECT … FROM dataset_name")
	case "JOIN":
		return refuse("JOIN", -1, "a private query reads one dataset; joins (and FROM a, b) are not accepted")
	case "SUBQUERY":
		return refuse("subquery", -1, "FROM must name a registered dataset, not a subquery; move the expressions into this SELECT")
	case "TABLE_FUNCTION":
		f, _ := t["function"].(node)
		name, _ := f["function_name"].(string)
		return refuse(name+"()", pos(f), "FROM must name a registered dataset; table functions that read files or generate rows are not accepted")
	default:
		return refuse(typ, -1, "FROM must name a registered dataset")
	}
	if !empty(t["sample"]) {
		return refuse("TABLESAMPLE", pos(t), "sampling is random and would make the query non-deterministic; remove it")
	}
	if !empty(t["at_clause"]) {
		return refuse("AT", pos(t), "time travel clauses are not accepted")
	}
	if !empty(t["column_name_alias"]) {
		return refuse("column aliases", pos(t), "column aliases on the dataset are not accepted; use the column names")
	}
	if c, _ := t["catalog_name"].(string); c != "" {
		return refuse("FROM "+c+".…", pos(t), "name the dataset as name or server.name")
	}
	name, _ := t["table_name"].(string)
	if name == "" || strings.ContainsAny(name, "/\\.:") {
		return refuse("FROM "+strconv.Quote(name), pos(t), "FROM must name a registered dataset, not a file path or URL")
	}
	q.Server, _ = t["schema_name"].(string)
	q.Dataset = name
	q.alias, _ = t["alias"].(string)
	return nil
}

// nondeterministic are functions refused with their own message: they
// would make a row transformation depend on something other than the row.
var nondeterministic = map[string]bool{
	"random": true, "setseed": true, "uuid": true, "gen_random_uuid": true, "now": true,
	"today": true, "current_date": true, "current_time": true, "current_timestamp": true,
	"get_current_time": true, "get_current_timestamp": true, "transaction_timestamp": true,
	"localtime": true, "localtimestamp": true, "nextval": true, "currval": true,
}

// funcs are the deterministic row functions accepted, with their arity
// (minimum, maximum; -1 for any).
var funcs = map[string][2]int{
	"ln": {1, 1}, "exp": {1, 1}, "abs": {1, 1}, "floor": {1, 1}, "ceil": {1, 1}, "round": {1, 2},
	"least": {2, -1}, "greatest": {2, -1},
	"year": {1, 1}, "month": {1, 1}, "day": {1, 1}, "date_part": {2, 2},
}

// datePart are the parts date_part accepts (also the names of the one-part
// functions year, month, day).
var datePart = map[string]bool{"year": true, "quarter": true, "month": true, "day": true, "dow": true, "doy": true, "week": true}

// aggregates are the aggregate functions accepted (DuckDB's names; count(*)
// arrives as count_star, MEAN as an alias of AVG).
var aggregates = map[string]bool{
	"count_star": true, "count": true, "sum": true, "avg": true, "mean": true, "variance": true,
	"stddev": true, "quantile": true, "median": true,
}

var binaryOps = map[string]Op{"+": OpAdd, "-": OpSub, "*": OpMul, "/": OpDiv}

var comparisons = map[string]Op{
	"COMPARE_EQUAL": OpEq, "COMPARE_NOTEQUAL": OpNe, "COMPARE_LESSTHAN": OpLt,
	"COMPARE_LESSTHANOREQUALTO": OpLe, "COMPARE_GREATERTHAN": OpGt, "COMPARE_GREATERTHANOREQUALTO": OpGe,
}

// expr decodes one expression. top is true for a SELECT item, the only
// place an aggregate call may stand.
func (q *Query) expr(x node, top bool) (*Expr, error) {
	class, _ := x["class"].(string)
	typ, _ := x["type"].(string)
	p := pos(x)
	args := func(key string) ([]*Expr, error) {
		var out []*Expr
		for _, c := range list(x[key]) {
			cn, _ := c.(node)
			e, err := q.expr(cn, false)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	child := func(key string) (*Expr, error) {
		cn, ok := x[key].(node)
		if !ok {
			return nil, refuse(typ, p, "malformed expression (no %s)", key)
		}
		return q.expr(cn, false)
	}
	switch class {
	case "COLUMN_REF":
		names := list(x["column_names"])
		var parts []string
		for _, v := range names {
			s, _ := v.(string)
			parts = append(parts, s)
		}
		switch {
		case len(parts) == 1:
		case len(parts) == 2 && (parts[0] == q.Dataset || (q.alias != "" && parts[0] == q.alias)):
			parts = parts[1:]
		default:
			return nil, refuse("column "+strconv.Quote(strings.Join(parts, ".")), p, "name a column of the dataset, optionally qualified by the dataset's name")
		}
		return &Expr{Op: OpColumn, Column: parts[0], pos: p}, nil
	case "CONSTANT":
		v, err := literal(x["value"], p)
		if err != nil {
			return nil, err
		}
		return &Expr{Op: OpLiteral, Value: v, pos: p}, nil
	case "COMPARISON":
		op, ok := comparisons[typ]
		if !ok {
			return nil, refuse(typ, p, "this comparison is not accepted; use =, <>, <, <=, > or >=")
		}
		l, err := child("left")
		if err != nil {
			return nil, err
		}
		r, err := child("right")
		if err != nil {
			return nil, err
		}
		return &Expr{Op: op, Args: []*Expr{l, r}, pos: p}, nil
	case "CONJUNCTION":
		op := OpAnd
		if typ == "CONJUNCTION_OR" {
			op = OpOr
		}
		a, err := args("children")
		if err != nil {
			return nil, err
		}
		return &Expr{Op: op, Args: a, pos: p}, nil
	case "BETWEEN":
		a, err := child("input")
		if err != nil {
			return nil, err
		}
		lo, err := child("lower")
		if err != nil {
			return nil, err
		}
		hi, err := child("upper")
		if err != nil {
			return nil, err
		}
		return &Expr{Op: OpBetween, Args: []*Expr{a, lo, hi}, pos: p}, nil
	case "CASE":
		e := &Expr{Op: OpCase, pos: p}
		for _, c := range list(x["case_checks"]) {
			cn, _ := c.(node)
			w, _ := cn["when_expr"].(node)
			t, _ := cn["then_expr"].(node)
			we, err := q.expr(w, false)
			if err != nil {
				return nil, err
			}
			te, err := q.expr(t, false)
			if err != nil {
				return nil, err
			}
			e.Args = append(e.Args, we, te)
		}
		el, err := child("else_expr")
		if err != nil {
			return nil, err
		}
		e.Args = append(e.Args, el)
		return e, nil
	case "CAST":
		if b, _ := x["try_cast"].(bool); b {
			return nil, refuse("TRY_CAST", p, "use CAST")
		}
		ct, _ := x["cast_type"].(node)
		id, _ := ct["id"].(string)
		c, err := child("child")
		if err != nil {
			return nil, err
		}
		e := &Expr{Op: OpCast, Args: []*Expr{c}, pos: p}
		switch id {
		case "DOUBLE":
			e.Cast = TypeNumber
		case "INTEGER":
			e.Cast, e.Int = TypeNumber, true
		case "VARCHAR":
			e.Cast = TypeString
		default:
			return nil, refuse("CAST AS "+id, p, "casts are accepted to DOUBLE, INTEGER and VARCHAR")
		}
		return e, nil
	case "OPERATOR":
		a, err := args("children")
		if err != nil {
			return nil, err
		}
		ops := map[string]Op{
			"OPERATOR_NOT": OpNot, "COMPARE_IN": OpIn, "COMPARE_NOT_IN": OpNotIn,
			"OPERATOR_IS_NULL": OpIsNull, "OPERATOR_IS_NOT_NULL": OpIsNotNull, "OPERATOR_COALESCE": OpCoalesce,
		}
		op, ok := ops[typ]
		if !ok {
			return nil, refuse(typ, p, "this operator is not accepted")
		}
		return &Expr{Op: op, Args: a, pos: p}, nil
	case "FUNCTION":
		return q.function(x, top)
	case "SUBQUERY":
		return nil, refuse("subquery", p, "subqueries are not accepted; a private query reads one dataset once")
	case "WINDOW":
		return nil, refuse("window function", p, "window functions (OVER) are not accepted; use GROUP BY")
	case "STAR":
		return nil, refuse("*", p, "name the columns")
	case "PARAMETER":
		return nil, refuse("parameter", p, "prepared-statement parameters are not accepted; write the values as literals")
	}
	return nil, refuse(strings.ToLower(class), p, "this kind of expression (%s) is not accepted", typ)
}

// function decodes a function call: an operator, a row function or, when
// top, an aggregate call.
func (q *Query) function(x node, top bool) (*Expr, error) {
	p := pos(x)
	name, _ := x["function_name"].(string)
	lname := strings.ToLower(name)
	if s, _ := x["schema"].(string); s != "" && !(s == "main" && lname == "date_part") {
		// DuckDB itself writes EXTRACT(part FROM d) as main.date_part.
		return nil, refuse(s+"."+name+"()", p, "call functions by their plain name")
	}
	if c, _ := x["catalog"].(string); c != "" {
		return nil, refuse(c+"."+name+"()", p, "call functions by their plain name")
	}
	if !empty(x["filter"]) {
		return nil, refuse(name+"(…) FILTER", p, "move the condition into WHERE (or into a CASE inside the aggregate's argument)")
	}
	if ob, _ := x["order_bys"].(node); ob != nil && len(list(ob["orders"])) > 0 {
		return nil, refuse(name+"(… ORDER BY)", p, "ordered aggregates are not accepted")
	}
	if b, _ := x["export_state"].(bool); b {
		return nil, refuse(name+"() EXPORT_STATE", p, "not accepted")
	}
	var args []*Expr
	for _, c := range list(x["children"]) {
		cn, _ := c.(node)
		e, err := q.expr(cn, false)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	distinct, _ := x["distinct"].(bool)
	if isOp, _ := x["is_operator"].(bool); isOp {
		op, ok := binaryOps[name]
		switch {
		case ok && len(args) == 2:
			return &Expr{Op: op, Args: args, pos: p}, nil
		case name == "-" && len(args) == 1:
			return &Expr{Op: OpNeg, Args: args, pos: p}, nil
		case name == "+" && len(args) == 1:
			return args[0], nil
		}
		return nil, refuse("operator "+name, p, "only + - * / are accepted in arithmetic; use = for string equality")
	}
	if aggregates[lname] {
		if !top {
			return nil, refuse(name+"()", p, "an aggregate may only stand as a whole SELECT item, not inside WHERE, GROUP BY or another expression")
		}
		return &Expr{Op: opAgg, Func: lname, Args: args, pos: p, distinct: distinct}, nil
	}
	if distinct {
		return nil, refuse(name+"(DISTINCT …)", p, "DISTINCT is accepted only in COUNT(DISTINCT unit_column)")
	}
	if nondeterministic[lname] {
		return nil, refuse(name+"()", p, "only deterministic functions are accepted: a row's transformation must depend on that row alone, and a replayed query must read the data the same way")
	}
	ar, ok := funcs[lname]
	if !ok {
		return nil, refuse(name+"()", p, "this function is not accepted; the row functions are ln, exp, abs, floor, ceil, round, least, greatest, coalesce, year, month, day and date_part, and the aggregates COUNT, SUM, AVG, VARIANCE, STDDEV, QUANTILE and MEDIAN")
	}
	if len(args) < ar[0] || (ar[1] >= 0 && len(args) > ar[1]) {
		return nil, refuse(name+"()", p, "wrong number of arguments (%d)", len(args))
	}
	return &Expr{Op: OpFunc, Func: lname, Args: args, pos: p}, nil
}

// literal decodes a constant's value. Numbers become float64 (the rewritten
// statement computes in DOUBLE); integers beyond 2⁵³ are refused rather
// than rounded silently.
func literal(v any, p int) (Value, error) {
	n, _ := v.(node)
	if null, _ := n["is_null"].(bool); null {
		return Value{}, nil
	}
	t, _ := n["type"].(node)
	id, _ := t["id"].(string)
	switch id {
	case "VARCHAR":
		s, ok := n["value"].(string)
		if !ok {
			return Value{}, refuse("literal", p, "malformed string literal")
		}
		return String(s), nil
	case "INTEGER", "BIGINT", "DOUBLE", "DECIMAL":
		num, ok := n["value"].(json.Number)
		if !ok {
			return Value{}, refuse("literal", p, "this numeric literal is out of range")
		}
		s := num.String()
		if id == "DECIMAL" {
			// DuckDB stores a DECIMAL as an integer and a scale:
			// 1.5 is 15 with scale 1. Parsing "15e-1" rounds once.
			info, _ := t["type_info"].(node)
			scale, _ := info["scale"].(json.Number)
			s += "e-" + scale.String()
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return Value{}, refuse("literal "+num.String(), p, "this numeric literal is out of range")
		}
		if id != "DOUBLE" && id != "DECIMAL" && math.Abs(f) > 1<<53 {
			return Value{}, refuse("literal "+num.String(), p, "integer literals beyond 2^53 are not accepted")
		}
		return Number(f), nil
	}
	if id == "HUGEINT" || id == "UHUGEINT" || id == "UBIGINT" {
		return Value{}, refuse("literal of type "+id, p, "this numeric literal is out of range")
	}
	return Value{}, refuse("literal of type "+id, p, "only numeric and string literals (and NULL) are accepted")
}

// pos is the query_location of a node, -1 if it has none.
func pos(v any) int {
	n, _ := v.(node)
	if num, ok := n["query_location"].(json.Number); ok {
		if i, err := num.Int64(); err == nil && i >= 0 && i < math.MaxInt32 {
			return int(i)
		}
	}
	return -1
}

// list is v as a JSON array, nil if it is not one.
func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// empty reports whether a JSON value carries nothing: null, false, "", an
// empty array, or an object whose fields are all empty.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case node:
		for _, f := range x {
			if !empty(f) {
				return false
			}
		}
		return true
	}
	return false
}
