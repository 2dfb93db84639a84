package runtime

// private_synthesize: its result, a public synthetic table
// (mechanisms/synthdp through the execution core).

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/privnotes/privnotes/dsl/release"
)

func init() { resultType(synthTableResult) }

func synthTableResult(rel *release.Release) *SynthTable {
	if rel.Value == nil { // a dry run: the receipt only
		return &SynthTable{releaseBase: releaseBase{rel.Receipt}}
	}
	v := rel.Value.(*release.Synth)
	return &SynthTable{Columns: v.Columns, Rows: v.Rows(), Numeric: v.Numeric, releaseBase: releaseBase{rel.Receipt}}
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
	return fmt.Sprintf("private synthetic table: %d rows × %d columns (public: explore it freely; CSV() or download for all rows)", len(r.Rows), len(r.Columns))
}

func (r *SynthTable) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Receipt == nil || r.Rows == nil); ok {
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
	return r.text(b.String())
}

// HTML renders the first rows, then the receipt.
func (r *SynthTable) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Receipt == nil || r.Rows == nil); ok {
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
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *SynthTable) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}
