package runtime

// filter and select_columns: subsets of a registered dataset's rows or columns, as
// dataset handles for every private call (dsl/release/derived.go reads
// them). They take public parameters only and read nothing.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
)

// parentEntry returns the entry of a registered dataset's handle (or of a
// subset of one) for fn.
func (rt *Runtime) parentEntry(fn string, ds any) *handleEntry {
	var h Dataset
	switch x := ds.(type) {
	case Dataset:
		h = x
	case *Dataset:
		if x != nil {
			h = *x
		}
	case *SynthData:
		panic(errorf(NameArgumentError, "%s: synthetic data is public: filter or select it in Go before you analyse it", fn))
	default:
		panic(errorf(NameArgumentError, "%s: the first argument must be a dataset handle from dataset(\"name\"); got %s", fn, typeName(ds)))
	}
	e := h.mustEntry()
	if e.rt != rt {
		panic(errorf(NameDatasetError, "%s: this handle belongs to another privnotes session; open it here with dataset(%q)", fn, e.name))
	}
	return e
}

// derivedEntry is e with one more step of derivation, described by step,
// and the subset's schema sc.
func derivedEntry(e *handleEntry, sc ledger.Schema, step string, f *release.Filter) *handleEntry {
	dv := &release.Derivation{ParentSchema: e.schema, Lineage: e.name}
	if e.deriv != nil {
		dv.ParentSchema = e.deriv.ParentSchema
		dv.Filters = append(dv.Filters, e.deriv.Filters...)
		dv.Lineage = e.deriv.Lineage
	}
	if f != nil {
		dv.Filters = append(dv.Filters, *f)
	}
	dv.Lineage += " | " + step
	// A subset's size is private whatever the registered dataset's: it is
	// a count query.
	sc.PublicN = 0
	sc.Name = dv.Lineage
	return &handleEntry{rt: e.rt, name: e.name, schema: sc, deriv: dv, server: e.server}
}

// filter implements filter(ds, col=, op=, value=).
func (rt *Runtime) filter(ds any, kws ...KW) Dataset {
	const fn = "filter"
	a := mustArgs(fn, kws)
	e := rt.parentEntry(fn, ds)
	sc := e.schema
	col, op, raw := a.str("col"), a.str("op"), a.Vals["value"]
	f := release.Filter{Column: col, Op: op}
	var shown string
	switch {
	case slices.Contains(sc.Columns, col):
		v, ok := number(raw)
		if !ok {
			panic(errorf(NameArgumentError, "%s: column %q is numeric: value must be a finite number, got %s", fn, col, typeName(raw)))
		}
		f.Value, shown = v, fmt.Sprint(v)
	case sc.Categorical[col] != nil:
		if op != "==" && op != "!=" {
			panic(errorf(NameArgumentError, "%s: column %q is categorical: op must be == or != (categories have no order)", fn, col))
		}
		s, ok := raw.(string)
		if !ok {
			panic(errorf(NameArgumentError, "%s: column %q is categorical: value must be one of its categories (a string), got %s", fn, col, typeName(raw)))
		}
		dom := sc.Categorical[col]
		i := slices.Index(dom, s)
		if s == ledger.OtherCategory {
			i = len(dom)
		}
		if i < 0 {
			panic(errorf(NameArgumentError, "%s: %q is not a category of column %q; its public domain is %s (and %q for every other value)", fn, s, col, strings.Join(dom, ", "), ledger.OtherCategory))
		}
		f.Value, shown = float64(i), fmt.Sprintf("%q", s)
	default:
		panic(errorf(NameArgumentError, "%s: no column %q; the columns are %s", fn, col, strings.Join(append(append([]string(nil), sc.Columns...), categoricalNames(sc)...), ", ")))
	}
	return registerHandle(derivedEntry(e, sc, fmt.Sprintf("%s %s %s", col, op, shown), &f))
}

// floatParam converts filter's value when its column is numeric.
var floatParam = catalog.Param{Name: "value", Type: "float"}

// number converts a keyword's numeric value.
func number(v any) (float64, bool) {
	f, err := convert(&floatParam, v)
	if err != nil {
		return 0, false
	}
	x := f.(float64)
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
}

// selectColumns implements select_columns(ds, cols=).
func (rt *Runtime) selectColumns(ds any, kws ...KW) Dataset {
	const fn = "select_columns"
	a := mustArgs(fn, kws)
	e := rt.parentEntry(fn, ds)
	sc := e.schema
	cols := a.Strs("cols")
	if len(cols) == 0 {
		panic(errorf(NameArgumentError, "%s: cols names no column; give cols=[]string{\"a\", \"b\"}", fn))
	}
	out := sc
	out.Columns, out.Bounds, out.Categorical, out.Mean = nil, nil, nil, nil
	if sc.Center == "public-mean" {
		out.Mean = []float64{}
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c] {
			panic(errorf(NameArgumentError, "%s: column %q listed twice", fn, c))
		}
		seen[c] = true
		switch {
		case slices.Contains(sc.Columns, c):
			out.Columns = append(out.Columns, c)
			if b, ok := sc.Bounds[c]; ok {
				if out.Bounds == nil {
					out.Bounds = map[string][2]float64{}
				}
				out.Bounds[c] = b
			}
			if sc.Center == "public-mean" && len(sc.Mean) == sc.D {
				out.Mean = append(out.Mean, sc.Mean[slices.Index(sc.Columns, c)])
			}
		case sc.Categorical[c] != nil:
			if out.Categorical == nil {
				out.Categorical = map[string][]string{}
			}
			out.Categorical[c] = sc.Categorical[c]
		default:
			panic(errorf(NameArgumentError, "%s: no column %q; the columns are %s", fn, c, strings.Join(append(append([]string(nil), sc.Columns...), categoricalNames(sc)...), ", ")))
		}
	}
	if out.Columns == nil {
		out.Columns = []string{}
	}
	out.D = len(out.Columns)
	return registerHandle(derivedEntry(e, out, "columns "+strings.Join(cols, ", "), nil))
}
