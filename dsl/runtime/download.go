package runtime

// download(result, "name.csv"): a result leaves the notebook as a file the
// browser saves, from a data URI. The kernel writes no file: the bytes go
// to the front end in the display message; the REPL and privnotes run
// write them (engine.Display.File) to their --out directory.

import (
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/engine"
)

// downloadName is what a download's file name may be: a plain name, no
// path, no quotes or markup.
var downloadName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// download implements download(x, name): a link that saves x as CSV (or
// as JSON when name ends in .json).
func (rt *Runtime) download(x any, name string, kws ...KW) {
	const fn = "download"
	noKeywords(fn, kws)
	b := rt.current(fn)
	body, mime, err := downloadBytes(x, name)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	if b.out == nil {
		return
	}
	b.out.Display(downloadDisplay(name, mime, body))
}

// downloadBytes encodes x as the file name asks.
func downloadBytes(x any, name string) ([]byte, string, error) {
	if !downloadName.MatchString(name) {
		return nil, "", fmt.Errorf("file name %q: use letters, digits, '.', '_' and '-' only (no directories), ending in .csv or .json", name)
	}
	lower := strings.ToLower(name)
	if !strings.HasSuffix(lower, ".json") && !strings.HasSuffix(lower, ".csv") {
		return nil, "", fmt.Errorf("file name %q: end it in .csv (a table) or .json (every released field)", name)
	}
	if x == nil || isNilResult(x) {
		return nil, "", fmt.Errorf("no result to save (the value is nil or empty)")
	}
	if dryRun(x) {
		return nil, "", fmt.Errorf("a dry run's result has no values to save (its receipt is what the call would cost)")
	}
	switch {
	case strings.HasSuffix(lower, ".json"):
		if _, ok := csvRows(x); !ok {
			return nil, "", fmt.Errorf("want a result of a DSL function (PCAResult, CountResult, …) or a matrix, got %s", typeName(x))
		}
		body, err := json.MarshalIndent(x, "", "  ")
		if err != nil {
			return nil, "", fmt.Errorf("cannot encode %s as JSON: %v", typeName(x), err)
		}
		return append(body, '\n'), "application/json", nil
	case strings.HasSuffix(lower, ".csv"):
		rows, ok := csvRows(x)
		if !ok {
			return nil, "", fmt.Errorf("want a result of a DSL function (PCAResult, CountResult, …) or a matrix, got %s", typeName(x))
		}
		return []byte(csvText(rows)), "text/csv", nil
	}
	panic("unreachable: the extension was checked")
}

// downloadDisplay is the link, and a line of text for front ends without
// HTML.
func downloadDisplay(name, mime string, body []byte) engine.Display {
	uri := "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(body)
	link := fmt.Sprintf(`<a download="%s" href="%s">Download %s</a> (%d bytes)`, html.EscapeString(name), uri, html.EscapeString(name), len(body))
	text := fmt.Sprintf("%s: %d bytes, a download link in the notebook (json.Marshal gives the JSON in any front end)", name, len(body))
	return engine.Display{Data: engine.MIMEBundle{"text/html": link, "text/plain": text}, Metadata: map[string]any{},
		File: &engine.File{Name: name, MIME: mime, Data: body}}
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// csvText is rows as CSV, the first being the header: the one writer of
// downloads and of the tables' CSV().
func csvText(rows [][]string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.WriteAll(rows) // a strings.Builder does not fail
	return b.String()
}

// csvRows is x as a table with a header row; ok is false when x is no
// result of the DSL and no matrix.
func csvRows(x any) (rows [][]string, ok bool) {
	switch r := x.(type) {
	case *PCAResult:
		return r.csvRows(), true
	case *FedRepResult:
		return matrixRows(r.U, r.Columns, "u_"), true
	case *ClassifyJLResult:
		return matrixRows(r.U, r.Columns, "u_"), true
	case *LowRankResult:
		return matrixRows(r.Matrix, nil, "col_"), true
	case *CountResult:
		if r.GroupResult != nil {
			return groupRows(r.GroupResult, "count"), true
		}
		return r.csvWithHalfWidth([][]string{{"count"}, {fmtNum(r.Value)}}, []float64{r.Value}, nil, nil), true
	case *RegressionResult:
		rows = [][]string{{"term", "coefficient"}, {"intercept", fmtNum(r.Intercept)}}
		for j, c := range r.Coef {
			rows = append(rows, []string{columnName(r.Columns, j), fmtNum(c)})
		}
		return rows, true
	case *SumResult:
		if r.GroupResult != nil {
			return groupRows(r.GroupResult, "sum"), true
		}
		return r.csvWithHalfWidth([][]string{{"column", "sum"}, {r.Column, fmtNum(r.Value)}}, []float64{r.Value}, nil, nil), true
	case *MeanResult:
		if r.GroupResult != nil {
			return groupRows(r.GroupResult, "mean"), true
		}
		rows = [][]string{{"column", "mean"}}
		for i, v := range r.Values {
			rows = append(rows, []string{columnName(r.Columns, i), fmtNum(v)})
		}
		return r.csvWithHalfWidth(rows, r.Values, r.sums, r.counts), true
	case *GroupResult:
		return groupRows(r, r.Stat), true
	case *HistogramResult:
		rows = [][]string{{"key", "count"}}
		for i, k := range r.Keys {
			rows = append(rows, []string{k, fmtNum(r.Counts[i])})
		}
		return r.csvWithHalfWidth(rows, r.Counts, nil, nil), true
	case *QuantileResult:
		return [][]string{{"column", "q", "value"}, {r.Column, fmtNum(r.Q), fmtNum(r.Value)}}, true
	case *TableResult:
		return r.tableRows(), true
	case *SynthTable:
		return r.tableRows(), true
	case mat.Matrix:
		return matrixRows(r, nil, "c"), true
	}
	return nil, false
}

func groupRows(g *GroupResult, stat string) [][]string {
	rows := [][]string{{g.By, stat}}
	for i, k := range g.Keys {
		rows = append(rows, []string{k, fmtNum(g.Values[i])})
	}
	return g.csvWithHalfWidth(rows, g.Values, g.sums, g.counts)
}

// matrixRows is m with one row per data column (named when names are
// given) and one CSV column per matrix column.
func matrixRows(m mat.Matrix, names []string, prefix string) [][]string {
	r, c := m.Dims()
	head := make([]string, 0, c+1)
	if names != nil {
		head = append(head, "column")
	}
	for j := range c {
		head = append(head, prefix+strconv.Itoa(j+1))
	}
	rows := [][]string{head}
	for i := range r {
		row := make([]string, 0, c+1)
		if names != nil {
			row = append(row, columnName(names, i))
		}
		for j := range c {
			row = append(row, fmtNum(m.At(i, j)))
		}
		rows = append(rows, row)
	}
	return rows
}

// isNilResult reports whether x is a nil or empty result (a variable
// declared but never assigned, or whose call was interrupted).
func isNilResult(x any) bool {
	switch r := x.(type) {
	case *PCAResult:
		return r == nil || r.Receipt == nil || (r.Components == nil && !r.Receipt.DryRun)
	case *FedRepResult:
		return r == nil || r.Receipt == nil || (r.U == nil && !r.Receipt.DryRun)
	case *ClassifyJLResult:
		return r == nil || r.Receipt == nil || (r.U == nil && !r.Receipt.DryRun)
	case *LowRankResult:
		return r == nil || r.Receipt == nil || (r.Matrix == nil && !r.Receipt.DryRun)
	case *CountResult:
		return r == nil || r.Receipt == nil
	case *SumResult:
		return r == nil || r.Receipt == nil
	case *RegressionResult:
		return r == nil || r.Receipt == nil || (r.Coef == nil && !r.Receipt.DryRun)
	case *MeanResult:
		return r == nil || r.Receipt == nil
	case *GroupResult:
		return r == nil
	case *HistogramResult:
		return r == nil || r.Receipt == nil
	case *QuantileResult:
		return r == nil || r.Receipt == nil
	case *TableResult:
		return r == nil || r.Receipt == nil
	case *SynthTable:
		return r == nil || r.Receipt == nil || (r.Rows == nil && !r.Receipt.DryRun)
	case *mat.Dense:
		return r == nil || r.IsEmpty()
	}
	return false
}

// dryRun reports whether x is the result of a dry run. Every DSL result
// type carries its receipt in a field Receipt, so a new result type needs
// no case here.
func dryRun(x any) bool {
	v := reflect.ValueOf(x)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	f := v.Elem().FieldByName("Receipt")
	if !f.IsValid() {
		return false
	}
	rc, _ := f.Interface().(*Receipt)
	return rc != nil && rc.DryRun
}
