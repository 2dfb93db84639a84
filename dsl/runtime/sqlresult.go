package runtime

// private_sql's result: a table of keys and noisy values (release.Table)
// with its receipt, shown as an HTML table in notebooks and as aligned
// text in the REPL and `privnotes run`.

import (
	"encoding/csv"
	"fmt"
	"html"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/privnotes/privnotes/dsl/release"
)

// TableResult is a private_sql release: one row per group of the keys'
// public domains, one column per SELECT item. Key cells are strings,
// float64 or nil (a NULL key); value cells are float64, as released.
type TableResult struct {
	Columns []string
	// Kinds says what each column holds: "key", or the aggregate
	// ("count", "count distinct", "sum", "avg", "variance", "stddev", "quantile").
	Kinds []string
	Rows  [][]any
	releaseBase
}

func tableResult(rel *release.Release) *TableResult {
	if rel.Value == nil { // a dry run: the receipt (EXPLAIN) only
		return &TableResult{releaseBase: releaseBase{rel.Receipt}}
	}
	t := rel.Value.(*release.Table)
	return &TableResult{Columns: t.Columns, Kinds: t.Kinds, Rows: t.Rows, releaseBase: releaseBase{rel.Receipt}}
}

// KeyColumns and ValueColumns name the key and the value columns.
func (r *TableResult) KeyColumns() []string   { return r.pick(true) }
func (r *TableResult) ValueColumns() []string { return r.pick(false) }

func (r *TableResult) pick(keys bool) []string {
	if r == nil {
		return nil
	}
	var out []string
	for i, c := range r.Columns {
		if (r.Kinds[i] == "key") == keys {
			out = append(out, c)
		}
	}
	return out
}

// Get returns the value of column in the row whose keys are keys, given
// in the order of the key columns: r.Get("north", "f", "avg_income").
// A number key may be given as an int or a float64.
func (r *TableResult) Get(args ...any) float64 {
	if r == nil || r.Receipt == nil || r.Rows == nil {
		panic(errorf(NameArgumentError, "Get: no result (the TableResult is empty or a dry run)"))
	}
	keyCols := r.KeyColumns()
	if len(args) != len(keyCols)+1 {
		panic(errorf(NameArgumentError, "Get takes one value per key column (%s) and then a value column's name; got %d arguments", strings.Join(keyCols, ", "), len(args)))
	}
	col, ok := args[len(args)-1].(string)
	c := -1
	for i, name := range r.Columns {
		if ok && name == col && r.Kinds[i] != "key" {
			c = i
		}
	}
	if c < 0 {
		panic(errorf(NameArgumentError, "Get: the last argument names a value column, one of %s", strings.Join(r.ValueColumns(), ", ")))
	}
	want := args[:len(args)-1]
	for _, row := range r.Rows {
		match, k := true, 0
		for i, cell := range row {
			if r.Kinds[i] != "key" {
				continue
			}
			match = match && sameKey(cell, want[k])
			k++
		}
		if match {
			return row[c].(float64)
		}
	}
	panic(errorf(NameArgumentError, "Get: no group with keys %v; the keys come from the public domains (%d groups)", want, len(r.Rows)))
}

func sameKey(cell, v any) bool {
	switch x := v.(type) {
	case nil:
		return cell == nil
	case string:
		s, ok := cell.(string)
		return ok && s == x
	case int:
		f, ok := cell.(float64)
		return ok && f == float64(x)
	case float64:
		f, ok := cell.(float64)
		return ok && f == x
	}
	return false
}

// cellText is a cell as the displays and the CSV write it.
func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case float64:
		return fmtNum(x)
	}
	return fmt.Sprint(v)
}

// tableRows is the table with a header row, for CSV and download.
func (r *TableResult) tableRows() [][]string {
	rows := [][]string{append([]string(nil), r.Columns...)}
	for _, row := range r.Rows {
		out := make([]string, len(row))
		for i, c := range row {
			out[i] = cellText(c)
		}
		rows = append(rows, out)
	}
	return rows
}

// CSV is the table as CSV: a header line, then one line per released
// group, every value as released (shortest round-trip form).
func (r *TableResult) CSV() string {
	if r == nil || r.Rows == nil {
		return ""
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.WriteAll(r.tableRows()) // a strings.Builder does not fail
	return b.String()
}

// tableShown is how many rows the displays show before eliding the
// middle ones.
const tableShown = 60

// shownRows are the indices of the rows a display shows, -1 standing for
// the elided middle.
func shownRows(n int) []int {
	var out []int
	for i := range n {
		if n > tableShown && i >= tableShown/2 && i < n-10 {
			if i == tableShown/2 {
				out = append(out, -1)
			}
			continue
		}
		out = append(out, i)
	}
	return out
}

// displayCell rounds values for display (6 significant digits); keys are
// shown as they are. CSV() and Rows keep every digit.
func (r *TableResult) displayCell(i int, v any) string {
	if f, ok := v.(float64); ok && r.Kinds[i] != "key" {
		if r.Kinds[i] == "count" {
			return strconv.FormatFloat(f, 'f', 0, 64)
		}
		return strconv.FormatFloat(f, 'g', 6, 64)
	}
	return cellText(v)
}

func (r *TableResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Receipt == nil); ok {
		return s
	}
	grid := [][]string{r.Columns}
	for _, i := range shownRows(len(r.Rows)) {
		if i < 0 {
			grid = append(grid, []string{fmt.Sprintf("⋮ %d more groups", len(r.Rows)-tableShown/2-10)})
			continue
		}
		row := make([]string, len(r.Columns))
		for j, c := range r.Rows[i] {
			row[j] = r.displayCell(j, c)
		}
		grid = append(grid, row)
	}
	width := make([]int, len(r.Columns))
	for _, row := range grid {
		if len(row) != len(width) {
			continue
		}
		for j, s := range row {
			width[j] = max(width[j], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	for _, row := range grid {
		for j, s := range row {
			pad := strings.Repeat(" ", max(0, width[min(j, len(width)-1)]-utf8.RuneCountInString(s)))
			if j > 0 {
				b.WriteString("  ")
			}
			if len(row) == len(width) && r.Kinds[j] != "key" {
				b.WriteString(pad + s) // numbers right-aligned
			} else if j < len(row)-1 {
				b.WriteString(s + pad)
			} else {
				b.WriteString(s)
			}
		}
		b.WriteString("\n")
	}
	return r.text(b.String())
}

// HTML renders the table, then the receipt.
func (r *TableResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Receipt == nil); ok {
		return s
	}
	var b strings.Builder
	b.WriteString("<table><caption>private SQL</caption>\n<thead><tr>")
	for i, c := range r.Columns {
		suffix := ""
		if r.Kinds[i] != "key" {
			suffix = " (DP)"
		}
		fmt.Fprintf(&b, "<th>%s%s</th>", html.EscapeString(c), suffix)
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, i := range shownRows(len(r.Rows)) {
		if i < 0 {
			fmt.Fprintf(&b, "<tr><td colspan=\"%d\">⋮ %d more groups</td></tr>\n", len(r.Columns), len(r.Rows)-tableShown/2-10)
			continue
		}
		b.WriteString("<tr>")
		for j, c := range r.Rows[i] {
			if r.Kinds[j] == "key" {
				fmt.Fprintf(&b, "<th style=\"text-align:left\">%s</th>", html.EscapeString(r.displayCell(j, c)))
			} else {
				fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(r.displayCell(j, c)))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *TableResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// bars is what plot_histogram draws of a table: one key column and one
// value column.
func (r *TableResult) bars() (keys []string, vals []float64, ok bool) {
	if r == nil || r.Rows == nil || len(r.KeyColumns()) != 1 || len(r.ValueColumns()) != 1 {
		return nil, nil, false
	}
	for _, row := range r.Rows {
		for j, c := range row {
			if r.Kinds[j] == "key" {
				keys = append(keys, cellText(c))
			} else {
				vals = append(vals, c.(float64))
			}
		}
	}
	return keys, vals, true
}
