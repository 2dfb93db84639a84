package ledger

import (
	"fmt"
	"sort"
	"strings"
)

// ColumnFact is what the registry makes public about one column: its kind
// and the bounds or domain the data owner declared. Notebooks, %datasets
// and `privnotes dataset show` display these and nothing derived from
// the data: an analyst needs them to write a call (which columns a sum or
// a quantile may read, which keys a by= groups into) before spending any
// budget.
type ColumnFact struct {
	Name string
	// Kind is "numeric" (a feature column), "categorical" or "label".
	Kind string
	// Bounded says whether Bounds holds the owner's public [lo, hi]: a
	// numeric column's --bounds, a label's [-label clip, label clip].
	Bounded bool
	Bounds  [2]float64
	// Domain is a categorical column's public domain, without the bucket
	// OtherCategory that values outside it fall into.
	Domain []string
}

// PublicColumns lists the schema's columns with their public facts: the
// numeric features in their registered order, then the categorical
// columns by name, then the label. The user column of a user-level
// dataset is an identifier, not analysed, and is not among them. A matrix
// dataset has no columns.
func (s Schema) PublicColumns() []ColumnFact {
	var out []ColumnFact
	for _, c := range s.Columns {
		f := ColumnFact{Name: c, Kind: "numeric"}
		f.Bounds, f.Bounded = s.Bounds[c]
		out = append(out, f)
	}
	cats := make([]string, 0, len(s.Categorical))
	for c := range s.Categorical {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	for _, c := range cats {
		out = append(out, ColumnFact{Name: c, Kind: "categorical", Domain: append([]string(nil), s.Categorical[c]...)})
	}
	if s.Label != "" {
		out = append(out, ColumnFact{Name: s.Label, Kind: "label", Bounded: s.LabelClip > 0, Bounds: [2]float64{-s.LabelClip, s.LabelClip}})
	}
	return out
}

// Public describes the column's public facts in a few words, with a
// categorical domain cut after limit categories (limit <= 0: all).
func (f ColumnFact) Public(limit int) string {
	switch {
	case f.Kind == "categorical":
		return "domain " + FormatDomain(f.Domain, limit) + ` (other values: "` + OtherCategory + `")`
	case f.Bounded:
		return fmt.Sprintf("bounds [%g, %g]", f.Bounds[0], f.Bounds[1])
	}
	return "no public bounds"
}

// FormatDomain writes a categorical domain as {a, b, c}, cut after limit
// categories (limit <= 0: all) with the count of the whole.
func FormatDomain(dom []string, limit int) string {
	if limit > 0 && len(dom) > limit {
		return fmt.Sprintf("{%s, … (%d categories)}", strings.Join(dom[:limit], ", "), len(dom))
	}
	return "{" + strings.Join(dom, ", ") + "}"
}
