package release

// Derived datasets: a subset of the rows (filter) or of the columns
// (select) of a registered dataset. The core loads the registered data and
// reads it through filtering sources, so every mechanism sees only the
// subset; the charge goes to the registered dataset.

import (
	"context"
	"sort"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// derive turns the registered dataset's data into the subset's.
func derive(parent *Data, sc ledger.Schema, dv *Derivation) (*Data, error) {
	var conds []string
	for _, f := range dv.Filters {
		// The runtime checks op against filter's choices before the
		// charge; checked again here so that pass, which runs per row,
		// needs no failure path.
		if !filterOps[f.Op] {
			parent.Close()
			return nil, Errorf(NameArgumentError, "filter: op=%q: use one of ==, !=, <, <=, >, >=", f.Op)
		}
		conds = append(conds, f.Column)
	}
	if parent.Columns == nil && parent.SQL != nil {
		// A live table's: SQL only. Every call that reads rows was
		// refused before the charge (engineFacts.check); the column
		// analyses print the filters as their statement's WHERE.
		return &Data{Schema: sc, SQL: parent.SQL, close: parent.close, derived: true}, nil
	}
	columns := func(names []string) (rows.Source, error) {
		src, err := parent.Columns(append(append([]string(nil), names...), conds...))
		if err != nil {
			return nil, err
		}
		return &filtered{parent: src, keep: len(names), filters: dv.Filters}, nil
	}
	features := sc.Columns
	if len(features) == 0 {
		// Categorical columns only: the rows (for counts) come with the
		// first of them.
		cats := CategoricalColumns(sc)
		features = cats[:min(1, len(cats))]
	}
	src, err := columns(features)
	if err != nil {
		return nil, err
	}
	// The engine reads the registered snapshot: the column analyses'
	// statements print the filters as their WHERE (tabWhere).
	return &Data{Schema: sc, Rows: src, Columns: columns, SQL: parent.SQL, close: parent.close, derived: true}, nil
}

// filtered keeps the rows of its parent whose columns keep, keep+1, … meet
// the filters (in order), and gives their first keep columns.
type filtered struct {
	parent  rows.Source
	keep    int
	filters []Filter
}

func (f *filtered) Dim() int { return f.keep }

// NumUnits passes the parent's unit count through: an index, not the
// number of users in the subset.
func (f *filtered) NumUnits() int {
	if u, ok := f.parent.(rows.Units); ok {
		return u.NumUnits()
	}
	return 0
}

func (f *filtered) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := f.parent.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &filteredCursor{f: f, parent: cur}, nil
}

type filteredCursor struct {
	f      *filtered
	parent rows.Cursor
	buf    *rows.Batch
}

// Next fills dst with the next rows that pass, reading parent batches of
// dst's capacity until it has some or the parent ends.
func (c *filteredCursor) Next(dst *rows.Batch) error {
	dim, pdim := c.f.keep, c.f.parent.Dim()
	room := dst.Cap(dim)
	dst.N = 0
	if room < 1 {
		return rows.ErrDim
	}
	if c.buf == nil || c.buf.Cap(pdim) < room {
		c.buf = rows.NewBatch(pdim, room, false, true)
	}
	for dst.N == 0 {
		view := &rows.Batch{X: c.buf.X[:room*pdim], Unit: c.buf.Unit[:room]}
		for i := range view.Unit {
			view.Unit[i] = -1
		}
		if err := c.parent.Next(view); err != nil {
			return err
		}
		for i := range view.N {
			row := view.Row(i, pdim)
			if !c.f.pass(row[dim:]) {
				continue
			}
			copy(dst.Row(dst.N, dim), row[:dim])
			if dst.Unit != nil && dst.N < len(dst.Unit) {
				dst.Unit[dst.N] = view.Unit[i]
			}
			dst.N++
		}
	}
	return nil
}

func (c *filteredCursor) Close() error { return c.parent.Close() }

// filterOps are the comparisons of filter, which pass implements.
var filterOps = map[string]bool{"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

// pass reports whether a row's condition values meet every filter. A NaN
// meets no comparison but !=, as in Go. Every op is one of filterOps
// (derive checks).
func (f *filtered) pass(vals []float64) bool {
	for i, flt := range f.filters {
		v := vals[i]
		var ok bool
		switch flt.Op {
		case "==":
			ok = v == flt.Value
		case "!=":
			ok = v != flt.Value
		case "<":
			ok = v < flt.Value
		case "<=":
			ok = v <= flt.Value
		case ">":
			ok = v > flt.Value
		case ">=":
			ok = v >= flt.Value
		}
		if !ok {
			return false
		}
	}
	return true
}

// CategoricalColumns lists a schema's categorical columns, sorted.
func CategoricalColumns(sc ledger.Schema) []string {
	cats := make([]string, 0, len(sc.Categorical))
	for c := range sc.Categorical {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	return cats
}
