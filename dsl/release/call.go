package release

import (
	"context"
	"fmt"
	"maps"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Call is a private function call in public terms: what a remote executor
// would receive. Nothing in it is derived from private data.
type Call struct {
	// Func is the DSL function ("private_pca").
	Func string
	// Dataset is the data the call runs on.
	Dataset Ref
	// Args are the call's keyword arguments, validated against the
	// function's table (dsl/syntax) and defaulted.
	Args *Args
	// Cell is recorded with the ledger charge for audit.
	Cell string
	// ID, if set, names the call for idempotence: a data service records
	// it with the ledger charge (params "call_id"), so that a retried
	// request is recognized and not charged twice.
	ID string
}

// Ref names the data of a call: a registered dataset, charged to the
// ledger, or public synthetic data (Public set), never charged.
type Ref struct {
	// Name is the registered name, or "synthetic:RECIPE".
	Name string
	// Schema is the dataset's public schema.
	Schema ledger.Schema
	// Public holds synthetic data, which is public: it may be read before
	// any charge and failures on it may be explained.
	Public *ledger.Data
	// Table holds a public table's rows (a private_synthesize release
	// queried with private_sql(query, from=t)); Public is then set too,
	// with the table's schema.
	Table *PublicRows
	// Derived is set for a subset of a registered dataset (filter,
	// select): Name is then the parent's, which is charged and read, and
	// Schema the subset's.
	Derived *Derivation
}

// Derivation is how a derived dataset comes from its parent: public
// parameters only. Its row count is private, whatever the parent's: a
// filtered subset's size is a count query.
type Derivation struct {
	// ParentSchema is the registered dataset's schema.
	ParentSchema ledger.Schema
	// Filters keep the rows whose every condition holds, in order.
	Filters []Filter
	// Lineage says in words how the subset is derived ("people | age >= 65
	// | columns age, income"), for receipts and the ledger.
	Lineage string
}

// Filter is one row condition: the column's value (clamped to its public
// bounds; for a categorical column, its category) compared with Value by
// Op, one of == != < <= > >=. For a categorical column Value is the
// category's index in its domain (the domain's length for "other") and Op
// is == or !=.
type Filter struct {
	Column string
	Op     string
	Value  float64
}

// Synthetic reports whether the data are public synthetic data: held by
// the cell (Public), or a registered public dataset (ledger.Schema's
// Synthetic, privnotes dataset add --from-synth), whose rows are read
// from its snapshot but charge nothing.
func (r Ref) Synthetic() bool { return r.Public != nil || r.Schema.Public() }

// Args are the validated keyword arguments of one call: every keyword of
// the function, given or defaulted, converted to its table type.
type Args struct {
	Vals  map[string]any
	Given map[string]bool
}

// NewArgs returns Args holding given, every keyword marked as given by
// the caller; WithDefaults adds the others. It copies given. ArgsFor
// builds a call's arguments from its catalog entry with it; the runtime
// converts a cell's keywords itself and then takes the catalog's defaults
// (catalog.Param.DefaultValue) as ArgsFor does.
func NewArgs(given map[string]any) *Args {
	a := &Args{Vals: make(map[string]any, len(given)), Given: make(map[string]bool, len(given))}
	for k, v := range given {
		a.Vals[k], a.Given[k] = v, true
	}
	return a
}

// WithDefaults sets every keyword of defaults that a holds no value for,
// not marked as given, and returns a.
func (a *Args) WithDefaults(defaults map[string]any) *Args {
	for k, v := range defaults {
		if _, ok := a.Vals[k]; !ok {
			a.Vals[k] = v
		}
	}
	return a
}

// ArgsFor returns the arguments of a call of the catalog function fn
// with the keywords given and every other keyword of its entry at its
// default (catalog.Func.Defaults): what the DSL runtime passes for a
// cell's call that gives those keywords. It is how code outside the
// runtime (the benchmarks, the data service and the tests) builds a
// call's arguments. The values in given are not checked against the
// entry's types.
func ArgsFor(fn string, given map[string]any) (*Args, error) {
	f, ok := catalog.Lookup(fn)
	if !ok {
		return nil, fmt.Errorf("%s is not a DSL function", fn)
	}
	d, err := f.Defaults()
	if err != nil {
		return nil, err
	}
	return NewArgs(given).WithDefaults(d), nil
}

// With returns a copy of a with keyword name set to v and marked given.
func (a *Args) With(name string, v any) *Args {
	out := &Args{Vals: maps.Clone(a.Vals), Given: maps.Clone(a.Given)}
	if out.Vals == nil {
		out.Vals = map[string]any{}
	}
	if out.Given == nil {
		out.Given = map[string]bool{}
	}
	out.Vals[name], out.Given[name] = v, true
	return out
}

// Int returns the int keyword name.
func (a *Args) Int(name string) int { return a.Vals[name].(int) }

// Float returns the float64 keyword name.
func (a *Args) Float(name string) float64 { return a.Vals[name].(float64) }

// Str returns the string keyword name.
func (a *Args) Str(name string) string { return a.Vals[name].(string) }

// Bool returns the bool keyword name (false if unset).
func (a *Args) Bool(name string) bool { b, _ := a.Vals[name].(bool); return b }

// Strs returns the []string keyword name (nil if unset).
func (a *Args) Strs(name string) []string { s, _ := a.Vals[name].([]string); return s }

// Release is the outcome of a private call: its values and its receipt.
type Release struct {
	// Value is a *PCA, *FedRep, *Count, *Mean, *Sum, *Histogram,
	// *Quantile or *Groups; nil for a dry run.
	Value   any
	Receipt *Receipt
	// Columns are the public column names the values refer to.
	Columns []string
}

// Executor runs private calls. Plan is free: it reads public facts only
// and charges nothing. Execute plans, asks gate (nil: no caller limits),
// charges, reads and runs. DryRun says what Execute would cost and leave,
// charging nothing and reading no data. [Local] runs calls in-process;
// service/client runs them on a data service.
type Executor interface {
	Plan(call Call) (*Plan, error)
	Execute(ctx context.Context, call Call, gate Gate) (*Release, error)
	DryRun(ctx context.Context, call Call, gate Gate) (*Receipt, error)
}

var _ Executor = (*Local)(nil)

// Gate holds limits of the caller beyond the dataset's budget: the DSL's
// budget blocks. Admit is called once per call, with the call's cost,
// before the ledger charge; it refuses with an error, or returns commit,
// which the executor calls once the ledger has accepted the charge (it
// records the spend and returns the receipt's block label), and abort,
// which it calls if the ledger refused. Exactly one of them is called.
type Gate interface {
	Admit(ctx context.Context, ev accounting.Event, ds Ref) (commit func() string, abort func(), err error)
}
