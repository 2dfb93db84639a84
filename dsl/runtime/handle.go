package runtime

import (
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"sync"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Dataset is an opaque handle on a registered dataset, returned by
// dataset(name). It holds an id only: fmt prints the unexported fields of
// compiled structs it cannot call methods on (a handle inside a cell's
// struct), so nothing but a meaningless number may live here. Its methods
// and renderings show public schema only, never the number of rows or
// any value.
type Dataset struct {
	id uint64
}

// handleEntry is what an id stands for. Entries live in a process-wide
// table guarded by handlesMu.
type handleEntry struct {
	rt     *Runtime
	name   string
	schema ledger.Schema
	// deriv is set for a subset (filter, select): name and the charges
	// are the registered dataset's, schema is the subset's.
	deriv *release.Derivation
	// server is set for a dataset of a data service (dataset(name,
	// server="p1")): calls on it run there.
	server string
}

var (
	handlesMu sync.Mutex
	handles   = map[uint64]*handleEntry{}
	nextID    uint64
)

func registerHandle(e *handleEntry) Dataset {
	handlesMu.Lock()
	defer handlesMu.Unlock()
	nextID++
	handles[nextID] = e
	return Dataset{id: nextID}
}

func (h Dataset) entry() (*handleEntry, bool) {
	handlesMu.Lock()
	defer handlesMu.Unlock()
	e, ok := handles[h.id]
	return e, ok
}

// mustEntry returns the handle's entry or panics with a DatasetError.
func (h Dataset) mustEntry() *handleEntry {
	e, ok := h.entry()
	if !ok {
		panic(errorf(NameDatasetError, "not a dataset handle: use dataset(\"name\") (the zero Dataset names no dataset)"))
	}
	return e
}

// Name is the dataset's registered name.
func (h Dataset) Name() string { return h.mustEntry().name }

// Columns are the feature column names (public schema).
func (h Dataset) Columns() []string { return append([]string(nil), h.mustEntry().schema.Columns...) }

// D is the number of feature columns.
func (h Dataset) D() int { return h.mustEntry().schema.D }

// Clip is the registered L2 norm bound rows are clipped to.
func (h Dataset) Clip() float64 { return h.mustEntry().schema.Clip }

// Unit is the privacy unit: "row", or "user:COLUMN".
func (h Dataset) Unit() string { return unitString(h.mustEntry().schema) }

// Neighbour is the registered neighbouring relation.
func (h Dataset) Neighbour() string { return h.mustEntry().schema.Neighbour }

// Accountant is the registered composition rule ("zcdp", "basic", ...).
func (h Dataset) Accountant() string { return h.mustEntry().schema.Accountant }

// Label is the label column ("" if none).
func (h Dataset) Label() string { return h.mustEntry().schema.Label }

// Budget is the total (ε, δ) budget the owner granted.
func (h Dataset) Budget() accounting.Budget { return h.mustEntry().schema.Budget }

// String shows the public schema.
func (h Dataset) String() string {
	e, ok := h.entry()
	if !ok {
		return "Dataset(<none>)"
	}
	return describeSchema(e.schema)
}

// Format makes every fmt verb (%v, %+v, %#v, %s, %q, %d, %x, ...) show the
// public description, never the handle's fields.
func (h Dataset) Format(f fmt.State, verb rune) { fmt.Fprint(f, h.String()) }

// GoString is the %#v form.
func (h Dataset) GoString() string { return h.String() }

// MarshalJSON encodes the public schema.
func (h Dataset) MarshalJSON() ([]byte, error) {
	e, ok := h.entry()
	if !ok {
		return []byte("null"), nil
	}
	return json.Marshal(publicSchema(e.schema))
}

// HTML renders the public schema for notebooks: every column with its
// public bounds or domain, which the analyst's next call needs (a sum
// reads a bounded column, by= groups by a categorical one).
func (h Dataset) HTML() string {
	e, ok := h.entry()
	if !ok {
		return "<code>Dataset(&lt;none&gt;)</code>"
	}
	s := e.schema
	if s.IsMatrix() && s.Matrix != nil {
		return "<div class=\"privnotes-dataset\"><code>" + html.EscapeString(describeMatrix(s)) + "</code></div>"
	}
	var numeric, more []string
	for _, f := range s.PublicColumns() {
		name := html.EscapeString(f.Name)
		switch {
		case f.Kind == "numeric" && f.Bounded:
			numeric = append(numeric, fmt.Sprintf("%s [%g, %g]", name, f.Bounds[0], f.Bounds[1]))
		case f.Kind == "numeric":
			numeric = append(numeric, name)
		case f.Kind == "categorical":
			more = append(more, fmt.Sprintf("categorical column <b>%s</b>: %s", name, html.EscapeString(f.Public(0))))
		case f.Kind == "label" && f.Bounded:
			more = append(more, fmt.Sprintf("label column <b>%s</b>: |%s| ≤ %g", name, name, f.Bounds[1]))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<div class=\"privnotes-dataset\"><b>dataset %s</b>: d=%d, unit %s, clip %s, %s neighbours, %s accountant, budget ε=%g, δ=%g",
		html.EscapeString(s.Name), s.D, html.EscapeString(unitString(s)), clipString(s.Clip), html.EscapeString(s.Neighbour),
		html.EscapeString(s.Accountant), s.Budget.Eps, s.Budget.Delta)
	if s.Public() {
		fmt.Fprintf(&b, "<br><small><b>%s</b></small>", html.EscapeString(synthOriginText(s.Synthetic)))
	}
	if len(numeric) == 0 {
		numeric = []string{"none"}
	}
	fmt.Fprintf(&b, "<br><small>numeric columns (public bounds in brackets): %s</small>", strings.Join(numeric, ", "))
	for _, m := range more {
		fmt.Fprintf(&b, "<br><small>%s</small>", m)
	}
	b.WriteString("</div>")
	return b.String()
}

// clipString shows a registered clip, or "none" for a dataset registered
// without --clip (the row-clipping methods then need clip= in the call).
func clipString(clip float64) string {
	if clip == 0 {
		return "none"
	}
	return fmt.Sprintf("%.4g", clip)
}

func unitString(s ledger.Schema) string {
	if s.Unit == "user" {
		return "user:" + s.UserColumn
	}
	return "row"
}

func describeSchema(s ledger.Schema) string {
	if s.IsMatrix() && s.Matrix != nil {
		return describeMatrix(s)
	}
	cols := s.Columns
	more := ""
	if len(cols) > 8 {
		cols, more = cols[:8], fmt.Sprintf(", … (%d columns)", len(s.Columns))
	}
	cats := ""
	if names := categoricalNames(s); len(names) > 0 {
		cats = fmt.Sprintf(", categorical=[%s]", strings.Join(names, " "))
	}
	budget := fmt.Sprintf("budget ε=%g δ=%g", s.Budget.Eps, s.Budget.Delta)
	if s.Public() {
		budget = synthOriginText(s.Synthetic)
	}
	return fmt.Sprintf("Dataset(%s: d=%d, unit=%s, clip=%s, %s, columns=[%s%s]%s%s)",
		s.Name, s.D, unitString(s), clipString(s.Clip), budget, strings.Join(cols, " "), more, cats, publicFacts(s))
}

// synthOriginText says that a dataset is public synthetic data and which
// release its rows were sampled from (ledger.SynthOrigin, all public).
func synthOriginText(o *ledger.SynthOrigin) string {
	return fmt.Sprintf("PUBLIC synthetic data sampled from release %q of dataset %q (ledger record %d): calls on it charge nothing", o.Release, o.Dataset, o.Record)
}

// publicFacts is the tail of a handle's text: the public bounds of the
// numeric columns that have them and the categorical domains (issue 29:
// an analyst could not see them), cut so that the line stays readable.
func publicFacts(s ledger.Schema) string {
	var bounds, domains []string
	for _, f := range s.PublicColumns() {
		switch {
		case f.Kind == "numeric" && f.Bounded:
			bounds = append(bounds, fmt.Sprintf("%s [%g, %g]", f.Name, f.Bounds[0], f.Bounds[1]))
		case f.Kind == "categorical":
			domains = append(domains, f.Name+" "+ledger.FormatDomain(f.Domain, 8))
		}
	}
	var b strings.Builder
	if len(bounds) > 0 {
		if len(bounds) > 8 {
			bounds = append(bounds[:8], fmt.Sprintf("… (%d bounded)", len(bounds)))
		}
		fmt.Fprintf(&b, ", bounds={%s}", strings.Join(bounds, ", "))
	}
	if len(domains) > 0 {
		fmt.Fprintf(&b, ", domains={%s}", strings.Join(domains, ", "))
	}
	return b.String()
}

// categoricalNames lists a schema's categorical columns, sorted.
func categoricalNames(s ledger.Schema) []string { return release.CategoricalColumns(s) }

// Categorical returns the categorical columns with their public domains
// (values outside a domain are counted in "other").
func (h Dataset) Categorical() map[string][]string {
	out := map[string][]string{}
	for c, dom := range h.mustEntry().schema.Categorical {
		out[c] = append([]string(nil), dom...)
	}
	return out
}

// Bounds returns the public bounds [lo, hi] of the numeric columns that
// have them.
func (h Dataset) Bounds() map[string][2]float64 {
	out := map[string][2]float64{}
	for c, b := range h.mustEntry().schema.Bounds {
		out[c] = b
	}
	return out
}

// publicSchema is the JSON form of a handle: the fields a notebook may see.
func publicSchema(s ledger.Schema) any {
	return struct {
		Name        string                `json:"name"`
		Columns     []string              `json:"columns"`
		D           int                   `json:"d"`
		Clip        float64               `json:"clip"`
		Unit        string                `json:"unit"`
		Label       string                `json:"label,omitempty"`
		Neighbour   string                `json:"neighbour"`
		Accountant  string                `json:"accountant"`
		Budget      accounting.Budget     `json:"budget"`
		Bounds      map[string][2]float64 `json:"bounds,omitempty"`
		Categorical map[string][]string   `json:"categorical,omitempty"`
		Synthetic   *ledger.SynthOrigin   `json:"synthetic,omitempty"`
	}{s.Name, s.Columns, s.D, s.Clip, unitString(s), s.Label, s.Neighbour, s.Accountant, s.Budget, s.Bounds, s.Categorical, s.Synthetic}
}

// Budget is a dataset's budget state, as remaining(ds) returns it: public.
type Budget struct {
	Dataset    string
	Accountant string
	// Eps and Delta are what is left (for display: under zCDP, a later
	// spend of exactly Eps may not fit; the charge decides).
	Eps, Delta float64
	Spent      accounting.Budget
	Total      accounting.Budget
	Charges    int
	// FitsPure, FitsQuantile and FitsGaussian are what one more call may
	// spend, exactly what the accountant admits now: the largest ε of a
	// pure call (a Laplace count, sum or histogram), of a quantile (the
	// exponential mechanism, priced as bounded range) and of a Gaussian
	// call calibrated to (ε, FitsDelta): the dataset's δ, or under basic
	// composition what is left of it (0: no Gaussian call fits).
	FitsPure, FitsQuantile, FitsGaussian, FitsDelta float64
}

func (b Budget) fits() accounting.Fits {
	return accounting.Fits{Pure: b.FitsPure, BoundedRange: b.FitsQuantile, Gaussian: b.FitsGaussian, GaussianDelta: b.FitsDelta}
}

func (b Budget) String() string {
	return fmt.Sprintf("remaining ε=%.6g, δ=%.6g of %s (spent ε=%.6g, δ=%.6g in %d charges; %s accountant)\none more call fits: %s",
		b.Eps, b.Delta, fmtBudget(b.Total), b.Spent.Eps, b.Spent.Delta, b.Charges, b.Accountant, fitsText(b.fits()))
}

// HTML renders the budget state.
func (b Budget) HTML() string {
	return fmt.Sprintf("<div class=\"privnotes-budget\"><b>%s</b>: remaining ε=%.6g, δ=%.6g of ε=%.6g, δ=%.6g (spent ε=%.6g, δ=%.6g in %d charges; %s accountant)<br>one more call fits: %s</div>",
		html.EscapeString(b.Dataset), b.Eps, b.Delta, b.Total.Eps, b.Total.Delta, b.Spent.Eps, b.Spent.Delta, b.Charges, html.EscapeString(b.Accountant), html.EscapeString(fitsText(b.fits())))
}
