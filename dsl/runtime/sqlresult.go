package runtime

// private_sql's result: a table of keys and noisy values (release.Table)
// with its receipt, shown as an HTML table in notebooks and as aligned
// text in the REPL and `privnotes run`.

import (
	"fmt"
	"html"
	"math"
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
	// parts are the noisy vectors behind AVG, VARIANCE and STDDEV
	// columns (release.Table.Parts), for their intervals.
	parts map[string][][]float64
	releaseBase
}

func tableResult(rel *release.Release) *TableResult {
	if rel.Value == nil { // a dry run: the receipt (EXPLAIN) only
		return &TableResult{releaseBase: releaseBase{rel.Receipt}}
	}
	t := rel.Value.(*release.Table)
	return &TableResult{Columns: t.Columns, Kinds: t.Kinds, Rows: t.Rows, parts: t.Parts, releaseBase: releaseBase{rel.Receipt}}
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

// IntervalOf returns the level confidence interval (lo, hi) of a cell,
// addressed as Get's: r.IntervalOf("north", "n", 0.95). COUNT and SUM
// cells: the value ± the noise's half-width; AVG: Fieller's set from the
// noisy centred sum and count; VARIANCE and STDDEV: a conservative
// interval from their three noisy parts. A QUANTILE column has a rank
// bound instead (RankErrorOf).
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
	if ok && m.Kind == release.ErrExponential {
		panic(errorf(NameArgumentError, "%s: column %q is a quantile, whose error is a rank bound, not an interval of values: r.RankErrorOf(%q, level)", fn, r.Columns[c], r.Columns[c]))
	}
	if !ok {
		panic(errorf(NameArgumentError, "%s: column %q (%s) carries no confidence interval (a release stored before its columns carried their error)", fn, r.Columns[c], r.Kinds[c]))
	}
	lo, hi, err := m.CellInterval(r.Rows[i][c].(float64), r.cellParts(i, c), level)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	return lo, hi
}

// RankErrorOf returns a QUANTILE or MEDIAN column's error bound at level,
// in rows, the same for every group: with probability at least level a
// group's released value has a rank within ±k rows of its target rank
// q·n, beyond the least distance any point of the public grid has (as
// QuantileResult.RankError). It is no interval of values.
func (r *TableResult) RankErrorOf(col string, level float64) int {
	const fn = "RankErrorOf"
	mustLevel(fn, level)
	if r == nil || r.Receipt == nil {
		panic(errorf(NameArgumentError, "%s: no result", fn))
	}
	m, ok := release.ErrorsOf(r.Receipt.Params)[col]
	if !ok || m.Kind != release.ErrExponential {
		panic(errorf(NameArgumentError, "%s: %q is not a quantile column carrying a rank bound; IntervalOf gives the other columns' intervals", fn, col))
	}
	k, err := m.RankError(level)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	return k
}

// cellParts are the noisy parts behind cell (row, c), or nil.
func (r *TableResult) cellParts(row, c int) []float64 {
	p := r.parts[r.Columns[c]]
	if len(p) == 0 {
		return nil
	}
	out := make([]float64, len(p))
	for k, v := range p {
		if row >= len(v) {
			return nil
		}
		out[k] = v[row]
	}
	return out
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

// hasInterval: column c's cells carry a confidence interval of values
// (a quantile's rank bound is not one).
func (r *TableResult) hasInterval(errs map[int]release.ErrorModel, c int) bool {
	m, ok := errs[c]
	return ok && m.Kind != release.ErrExponential
}

// halfWidth is cell (row, c)'s 95 % half-width, if it has one: the
// noise's for COUNT and SUM; for the others, whose interval is not
// symmetric, the larger distance from the value to its ends, so that
// value ± h holds the interval.
func (r *TableResult) halfWidth(errs map[int]release.ErrorModel, row, c int) (float64, bool) {
	m, ok := errs[c]
	if !ok || row >= len(r.Rows) {
		return 0, false
	}
	switch m.Kind {
	case release.ErrLaplace, release.ErrGaussian:
		h, err := m.HalfWidth(release.DefaultLevel)
		return h, err == nil
	case release.ErrRatio, release.ErrVariance, release.ErrFitted:
		v, isNum := r.Rows[row][c].(float64)
		if !isNum {
			return 0, false
		}
		lo, hi, err := m.CellInterval(v, r.cellParts(row, c), release.DefaultLevel)
		if err != nil {
			return 0, false
		}
		return math.Max(v-lo, hi-v), true
	}
	return 0, false
}

// barInterval is the 95 % interval of bar i (bars: one key column, one
// value column).
func (r *TableResult) barInterval(i int) (float64, float64, bool) {
	errs := r.columnErrors()
	for c := range r.Columns {
		if r.Kinds[c] == "key" || i >= len(r.Rows) {
			continue
		}
		m, ok := errs[c]
		v, isNum := r.Rows[i][c].(float64)
		if !ok || !isNum {
			return 0, 0, false
		}
		lo, hi, err := m.CellInterval(v, r.cellParts(i, c), release.DefaultLevel)
		return lo, hi, err == nil
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
// A column with intervals is followed by each cell's 95 % half-width
// ("<column> ±95%"): the same in every row for COUNT and SUM, per cell for
// AVG, VARIANCE and STDDEV; a quantile column by its rank bound
// ("<column> rank ±95%", in rows).
func (r *TableResult) tableRows() [][]string {
	errs := r.columnErrors()
	var header []string
	for i, c := range r.Columns {
		header = append(header, c)
		if r.hasInterval(errs, i) {
			header = append(header, c+" ±95%")
		} else if m, ok := errs[i]; ok && m.Kind == release.ErrExponential {
			header = append(header, c+" rank ±95%")
		}
	}
	rows := [][]string{header}
	for g, row := range r.Rows {
		var out []string
		for i, c := range row {
			out = append(out, cellText(c))
			if r.hasInterval(errs, i) {
				h, ok := r.halfWidth(errs, g, i)
				cell := ""
				if ok {
					cell = fmtNum(h)
				}
				out = append(out, cell)
			} else if m, ok := errs[i]; ok && m.Kind == release.ErrExponential {
				out = append(out, strconv.Itoa(m.RankError95))
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
// A value with an interval is followed by its 95 % half-width, "± h".
func (r *TableResult) displayCell(errs map[int]release.ErrorModel, row, i int, v any) string {
	if f, ok := v.(float64); ok && r.Kinds[i] != "key" {
		s := strconv.FormatFloat(f, 'g', 6, 64)
		if r.Kinds[i] == "count" {
			s = strconv.FormatFloat(f, 'f', 0, 64)
		}
		if h, ok := r.halfWidth(errs, row, i); ok {
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
			row[j] = r.displayCell(errs, i, j, c)
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
	b.WriteString(r.errorNote())
	return r.text(b.String())
}

// errorNote is the lines under the table that say what its ± mean and
// state each quantile column's rank bound, or "".
func (r *TableResult) errorNote() string {
	errs := r.columnErrors()
	kinds := map[string]bool{}
	var ranks []string
	for i, c := range r.Columns {
		m, ok := errs[i]
		if !ok {
			continue
		}
		kinds[m.Kind] = true
		if m.Kind == release.ErrExponential {
			ranks = append(ranks, fmt.Sprintf("%s: with probability ≥ 95 %% each group's value has a rank within ±%d rows of its target rank, beyond the closest any grid point comes (a rank bound, not an interval of values)\n", c, m.RankError95))
		}
	}
	var what []string
	if kinds[release.ErrLaplace] || kinds[release.ErrGaussian] {
		what = append(what, "the noise's for counts and sums")
	}
	if kinds[release.ErrFitted] {
		what = append(what, "around each group's least-squares fit to the noisy total for consistent=true")
	}
	if kinds[release.ErrRatio] {
		what = append(what, "Fieller's set from the noisy centred sum and count for AVG")
	}
	if kinds[release.ErrVariance] {
		what = append(what, "a conservative interval from the noisy count, sum and sum of squares for VARIANCE and STDDEV")
	}
	out := ""
	if len(what) > 0 {
		out = "± : 95 % confidence interval of each cell (" + strings.Join(what, "; ") + ")\n"
	}
	return out + strings.Join(ranks, "")
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
		if r.hasInterval(errs, i) {
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
				fmt.Fprintf(&b, "<th style=\"text-align:left\">%s</th>", html.EscapeString(r.displayCell(errs, i, j, c)))
			} else {
				fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(r.displayCell(errs, i, j, c)))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
	if note := r.errorNote(); note != "" {
		for _, line := range strings.Split(strings.TrimSuffix(note, "\n"), "\n") {
			b.WriteString("<p style=\"font-size:smaller\">" + html.EscapeString(line) + "</p>\n")
		}
	}
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
