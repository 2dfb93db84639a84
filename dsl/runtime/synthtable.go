package runtime

// private_synthesize: its result, a public synthetic table
// (mechanisms/synthdp through the execution core).

import (
	"context"
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
)

func init() { resultType(synthTableResult) }

func synthTableResult(rel *release.Release) *SynthTable {
	if rel.Value == nil { // a dry run: the receipt only
		return &SynthTable{releaseBase: releaseBase{rel.Receipt}}
	}
	v := rel.Value.(*release.Synth)
	t := &SynthTable{Columns: v.Columns, Rows: v.Rows(), Numeric: v.Numeric, releaseBase: releaseBase{rel.Receipt},
		bounds: map[string][2]float64{}, domains: map[string][]string{}}
	// The model's cells are the table's public schema: a numeric column
	// holds its bins' midpoints, a categorical one its declared
	// categories and "other", which, as on the dataset, is in no
	// category's group.
	for i, c := range v.Columns {
		if v.Numeric[i] {
			m := v.Mids[i]
			t.bounds[c] = [2]float64{m[0], m[len(m)-1]}
		} else {
			l := v.Labels[i]
			t.domains[c] = append([]string(nil), l[:len(l)-1]...)
		}
	}
	return t
}

// SynthTable is a private_synthesize release: synthetic rows sampled from
// a private model of the columns. The rows are post-processing of the
// release, so the table is public: read, filter and count it with
// ordinary Go code, as often as you like, at no further cost.
type SynthTable struct {
	// Columns are the column names, in the order of each row.
	Columns []string
	// Rows are the synthetic rows: a string per categorical column (a
	// category or "other"), a float64 per numeric column (the midpoint
	// of its bin).
	Rows [][]any
	// Numeric marks the numeric columns.
	Numeric []bool
	releaseBase
	// bounds and domains are the public schema of a private_synthesize
	// table's columns (nil for a query's table: its rows give it).
	bounds  map[string][2]float64
	domains map[string][]string
}

// publicTableName names a public table as a call's data (receipts).
const publicTableName = "synthetic:table"

// publicRows are the table's rows as the execution core reads them.
func (r *SynthTable) publicRows() *release.PublicRows {
	return &release.PublicRows{Columns: r.Columns, Numeric: r.Numeric, Rows: r.Rows}
}

// schema is the table's public schema (release.PublicTableSchema).
func (r *SynthTable) schema() ledger.Schema {
	return release.PublicTableSchema(publicTableName, r.publicRows(), r.bounds, r.domains)
}

// Query runs one SQL SELECT exactly over the table, which is public: no
// noise, no charge, no ledger, as often as you like. Every table name in
// its FROM stands for this table, so a query written for private_sql runs
// here unchanged (with exact aggregates), and so does any other SELECT
// (WHERE, ORDER BY, LIMIT, joins of the table with itself, …). The engine
// is an in-memory DuckDB holding only these rows, with file and network
// access off. The result is a table of the same type: numbers as float64,
// text as string, NULL as nil.
func (r *SynthTable) Query(query string) *SynthTable {
	if r == nil || r.Rows == nil {
		panic(errorf(NameArgumentError, "Query: the table has no rows (a dry run's result?)"))
	}
	cols, rows, err := release.PublicQuery(context.Background(), "", r.publicRows(), query)
	if err != nil {
		panic(err)
	}
	if rows == nil {
		rows = [][]any{}
	}
	num := make([]bool, len(cols))
	for j := range cols {
		num[j] = true
		for _, row := range rows {
			if _, ok := row[j].(string); ok {
				num[j] = false
				break
			}
		}
	}
	return &SynthTable{Columns: cols, Rows: rows, Numeric: num}
}

// Column returns the index of the named column, or -1.
func (r *SynthTable) Column(name string) int {
	if r == nil {
		return -1
	}
	for i, c := range r.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// tableRows is the table with a header row, for CSV and download.
func (r *SynthTable) tableRows() [][]string {
	out := [][]string{append([]string(nil), r.Columns...)}
	for _, row := range r.Rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = synthCell(c)
		}
		out = append(out, cells)
	}
	return out
}

func synthCell(v any) string {
	if f, ok := v.(float64); ok {
		return fmtNum(f)
	}
	return fmt.Sprint(v)
}

// CSV is the table as CSV: a header line, then one line per row.
func (r *SynthTable) CSV() string {
	if r == nil || r.Rows == nil {
		return ""
	}
	return csvText(r.tableRows())
}

// synthShown is how many rows the displays show.
const synthShown = 10

func (r *SynthTable) title() string {
	if r.Receipt == nil {
		return fmt.Sprintf("public table: %d rows × %d columns (public rows: no privacy cost)", len(r.Rows), len(r.Columns))
	}
	return fmt.Sprintf("private synthetic table: %d rows × %d columns (public: explore it freely; CSV() or download for all rows)", len(r.Rows), len(r.Columns))
}

// body is the table's text followed by its receipt, if it has one (a
// query's table has none: nothing was released).
func (r *SynthTable) body(s string) string {
	if r.Receipt == nil {
		return s
	}
	return r.text(s)
}

func (r *SynthTable) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Rows == nil); ok {
		return s
	}
	grid := [][]string{r.Columns}
	for _, row := range r.Rows[:min(len(r.Rows), synthShown)] {
		cells := make([]string, len(row))
		for j, c := range row {
			cells[j] = synthCell(c)
		}
		grid = append(grid, cells)
	}
	width := make([]int, len(r.Columns))
	for _, row := range grid {
		for j, s := range row {
			width[j] = max(width[j], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	b.WriteString(r.title() + "\n")
	for _, row := range grid {
		for j, s := range row {
			if j > 0 {
				b.WriteString("  ")
			}
			b.WriteString(s + strings.Repeat(" ", width[j]-utf8.RuneCountInString(s)))
		}
		b.WriteString("\n")
	}
	if len(r.Rows) > synthShown {
		fmt.Fprintf(&b, "⋮ %d more rows\n", len(r.Rows)-synthShown)
	}
	return r.body(b.String())
}

// HTML renders the first rows, then the receipt.
func (r *SynthTable) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Rows == nil); ok {
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<table><caption>%s</caption>\n<thead><tr>", html.EscapeString(r.title()))
	for _, c := range r.Columns {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, row := range r.Rows[:min(len(r.Rows), synthShown)] {
		b.WriteString("<tr>")
		for _, c := range row {
			fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(synthCell(c)))
		}
		b.WriteString("</tr>\n")
	}
	if len(r.Rows) > synthShown {
		fmt.Fprintf(&b, "<tr><td colspan=\"%d\">⋮ %d more rows</td></tr>\n", len(r.Columns), len(r.Rows)-synthShown)
	}
	b.WriteString("</tbody></table>\n")
	if r.Receipt == nil {
		return "<div class=\"privnotes-result\">" + b.String() + "</div>"
	}
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *SynthTable) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// Table returns the rows of a PUBLIC dataset (registered by its owner
// with privnotes dataset add --from-synth: synthetic rows of a
// private_synthesize release) as a table to read, query (t.Query) and
// download freely, at no cost. A private dataset's rows are never handed
// out: Table refuses it.
func (h Dataset) Table() *SynthTable {
	e := h.mustEntry()
	if e.server != "" {
		panic(errorf(NameArgumentError, "Table: dataset %q is on data server %q; reading public rows from a server is not implemented yet", e.name, e.server))
	}
	// The execution core refuses a private dataset (or a subset).
	src := &source{name: e.name, schema: e.schema, deriv: e.deriv}
	t, err := e.rt.exec.PublicRows(context.Background(), src.ref())
	if err != nil {
		panic(err)
	}
	return &SynthTable{Columns: t.Columns, Rows: t.Rows, Numeric: t.Numeric, bounds: e.schema.Bounds, domains: e.schema.Categorical}
}
