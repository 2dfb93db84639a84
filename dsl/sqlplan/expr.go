package sqlplan

// Op is the operation of an expression node.
type Op int

// The operations of row expressions. Aggregates are not row expressions;
// they appear only as the top of a SELECT item (see Aggregate).
const (
	OpColumn    Op = iota // a column of the dataset: Column
	OpLiteral             // a public literal: Value
	OpNeg                 // -Args[0]
	OpAdd                 // Args[0] + Args[1]
	OpSub                 // Args[0] - Args[1]
	OpMul                 // Args[0] * Args[1]
	OpDiv                 // Args[0] / Args[1] (floating-point division)
	OpEq                  // =
	OpNe                  // <>
	OpLt                  // <
	OpLe                  // <=
	OpGt                  // >
	OpGe                  // >=
	OpAnd                 // Args[0] AND Args[1] AND …
	OpOr                  // Args[0] OR Args[1] OR …
	OpNot                 // NOT Args[0]
	OpIn                  // Args[0] IN (Args[1:])
	OpNotIn               // Args[0] NOT IN (Args[1:])
	OpBetween             // Args[0] BETWEEN Args[1] AND Args[2]
	OpIsNull              // Args[0] IS NULL
	OpIsNotNull           // Args[0] IS NOT NULL
	OpCase                // CASE WHEN Args[0] THEN Args[1] … ELSE Args[len-1] END
	OpCoalesce            // COALESCE(Args…)
	OpCast                // CAST(Args[0] AS Cast)
	OpFunc                // Func(Args…), one of the deterministic functions in funcs
	opAgg                 // an aggregate call, only while parsing
)

// Type is the type of a row expression's values, inferred by Plan from
// the public schema.
type Type int

// The types of row expressions.
const (
	TypeUnknown Type = iota
	TypeNumber
	TypeString
	TypeBool
	TypeDate
	TypeNull // the NULL literal, which fits any type
)

func (t Type) String() string {
	switch t {
	case TypeNumber:
		return "numeric"
	case TypeString:
		return "string"
	case TypeBool:
		return "boolean"
	case TypeDate:
		return "date"
	case TypeNull:
		return "NULL"
	}
	return "unknown"
}

// ValueKind is the kind of a literal.
type ValueKind int

// The kinds of literal.
const (
	ValueNull ValueKind = iota
	ValueNumber
	ValueString
)

// Value is a public literal: from the query, the schema or the caller.
type Value struct {
	Kind ValueKind
	Num  float64
	Str  string
}

// Number and String make literals.
func Number(x float64) Value { return Value{Kind: ValueNumber, Num: x} }

// String makes a string literal.
func String(s string) Value { return Value{Kind: ValueString, Str: s} }

func (v Value) typ() Type {
	switch v.Kind {
	case ValueNumber:
		return TypeNumber
	case ValueString:
		return TypeString
	}
	return TypeNull
}

// Expr is a node of a row expression tree. Plan sets Type on every node.
type Expr struct {
	Op     Op
	Column string // OpColumn
	Value  Value  // OpLiteral
	Func   string // OpFunc (lower case), and the aggregate's name while parsing
	Cast   Type   // OpCast: TypeNumber for DOUBLE, TypeString for VARCHAR (Int marks INTEGER)
	Int    bool   // OpCast to INTEGER
	Args   []*Expr
	Type   Type

	pos      int  // offset in the query text, -1 if unknown
	distinct bool // opAgg: COUNT(DISTINCT …)
}

// Equal reports whether a and b are the same expression (positions and
// inferred types aside): the test for "this SELECT item is a GROUP BY
// expression".
func Equal(a, b *Expr) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Op != b.Op || a.Column != b.Column || a.Value != b.Value || a.Func != b.Func ||
		a.Cast != b.Cast || a.Int != b.Int || a.distinct != b.distinct || len(a.Args) != len(b.Args) {
		return false
	}
	for i := range a.Args {
		if !Equal(a.Args[i], b.Args[i]) {
			return false
		}
	}
	return true
}

// String prints e as DuckDB SQL, for messages and default output names.
func (e *Expr) String() string {
	s, err := (&printer{d: DuckDB}).expr(e)
	if err != nil {
		return "?"
	}
	return s
}

// walk calls f on e and every node below it, stopping at the first error.
func walk(e *Expr, f func(*Expr) error) error {
	if e == nil {
		return nil
	}
	if err := f(e); err != nil {
		return err
	}
	for _, a := range e.Args {
		if err := walk(a, f); err != nil {
			return err
		}
	}
	return nil
}
