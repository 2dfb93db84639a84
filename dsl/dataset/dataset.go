// Package dataset reads a data owner's CSV file into the numeric matrix a
// registered dataset stores, applying the public rules the owner chose at
// registration: which line is a header, which columns are features, the
// privacy unit, what happens to malformed rows, and centring by a public
// mean.
//
// It runs on the data owner's side only (privnotes dataset add). Its
// errors name lines and values of the file: they are for the owner's
// terminal and must never be shown to an analyst.
//
// Header rules (Options.Header):
//
//   - "yes": line 1 holds the column names.
//   - "no": there is no header; columns are named c1, c2, ...
//   - "sklearn": line 1 is scikit-learn's "n_samples,n_features,label names..."
//     line (as in breast_cancer.csv: "569,30,malignant,benign"); columns are
//     named c1, c2, ... and n_samples and n_features are checked against
//     the file. When the rows have n_features+1 fields, the last one is
//     the class label (0, 1, ... indexing the label names): it is not a
//     feature unless Options.Columns or Options.Label names it, and
//     Table.ClassColumn names it (the data engine registers it as a
//     categorical column whose domain is the label names).
//   - "auto" (default): line 1 is data when all its fields are numbers and
//     it has as many fields as line 2; it is an sklearn line when its first
//     two fields are non-negative integers, the others are not numbers, and
//     line 2 has n_features or n_features+1 fields; it is a header when it
//     has as many fields as line 2 and some field is not a number.
//     Anything else is an error asking for --header.
package dataset

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Options are the owner's public rules for reading a file.
type Options struct {
	Header  string   // "auto" (default), "yes", "no", "sklearn"
	Columns []string // feature columns: names, 1-based indices or ranges "3-10"; empty = all but user and label
	// Unit is "row" (default) or "user:COLUMN": the column whose value
	// identifies the privacy unit (all rows of one user).
	Unit  string
	Label string // optional label column (regression target), kept apart from the features
	// BadRows is "reject" (default: any malformed or non-finite row makes
	// the file invalid) or "drop" (such rows are left out at registration).
	BadRows string
	// Center is "none" (default) or "public-mean": subtract Mean, a public
	// vector the owner supplies (one value per feature column), from every
	// row at registration.
	Center string
	Mean   []float64
}

// Table is a parsed file.
type Table struct {
	Columns    []string  // feature column names
	X          []float64 // row-major, Rows × len(Columns)
	Rows       int
	UserColumn string  // "" for unit=row
	Users      []int32 // per row: the user's index in 0..NumUsers-1 (unit=user only)
	NumUsers   int
	Label      string
	Y          []float64 // per row label (when Label is set)
	Mean       []float64 // the public mean subtracted (Center = public-mean)
	Dropped    int       // rows left out under BadRows=drop
	DropReason []string  // the first few reasons, for the owner

	// Header is how line 1 was read: "yes" (column names), "no" (data)
	// or "sklearn"; under Options.Header "auto" it is what was detected.
	Header string
	// SklearnFeatures is n_features from an sklearn header line (0 if
	// none); rows with one more field carry the target in the last one.
	SklearnFeatures int
	// ClassColumn is the name of an sklearn file's class column ("" if
	// none), left out of the features by default; ClassNames are the label
	// names of its header line, a public domain.
	ClassColumn string
	ClassNames  []string
	// LastColumnClasses is the number of distinct values of the file's
	// last column when it is selected as a feature and looks like a class
	// label: integer values, at most MaxClassValues distinct ones.
	// Otherwise 0. The owner's CLI warns about it.
	LastColumnClasses int
}

// MaxClassValues bounds the distinct values a column may have to look like
// a class label.
const MaxClassValues = 10

const maxReasons = 5

// Read parses a CSV stream under opts.
func Read(r io.Reader, opts Options) (*Table, error) {
	if err := normalise(&opts); err != nil {
		return nil, err
	}
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = false
	cr.TrimLeadingSpace = true
	var records [][]string
	var lines []int
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("line %d: malformed CSV: %v (fix the file; quoting errors cannot be dropped)", pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("reading CSV: %w", err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // blank line
		}
		line, _ := cr.FieldPos(0)
		records = append(records, rec)
		lines = append(lines, line)
	}
	if len(records) == 0 {
		return nil, errors.New("the file has no rows")
	}
	header, names, sk, err := detectHeader(records, opts.Header)
	if err != nil {
		return nil, err
	}
	if header {
		records, lines = records[1:], lines[1:]
	}
	if len(records) == 0 {
		return nil, errors.New("the file has a header but no data rows")
	}
	width := len(names)
	class := -1
	if sk != nil && width == sk.d+1 && len(opts.Columns) == 0 && opts.Label == "" {
		class = width - 1
	}
	feat, userIdx, labelIdx, err := selectColumns(names, opts, class)
	if err != nil {
		return nil, err
	}
	t := &Table{Label: opts.Label, Mean: opts.Mean}
	if class >= 0 {
		t.ClassColumn, t.ClassNames = names[class], sk.labels
	}
	for _, j := range feat {
		t.Columns = append(t.Columns, names[j])
	}
	if userIdx >= 0 {
		t.UserColumn = names[userIdx]
	}
	d := len(feat)
	if opts.Center == "public-mean" && len(opts.Mean) != d {
		return nil, fmt.Errorf("--mean has %d values but %d feature columns are selected (%s)", len(opts.Mean), d, strings.Join(t.Columns, ", "))
	}
	userIDs := map[string]int32{}
	row := make([]float64, d)
	// classes tracks the last column of the file while it still looks like
	// a class label (nil once it does not, or when it is not a feature).
	var classes map[float64]bool
	if d > 1 && feat[d-1] == width-1 {
		classes = map[float64]bool{}
	}
	for i, rec := range records {
		reason := ""
		var y float64
		switch {
		case len(rec) != width:
			reason = fmt.Sprintf("has %d fields, expected %d", len(rec), width)
		default:
			for k, j := range feat {
				v, why := parseValue(rec[j])
				if why != "" {
					reason = fmt.Sprintf("column %s: %s", names[j], why)
					break
				}
				row[k] = v
			}
			if reason == "" && labelIdx >= 0 {
				v, why := parseValue(rec[labelIdx])
				if why != "" {
					reason = fmt.Sprintf("label column %s: %s", names[labelIdx], why)
				}
				y = v
			}
			if reason == "" && userIdx >= 0 && strings.TrimSpace(rec[userIdx]) == "" {
				reason = fmt.Sprintf("user column %s is empty", names[userIdx])
			}
		}
		if reason != "" {
			if opts.BadRows == "reject" {
				return nil, fmt.Errorf("line %d: %s; fix the file, or register with --bad-rows drop to leave such rows out", lines[i], reason)
			}
			t.Dropped++
			if len(t.DropReason) < maxReasons {
				t.DropReason = append(t.DropReason, fmt.Sprintf("line %d: %s", lines[i], reason))
			}
			continue
		}
		if classes != nil {
			if v := row[d-1]; v == math.Trunc(v) {
				classes[v] = true
			} else {
				classes = nil
			}
			if len(classes) > MaxClassValues {
				classes = nil
			}
		}
		if opts.Center == "public-mean" {
			for k := range row {
				row[k] -= opts.Mean[k]
			}
		}
		t.X = append(t.X, row...)
		if labelIdx >= 0 {
			t.Y = append(t.Y, y)
		}
		if userIdx >= 0 {
			id := strings.TrimSpace(rec[userIdx])
			u, ok := userIDs[id]
			if !ok {
				u = int32(len(userIDs))
				userIDs[id] = u
			}
			t.Users = append(t.Users, u)
		}
		t.Rows++
	}
	t.NumUsers = len(userIDs)
	t.Header = "no"
	switch {
	case sk != nil:
		t.Header, t.SklearnFeatures = "sklearn", sk.d
	case header:
		t.Header = "yes"
	}
	if classes != nil && t.Rows > len(classes) {
		t.LastColumnClasses = len(classes)
	}
	if sk != nil && sk.n != len(records) {
		return nil, fmt.Errorf("line 1 (sklearn header) says %d samples but the file has %d data rows", sk.n, len(records))
	}
	if t.Rows == 0 {
		return nil, fmt.Errorf("no valid rows left after dropping %d bad rows (%s)", t.Dropped, strings.Join(t.DropReason, "; "))
	}
	return t, nil
}

func normalise(o *Options) error {
	if o.Header == "" {
		o.Header = "auto"
	}
	switch o.Header {
	case "auto", "yes", "no", "sklearn":
	default:
		return fmt.Errorf("--header %q: use auto, yes, no or sklearn", o.Header)
	}
	if o.BadRows == "" {
		o.BadRows = "reject"
	}
	if o.BadRows != "reject" && o.BadRows != "drop" {
		return fmt.Errorf("--bad-rows %q: use reject or drop", o.BadRows)
	}
	if o.Unit == "" {
		o.Unit = "row"
	}
	if o.Unit != "row" && (!strings.HasPrefix(o.Unit, "user:") || strings.TrimSpace(o.Unit[5:]) == "") {
		return fmt.Errorf("--unit %q: use row or user:COLUMN (the column identifying each user)", o.Unit)
	}
	if o.Center == "" {
		o.Center = "none"
	}
	switch o.Center {
	case "none":
		if len(o.Mean) > 0 {
			return errors.New("--mean is only for --center public-mean")
		}
	case "public-mean":
		if len(o.Mean) == 0 {
			return errors.New("--center public-mean needs --mean v1,v2,... (a public mean per feature column, known without looking at this data)")
		}
		for i, v := range o.Mean {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("--mean value %d is not finite", i+1)
			}
		}
	default:
		return fmt.Errorf("--center %q: use none or public-mean", o.Center)
	}
	return nil
}

// parseValue reads a finite number; why says what is wrong otherwise.
func parseValue(s string) (float64, string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, "empty value"
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Sprintf("%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Sprintf("%q is not finite", s)
	}
	return v, ""
}

type sklearnHeader struct {
	n, d   int
	labels []string
}

// Layout is how a CSV file's first line reads under a header rule.
type Layout struct {
	Header string   // "yes", "no" or "sklearn"
	Names  []string // the column names (c1, c2, ... without a header line)
	// Samples, Features and ClassNames are an sklearn header's n_samples,
	// n_features and label names.
	Samples, Features int
	ClassNames        []string
	// ClassColumn is the name of an sklearn file's class column when its
	// rows have n_features+1 fields, else "".
	ClassColumn string
}

// SniffLayout reads the first two records of a CSV stream and tells, under
// header ("auto", "yes", "no" or "sklearn", as Options.Header), whether
// line 1 is a header and what the columns are called, with Read's rules.
// The data engine uses it to read a CSV file as Read would.
func SniffLayout(r io.Reader, header string) (*Layout, error) {
	o := Options{Header: header}
	if err := normalise(&o); err != nil {
		return nil, err
	}
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var recs [][]string
	for len(recs) < 2 {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the first lines: %w", err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil, errors.New("the file has no rows")
	}
	hdr, names, sk, err := detectHeader(recs, o.Header)
	if err != nil {
		return nil, err
	}
	l := &Layout{Header: "no", Names: names}
	switch {
	case sk != nil:
		l.Header, l.Samples, l.Features, l.ClassNames = "sklearn", sk.n, sk.d, sk.labels
		if len(names) == sk.d+1 {
			l.ClassColumn = names[sk.d]
		}
	case hdr:
		l.Header = "yes"
	}
	return l, nil
}

// SelectColumns resolves Options.Columns (names, 1-based positions,
// ranges), Options.Unit and Options.Label against column names as Read
// does, and returns the feature names in order. exclude names a column
// left out of the default selection ("" for none): an sklearn file's
// class column.
func SelectColumns(names []string, o Options, exclude string) ([]string, error) {
	if o.Unit == "" {
		o.Unit = "row"
	}
	ex := -1
	for i, n := range names {
		if n == exclude {
			ex = i
		}
	}
	feat, _, _, err := selectColumns(names, o, ex)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(feat))
	for i, j := range feat {
		out[i] = names[j]
	}
	return out, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

func isCount(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return n, err == nil && n >= 0
}

// detectHeader decides what line 1 is and returns the column names.
func detectHeader(recs [][]string, mode string) (header bool, names []string, sk *sklearnHeader, err error) {
	first := recs[0]
	width := len(first)
	if len(recs) > 1 {
		width = len(recs[1])
	}
	asSklearn := func() (*sklearnHeader, error) {
		if len(first) < 2 {
			return nil, errors.New("line 1 is not an sklearn header: expected n_samples,n_features,...")
		}
		n, ok1 := isCount(first[0])
		d, ok2 := isCount(first[1])
		if !ok1 || !ok2 {
			return nil, errors.New("line 1 is not an sklearn header: its first two fields must be n_samples and n_features")
		}
		if width != d && width != d+1 {
			return nil, fmt.Errorf("line 1 (sklearn header) says %d features but line 2 has %d fields", d, width)
		}
		return &sklearnHeader{n: n, d: d, labels: first[2:]}, nil
	}
	generic := func(w int) []string {
		names := make([]string, w)
		for i := range names {
			names[i] = "c" + strconv.Itoa(i+1)
		}
		return names
	}
	switch mode {
	case "no":
		return false, generic(len(first)), nil, nil
	case "sklearn":
		sk, err := asSklearn()
		if err != nil {
			return false, nil, nil, err
		}
		return true, generic(width), sk, nil
	case "yes":
		names, err := headerNames(first)
		return true, names, nil, err
	}
	allNum := true
	for _, f := range first {
		if !isNumber(f) {
			allNum = false
		}
	}
	switch {
	case allNum && len(first) == width:
		return false, generic(width), nil, nil
	case len(first) != width && len(first) >= 2 && !allNumFrom(first, 2):
		if sk, err := asSklearn(); err == nil {
			return true, generic(width), sk, nil
		}
	case !allNum && len(first) == width:
		names, err := headerNames(first)
		return true, names, nil, err
	}
	return false, nil, nil, fmt.Errorf("cannot tell whether line 1 (%d fields; line 2 has %d) is a header: register with --header yes, no or sklearn", len(first), width)
}

func allNumFrom(rec []string, i int) bool {
	for _, f := range rec[i:] {
		if !isNumber(f) {
			return false
		}
	}
	return len(rec) > i
}

func headerNames(rec []string) ([]string, error) {
	seen := map[string]bool{}
	names := make([]string, len(rec))
	for i, f := range rec {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("line 1: column %d has an empty name", i+1)
		}
		if seen[f] {
			return nil, fmt.Errorf("line 1: column name %q appears twice", f)
		}
		seen[f] = true
		names[i] = f
	}
	return names, nil
}

// selectColumns resolves the feature, user and label columns; exclude
// (-1 for none) is left out of the default features.
func selectColumns(names []string, o Options, exclude int) (feat []int, user, label int, err error) {
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
	}
	resolve := func(what, s string) (int, error) {
		if i, ok := index[s]; ok {
			return i, nil
		}
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(names) {
			return n - 1, nil
		}
		return 0, fmt.Errorf("%s %q: no such column; columns are %s (or 1-based positions 1-%d)", what, s, strings.Join(names, ", "), len(names))
	}
	user, label = -1, -1
	if strings.HasPrefix(o.Unit, "user:") {
		if user, err = resolve("--unit user:", strings.TrimSpace(o.Unit[5:])); err != nil {
			return nil, 0, 0, err
		}
	}
	if o.Label != "" {
		if label, err = resolve("--label", o.Label); err != nil {
			return nil, 0, 0, err
		}
		if label == user {
			return nil, 0, 0, errors.New("--label and the user column must differ")
		}
	}
	used := map[int]bool{}
	add := func(i int) error {
		if i == user || i == label {
			return fmt.Errorf("--columns: %s is the user or label column; it cannot also be a feature", names[i])
		}
		if used[i] {
			return fmt.Errorf("--columns: %s selected twice", names[i])
		}
		used[i] = true
		feat = append(feat, i)
		return nil
	}
	if len(o.Columns) == 0 {
		for i := range names {
			if i != user && i != label && i != exclude {
				feat = append(feat, i)
			}
		}
	}
	for _, c := range o.Columns {
		c = strings.TrimSpace(c)
		if _, isName := index[c]; !isName {
			if a, b, ok := strings.Cut(c, "-"); ok {
				lo, err1 := strconv.Atoi(a)
				hi, err2 := strconv.Atoi(b)
				if err1 != nil || err2 != nil || lo < 1 || hi > len(names) || lo > hi {
					return nil, 0, 0, fmt.Errorf("--columns %q: a range is FIRST-LAST with 1 <= FIRST <= LAST <= %d", c, len(names))
				}
				for i := lo - 1; i < hi; i++ {
					if err := add(i); err != nil {
						return nil, 0, 0, err
					}
				}
				continue
			}
		}
		i, err := resolve("--columns", c)
		if err != nil {
			return nil, 0, 0, err
		}
		if err := add(i); err != nil {
			return nil, 0, 0, err
		}
	}
	if len(feat) == 0 {
		return nil, 0, 0, errors.New("no feature columns selected")
	}
	return feat, user, label, nil
}
