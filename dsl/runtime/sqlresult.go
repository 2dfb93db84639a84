package runtime

// private_sql's result: a table of keys and noisy values (release.Table)
// with its receipt, shown as an HTML table in notebooks and as aligned
// text in the REPL and `privnotes run`.

import (
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
	i, c := r.locate("Get", args)
	return r.Rows[i][c].(float64)
}

// IntervalOf returns the level confidence interval (lo, hi) of a COUNT or
// SUM cell, addressed as Get's: r.IntervalOf("north", "n", 0.95). AVG,
// VARIANCE and STDDEV columns carry none (they are post-processed from
// several noisy parts the release does not hold).
func (r *TableResult) IntervalOf(args ...any) (float64, float64) {
	const fn = "IntervalOf"
	if len(args) == 0 {
		panic(errorf(NameArgumentError, "%s takes the keys, a value column's name and a level", fn))
	}
	level, ok := args[len(args)-1].(float64)
	if !ok {
		panic(errorf(NameArgumentError, "%s: the last argument is the level, a number such as 0.95", fn))
	}
	mustLevel(fn, level)
	i, c := r.locate(fn, args[:len(args)-1])
	m, ok := release.ErrorsOf(r.Receipt.Params)[r.Columns[c]]
	if !ok {
		panic(errorf(NameArgumentError, "%s: column %q (%s) carries no confidence interval; COUNT and SUM columns do", fn, r.Columns[c], r.Kinds[c]))
	}
	lo, hi, err := m.Interval(r.Rows[i][c].(float64), level)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	return lo, hi
}

// locate finds the row whose keys are args' leading values and the value
// column args' last one names.
func (r *TableResult) locate(fn string, args []any) (row, col int) {
	if r == nil || r.Receipt == nil || r.Rows == nil {
		panic(errorf(NameArgumentError, "%s: no result (the TableResult is empty or a dry run)", fn))
	}
	keyCols := r.KeyColumns()
	if len(args) != len(keyCols)+1 {
		panic(errorf(NameArgumentError, "%s takes one value per key column (%s) and then a value column's name; got %d arguments", fn, strings.Join(keyCols, ", "), len(args)))
	}
	name, ok := args[len(args)-1].(string)
	c := -1
	for i, n := range r.Columns {
		if ok && n == name && r.Kinds[i] != "key" {
			c = i
		}
	}
	if c < 0 {
		panic(errorf(NameArgumentError, "%s: the last argument names a value column, one of %s", fn, strings.Join(r.ValueColumns(), ", ")))
	}
	want := args[:len(args)-1]
	for i, row := range r.Rows {
		match, k := true, 0
		for j, cell := range row {
			if r.Kinds[j] != "key" {
				continue
			}
			match = match && sameKey(cell, want[k])
			k++
		}
		if match {
			return i, c
		}
	}
	panic(errorf(NameArgumentError, "%s: no group with keys %v; the keys come from the public domains (%d groups)", fn, want, len(r.Rows)))
}

// columnErrors are the receipt's ErrorModels of the value columns, by
// column index (nil without any).
func (r *TableResult) columnErrors() map[int]release.ErrorModel {
	if r.Receipt == nil {
		return nil
	}
	byName := release.ErrorsOf(r.Receipt.Params)
	if len(byName) == 0 {
		return nil
	}
	out := map[int]release.ErrorModel{}
	for i, c := range r.Columns {
		if m, ok := byName[c]; ok && r.Kinds[i] != "key" {
			out[i] = m
		}
	}
	return out
}

// halfWidth is column c's 95 % half-width, if it has one.
func (r *TableResult) halfWidth(errs map[int]release.ErrorModel, c int) (float64, bool) {
	m, ok := errs[c]
	if !ok {
		return 0, false
	}
	h, err := m.HalfWidth(release.DefaultLevel)
	return h, err == nil
}

// barInterval is the 95 % interval of bar i (bars: one key column, one
// value column).
func (r *TableResult) barInterval(i int) (float64, float64, bool) {
	errs := r.columnErrors()
	for c := range r.Columns {
		if r.Kinds[c] == "key" || i >= len(r.Rows) {
			continue
		}
		h, ok := r.halfWidth(errs, c)
		v, isNum := r.Rows[i][c].(float64)
		if !ok || !isNum {
			return 0, 0, false
		}
		return v - h, v + h, true
	}
	return 0, 0, false
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
// A COUNT or SUM column is followed by its 95 % half-width
// ("<column> ±95%"), the same for every row.
func (r *TableResult) tableRows() [][]string {
	errs := r.columnErrors()
	var header []string
	for i, c := range r.Columns {
		header = append(header, c)
		if _, ok := r.halfWidth(errs, i); ok {
			header = append(header, c+" ±95%")
		}
	}
	rows := [][]string{header}
	for _, row := range r.Rows {
		var out []string
		for i, c := range row {
			out = append(out, cellText(c))
			if h, ok := r.halfWidth(errs, i); ok {
				out = append(out, fmtNum(h))
			}
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
	return csvText(r.tableRows())
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
// A COUNT or SUM value is followed by its 95 % half-width, "± h".
func (r *TableResult) displayCell(errs map[int]release.ErrorModel, i int, v any) string {
	if f, ok := v.(float64); ok && r.Kinds[i] != "key" {
		s := strconv.FormatFloat(f, 'g', 6, 64)
		if r.Kinds[i] == "count" {
			s = strconv.FormatFloat(f, 'f', 0, 64)
		}
		if h, ok := r.halfWidth(errs, i); ok {
			s += " ± " + fmtHalfWidth(h)
		}
		return s
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
	errs := r.columnErrors()
	grid := [][]string{r.Columns}
	for _, i := range shownRows(len(r.Rows)) {
		if i < 0 {
			grid = append(grid, []string{fmt.Sprintf("⋮ %d more groups", len(r.Rows)-tableShown/2-10)})
			continue
		}
		row := make([]string, len(r.Columns))
		for j, c := range r.Rows[i] {
			row[j] = r.displayCell(errs, j, c)
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
	errs := r.columnErrors()
	var b strings.Builder
	b.WriteString("<table><caption>private SQL</caption>\n<thead><tr>")
	for i, c := range r.Columns {
		suffix := ""
		if r.Kinds[i] != "key" {
			suffix = " (DP)"
		}
		if _, ok := r.halfWidth(errs, i); ok {
			suffix = " (DP, ± 95 %)"
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
				fmt.Fprintf(&b, "<th style=\"text-align:left\">%s</th>", html.EscapeString(r.displayCell(errs, j, c)))
			} else {
				fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(r.displayCell(errs, j, c)))
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
