package release

// private_sql on a public table (issue 31): a synthetic table released by
// private_synthesize, held by the cell, is public data like synth_*'s.
// private_sql(query, from=t, …) plans the query with the same planner on
// the table's public schema (PublicTableSchema) and runs the same printed
// statement, with the same noise, over the table's rows loaded into a
// locked-down in-memory DuckDB (dsl/snapshot.PublicTable) instead of a
// snapshot: the receipt says Charged: false and no ledger is touched, so a
// query prototyped on the synthetic table runs unchanged, with the same
// noise, on the dataset it came from. PublicQuery runs a query exactly,
// without noise, since the data are public.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// PublicRows are the rows of a public table: a float64 (or nil) per
// numeric column, a string (or nil) per other column.
type PublicRows struct {
	Columns []string
	Numeric []bool
	Rows    [][]any
}

// PublicSQL is a public table opened in the data engine: private_sql's
// printed statements run on it as on a snapshot (SQLReader), and Select
// runs an analyst's own SELECT over it, whose FROM names it by the name it
// was opened with.
type PublicSQL interface {
	SQLReader
	Select(ctx context.Context, query string) (cols []string, rows [][]any, err error)
	Close() error
}

// PublicTableOpener loads public rows into the data engine, as the table
// name.
type PublicTableOpener func(ctx context.Context, name string, t *PublicRows) (PublicSQL, error)

var publicTables PublicTableOpener

// RegisterPublicTables sets how public tables are loaded into the data
// engine; like RegisterSnapshots, the binary that links the engine
// registers it. A nil opener or a second registration is an error.
func RegisterPublicTables(open PublicTableOpener) error {
	snapshotsMu.Lock()
	defer snapshotsMu.Unlock()
	if open == nil {
		return errors.New("release: RegisterPublicTables with a nil opener")
	}
	if publicTables != nil {
		return errors.New("release: RegisterPublicTables called twice")
	}
	publicTables = open
	return nil
}

func publicTableOpener() PublicTableOpener {
	snapshotsMu.Lock()
	defer snapshotsMu.Unlock()
	return publicTables
}

// errNoPublicEngine is the refusal in a build without the data engine.
var errNoPublicEngine = Errorf(NameNotAvailable, "this build of privnotes has no SQL engine (DuckDB) to query a table")

// PublicQuery runs query exactly over the public rows t, whose name in
// FROM is name: the result's column names and rows (numbers as float64,
// text as string, NULL as nil). The rows are public, so there is no
// noise, no charge, and the engine's own message explains a failure.
func PublicQuery(ctx context.Context, name string, t *PublicRows, query string) ([]string, [][]any, error) {
	open := publicTableOpener()
	if open == nil {
		return nil, nil, errNoPublicEngine
	}
	pt, err := open(ctx, name, t)
	if err != nil {
		return nil, nil, Errorf(NameArgumentError, "%v", err)
	}
	defer pt.Close()
	cols, rows, err := pt.Select(ctx, query)
	if err != nil {
		return nil, nil, Errorf(NameArgumentError, "query: %v", err)
	}
	return cols, rows, nil
}

// PublicTableSchema is the public schema a public table is planned on:
// row-level, replace-one, zCDP (as synth_* data), its numeric columns
// bounded by bounds (a column without bounds by its smallest and largest
// value: the data are public, so the bounds may depend on them) and its
// text columns categorical over domains (a column without a domain over
// its distinct values, sorted).
func PublicTableSchema(name string, t *PublicRows, bounds map[string][2]float64, domains map[string][]string) ledger.Schema {
	sc := ledger.Schema{Name: name, Unit: "row", Center: "none", Neighbour: accounting.ReplaceOne.String(),
		Accountant: accounting.ModeZCDP.String(), BadRows: "reject", PublicN: len(t.Rows),
		Bounds: map[string][2]float64{}, Categorical: map[string][]string{}}
	for j, c := range t.Columns {
		if t.Numeric[j] {
			sc.Columns = append(sc.Columns, c)
			b, ok := bounds[c]
			if !ok {
				b = [2]float64{math.Inf(1), math.Inf(-1)}
				for _, r := range t.Rows {
					if x, ok := r[j].(float64); ok && !math.IsNaN(x) {
						b = [2]float64{min(b[0], x), max(b[1], x)}
					}
				}
				if b[0] > b[1] { // no value: any bounds hold
					b = [2]float64{0, 1}
				}
			}
			if b[0] == b[1] {
				// One value (or one bin): bounds around it, which hold
				// it and have a width the planner can scale noise by.
				b = [2]float64{b[0] - 0.5, b[1] + 0.5}
			}
			sc.Bounds[c] = b
			continue
		}
		dom, ok := domains[c]
		if !ok {
			seen := map[string]bool{}
			for _, r := range t.Rows {
				if s, ok := r[j].(string); ok && !seen[s] {
					seen[s] = true
					dom = append(dom, s)
				}
			}
			slices.Sort(dom)
		}
		sc.Categorical[c] = dom
	}
	sc.D = len(sc.Columns)
	sc.Clip = 1
	return sc
}

// publicSQLRun wraps a private_sql plan's run on a public table: the run
// reads the table's rows through the data engine, loaded in memory, in
// place of a snapshot.
func publicSQLRun(t *PublicRows, run func(context.Context, *Data) (any, error)) func(context.Context, *Data) (any, error) {
	return func(ctx context.Context, d *Data) (any, error) {
		open := publicTableOpener()
		if open == nil {
			return nil, errNoPublicEngine
		}
		pt, err := open(ctx, "", t)
		if err != nil {
			return nil, fmt.Errorf("release: loading a public table: %w", err)
		}
		defer pt.Close()
		pd := &Data{Schema: d.Schema, Rows: d.Rows, Columns: d.Columns, SQL: pt}
		return run(ctx, pd)
	}
}

// publicSQLSource checks a public source of private_sql: a table
// (private_sql(query, from=t)) or a registered public dataset's snapshot
// is in the data engine; synth_* data are matrices, not tables.
func publicSQLSource(fn string, src Ref) error {
	if src.Table == nil && !src.Schema.Public() {
		return Errorf(NameArgumentError, "%s: synthetic data from synth_* are not held in the data engine; query a table (private_sql(query, from=t) with t from private_synthesize), or register the data as a snapshot (privnotes dataset add NAME --from FILE)", fn)
	}
	return nil
}

// PublicRows reads the rows of a registered public dataset (a --from-synth
// registration, ledger.Schema's Synthetic): its numeric columns, then its
// categorical ones (by name), each row's values as the mechanisms read
// them (numbers clamped to the public bounds, categories by name, "other"
// for a value outside the domain). A private dataset is refused: only
// public rows are ever handed out.
func (env *Local) PublicRows(ctx context.Context, src Ref) (*PublicRows, error) {
	sc := src.Schema
	if !sc.Public() || src.Public != nil || src.Derived != nil {
		return nil, Errorf(NameArgumentError, "Table: dataset %q is private: its rows are read only by private functions (Table reads a public dataset, which the data owner registers with privnotes dataset add NAME --from-synth DATASET/RELEASE)", src.Name)
	}
	d, err := env.load(src)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	cats := CategoricalColumns(sc)
	names := append(append([]string(nil), sc.Columns...), cats...)
	out := &PublicRows{Columns: names, Numeric: make([]bool, len(names)), Rows: [][]any{}}
	for j := range sc.Columns {
		out.Numeric[j] = true
	}
	s, err := d.Columns(names)
	if err != nil {
		return nil, err
	}
	dim := len(names)
	err = rows.ForEach(ctx, s, 1024, false, false, func(b *rows.Batch) error {
		for i := range b.N {
			r := make([]any, dim)
			for j, x := range b.Row(i, dim) {
				if out.Numeric[j] {
					r[j] = x
					continue
				}
				dom := sc.Categorical[names[j]]
				if k := int(x); k >= 0 && k < len(dom) {
					r[j] = dom[k]
				} else {
					r[j] = ledger.OtherCategory
				}
			}
			out.Rows = append(out.Rows, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
