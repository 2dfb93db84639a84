package main

// dataset add of a CSV file with --header, --columns or an sklearn header
// line: the file is read as dsl/dataset reads it (the same header rules,
// column names and selection), through a query over DuckDB's CSV reader
// that the data engine then snapshots like any --from file.

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/privnotes/privnotes/dsl/dataset"
)

// SklearnTarget is the name an sklearn file's class column is registered
// under, as sklearn's own loaders call it.
const SklearnTarget = "target"

// csvPlan is how a CSV source is read: plainly by the data engine
// (query == ""), or through query.
type csvPlan struct {
	layout *dataset.Layout
	query  string
	// classNames is the public domain of the sklearn class column,
	// registered as the categorical column SklearnTarget.
	classNames []string
	// ragged counts the lines with the wrong number of fields, which the
	// query skips (--bad-rows drop; under reject they are an error).
	ragged int
}

func isCSVName(path string) bool {
	return strings.HasSuffix(strings.TrimSuffix(strings.ToLower(path), ".gz"), ".csv")
}

// openCSV opens path, gunzipping it if its name ends in .gz.
func openCSV(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(strings.ToLower(path), ".gz") {
		return f, nil
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// sniffCSV reads the first lines of path.
func sniffCSV(path, header string) (*dataset.Layout, error) {
	r, err := openCSV(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	l, err := dataset.SniffLayout(r, header)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return l, nil
}

// planCSV decides how to read the CSV file f.from. Without --header,
// --columns or an sklearn header line, a .csv file goes to the data
// engine as it is (its reader finds the header and names bad lines);
// otherwise the columns are named and chosen here and read by a query.
func planCSV(f *addFlags, cats map[string][]string) (*csvPlan, error) {
	explicit := f.header != "auto" || f.columns != ""
	l, err := sniffCSV(f.from, f.header)
	if err != nil {
		if explicit || !isCSVName(f.from) {
			return nil, err
		}
		return &csvPlan{}, nil // the data engine's reader decides
	}
	p := &csvPlan{layout: l}
	class := ""
	user := strings.TrimPrefix(f.unit, "user:")
	if l.ClassColumn != "" && f.columns == "" && f.label == "" && cats[l.ClassColumn] == nil && user != l.ClassColumn {
		class = l.ClassColumn
	}
	if l.Header == "yes" && !explicit && isCSVName(f.from) {
		return p, nil
	}
	opts := dataset.Options{Unit: f.unit, Label: f.label}
	if f.columns != "" {
		opts.Columns = strings.Split(f.columns, ",")
	}
	features, err := dataset.SelectColumns(l.Names, opts, class)
	if err != nil {
		return nil, err
	}
	var sel []string
	seen := map[string]bool{}
	keep := func(c string) {
		if c != "" && !seen[c] {
			seen[c] = true
			sel = append(sel, sqlIdent(c))
		}
	}
	for _, c := range features {
		keep(c)
	}
	keep(f.label)
	if f.unit != "row" {
		keep(user)
	}
	for _, c := range l.Names {
		if cats[c] != nil {
			keep(c)
		}
	}
	if class != "" {
		when := make([]string, len(l.ClassNames))
		for i, name := range l.ClassNames {
			when[i] = fmt.Sprintf("WHEN %d THEN %s", i, sqlString(name))
		}
		// Values other than 0..K-1 fall into the "other" bucket.
		sel = append(sel, fmt.Sprintf("CASE TRY_CAST(%s AS DOUBLE) %s END AS %s", sqlIdent(class), strings.Join(when, " "), sqlIdent(SklearnTarget)))
		p.classNames = l.ClassNames
	}
	abs, err := filepath.Abs(f.from)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(l.Names))
	for i, n := range l.Names {
		names[i] = sqlString(n)
	}
	skip, comp := 0, "none"
	if l.Header != "no" {
		skip = 1
	}
	if strings.HasSuffix(strings.ToLower(abs), ".gz") {
		comp = "gzip"
	}
	// DuckDB's reader stops at a line with the wrong number of fields
	// with a message about its sniffer; count them here, by line, first.
	ragged, first, err := raggedLines(abs, len(l.Names), skip)
	if err != nil {
		return nil, err
	}
	skipBad := ""
	if ragged > 0 {
		if f.badRows != "drop" {
			return nil, fmt.Errorf("%s, line %d: %d fields, expected %d; fix it or use --bad-rows drop (%d such lines in all)", f.from, first, fieldsAt(abs, first), len(l.Names), ragged)
		}
		skipBad, p.ragged = ", ignore_errors = true", ragged
	}
	p.query = fmt.Sprintf("SELECT %s FROM read_csv(%s, header = false, skip = %d, delim = ',', quote = '\"', names = [%s], compression = '%s'%s)",
		strings.Join(sel, ", "), sqlString(abs), skip, strings.Join(names, ", "), comp, skipBad)
	return p, nil
}

// raggedLines counts the records of a CSV file, after its first skip
// lines, whose number of fields is not width, and returns the line of the
// first. A file that is not CSV at all is an error.
func raggedLines(path string, width, skip int) (n, first int, err error) {
	r, err := openCSV(path)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	for i := 0; ; i++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return n, first, nil
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: malformed CSV: %v", path, err)
		}
		if i < skip || (len(rec) == 1 && strings.TrimSpace(rec[0]) == "") {
			continue
		}
		if len(rec) != width {
			if n == 0 {
				first, _ = cr.FieldPos(0)
			}
			n++
		}
	}
}

// fieldsAt returns the number of fields of the record at line.
func fieldsAt(path string, line int) int {
	r, err := openCSV(path)
	if err != nil {
		return 0
	}
	defer r.Close()
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	for {
		rec, err := cr.Read()
		if err != nil {
			return 0
		}
		if l, _ := cr.FieldPos(0); l == line {
			return len(rec)
		}
	}
}

func sqlIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func sqlString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// writeCSVNotes says how line 1 of a CSV file was read.
func writeCSVNotes(w io.Writer, mode string, p *csvPlan) {
	l := p.layout
	if l == nil {
		return
	}
	how := map[string]string{
		"yes":     "line 1 holds the column names",
		"no":      "no header line; columns are named c1, c2, ...",
		"sklearn": fmt.Sprintf("line 1 is an sklearn header (n_samples=%d, n_features=%d, label names); columns are named c1, c2, ...", l.Samples, l.Features),
	}[l.Header]
	if mode == "auto" {
		fmt.Fprintf(w, "header (detected by --header auto): %s\n", how)
	} else {
		fmt.Fprintf(w, "header (--header %s): %s\n", mode, how)
	}
	if p.ragged > 0 {
		fmt.Fprintf(w, "dropped %d lines with the wrong number of fields (--bad-rows drop)\n", p.ragged)
	}
	if p.classNames != nil {
		fmt.Fprintf(w, "class column: the last column, %s, is the categorical column %q with the label names as its public domain (%s), not a feature\n",
			l.ClassColumn, SklearnTarget, strings.Join(p.classNames, ", "))
	}
}
