// Package snapshot is the data engine: it ingests a data owner's source
// once into an immutable Parquet snapshot, with DuckDB, and reads
// snapshots back as row streams (rows.Source) in bounded memory.
//
// # Ingestion (the owner's side)
//
// [Build] reads one file (CSV, gzipped CSV, Parquet or JSON lines, told
// apart by content and name) or the result of the owner's own SELECT
// (Spec.SQL), types every column by the owner's public rules, checks every
// value, and writes dir/<name>-<hash12>.parquet: written to a temporary
// file, hashed, made read-only and renamed into place, so a snapshot is
// either whole or absent and never changes afterwards. Its SHA-256 (the
// Info.Hash) is what a registry records; [Open] and [Verify] recompute it,
// so a snapshot that changed after registration is refused.
//
// Typing rules. A column named in Spec.Categories is categorical: its
// public domain is the listed values; a value outside the domain, or a
// missing value, belongs to the "other" bucket, whose index is
// len(Categories), and is stored as NULL (raw out-of-domain values never
// reach the snapshot). The label (Spec.Label) and every other column are
// numeric (DOUBLE). A column DuckDB reads as text is numeric, with some
// malformed values, when it has --bounds or when at least half of the
// non-empty values in its first 20480 rows are numbers; otherwise (and
// for other types, such as dates) it is refused, with a message asking
// for --categories or for dropping it (e.g. with --sql). The privacy-unit
// column (Spec.UserColumn) may have any type: rows with equal values belong
// to one user. Its values are not stored; the snapshot keeps a dense user
// index 0..U−1 in the reserved column __pn_unit, assigned in order of
// first appearance, so it is deterministic. Column names are printed in
// notebooks: names with control or format characters, invalid UTF-8, or
// the reserved prefix __pn_ are refused, as are names that differ only in
// case (DuckDB's identifiers are case-insensitive).
//
// Bad rows. A missing, non-numeric or non-finite value in a numeric
// column (label included), a missing user, or (CSV) a malformed line, is
// an error naming the file, the line or data row, and the column, under
// BadRows "reject" (the default). Under "drop" such rows are left out and
// counted (Info.Dropped). A malformed JSON line, or a Parquet file DuckDB
// cannot read, is an error under both. CSV lines are named by DuckDB's
// line numbers where its reader finds the fault (a malformed line, a
// value that is not a number), by data row (counted from 1 after the
// header) where the check comes after reading (a missing or non-finite
// value); other sources name the row.
//
// Row order is the source's order (DuckDB's preserve_insertion_order; a
// --sql query without ORDER BY has the order DuckDB gives it, which for a
// join or aggregate is not fixed, so such a query should end with ORDER
// BY). Building twice from the same source with the same DuckDB gives the
// same bytes, hence the same hash.
//
// Build's errors name lines, columns and sometimes values of the source:
// they are for the owner's terminal, never for an analyst.
//
// # Reading (the executor's side)
//
// [Open] verifies the hash once and opens the snapshot read-only in a
// private in-memory DuckDB that may read that file and nothing else
// (enable_external_access=false with allowed_paths, configuration locked,
// no extension installation or autoloading); several processes may read
// one snapshot at once. A [Pool] keeps readers open across calls in a
// process and lends them (pool.go), verifying the file on every lease.
// [Reader.Source] returns a rows.Source over chosen
// columns (a categorical column gives its category's index), which also
// implements rows.Labeled when the snapshot has a label and rows.Units
// when it has a user column. Values are clamped to a column's public
// bounds when it has them.
//
// A scan reads the snapshot in windows of whole Parquet row groups, one
// DuckDB query per window, so memory is bounded by a window whatever the
// row count (the DuckDB Go driver materialises a query's result, so one
// query over the whole file would hold the whole table). With the build
// tag duckdb_arrow a window is read through DuckDB's Arrow interface
// (scan_arrow.go), about five times faster than the database/sql/driver
// rows of the default build (scan_rows.go); both give the same values in
// the same order. A scan checks the file position of every row it reads,
// so the order is verified rather than assumed. Errors of a scan have
// fixed texts (plus the file name and column names, which are public):
// they may be shown after a privacy charge, so they never carry DuckDB's
// messages, which can quote values.
package snapshot

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"github.com/privnotes/privnotes/dsl/ledger"
	"io"
	"math"
	"os"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is the type of a snapshot column.
type Kind int

const (
	// Numeric columns hold finite float64 values.
	Numeric Kind = iota
	// Categorical columns hold one of a public list of values, or the
	// "other" bucket.
	Categorical
)

func (k Kind) String() string {
	switch k {
	case Numeric:
		return "numeric"
	case Categorical:
		return "categorical"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Column is the public schema of one column.
type Column struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Lo and Hi are the public bounds of a numeric column (Lo < Hi, both
	// finite) when HasBounds; values read are clamped to them.
	Lo        float64 `json:"lo,omitempty"`
	Hi        float64 `json:"hi,omitempty"`
	HasBounds bool    `json:"has_bounds,omitempty"`
	// Categories is the public domain of a categorical column. A value
	// outside it (or missing) is in the "other" bucket, index
	// len(Categories).
	Categories []string `json:"categories,omitempty"`
}

// Other returns the index of a categorical column's "other" bucket.
func (c Column) Other() int { return len(c.Categories) }

// Spec is the owner's registration of a source.
type Spec struct {
	// From is a file: CSV (.csv), gzipped CSV (.csv.gz), Parquet
	// (.parquet) or JSON lines (.jsonl, .ndjson, optionally .gz). Its
	// content must agree with its name.
	From string
	// SQL is, instead of From, the owner's trusted SELECT over files (e.g.
	// SELECT a, b FROM read_parquet('x.parquet') ORDER BY id). It runs once,
	// here; no analyst text ever reaches DuckDB.
	SQL string
	// Label is the optional label column (numeric).
	Label string
	// UserColumn is the optional privacy-unit column, of any type.
	UserColumn string
	// Bounds are public bounds of numeric columns (--bounds age=0:120).
	// Naming a column here also declares it numeric.
	Bounds map[string][2]float64
	// Categories are public domains of categorical columns
	// (--categories region=north,south).
	Categories map[string][]string
	// BadRows is "reject" (default) or "drop".
	BadRows string
	// Desc, with SQL, is how messages name the source ("the --sql query"
	// if empty): the owner's file when a caller builds the query for it.
	Desc string
}

// Info describes a built or opened snapshot.
type Info struct {
	Path string // the snapshot file
	Hash string // hex SHA-256 of the file's bytes
	// Columns are the typed columns in snapshot order, without the label
	// and the user column.
	Columns []Column
	// Label is the label column's name ("" without); LabelColumn is its
	// schema (numeric, with the bounds given for it).
	Label       string
	LabelColumn Column
	// UserColumn is the name of the source's privacy-unit column ("" when
	// every row is its own unit).
	UserColumn string
	// Owner-only facts, never to be shown to analysts: the number of rows
	// kept, of users (0 without a user column) and of rows dropped.
	Rows    int64
	Users   int
	Dropped int64
}

// Public limits.
const (
	// MaxRows is the largest number of rows a snapshot may hold, the
	// mechanisms' public limit.
	MaxRows = 1 << 30
	// ReservedPrefix starts the names of the snapshot's own columns.
	ReservedPrefix = "__pn_"
	// maxNameBytes and maxCategories keep names and domains printable.
	maxNameBytes  = 256
	maxCategories = 1 << 16
)

// CheckName reports whether name may be a column name: non-empty, valid
// UTF-8 of at most 256 bytes, without control or format characters (the
// name is printed in notebooks, where such characters could hide or
// reorder text), and not starting with the reserved prefix.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an empty column name")
	case !utf8.ValidString(name):
		return fmt.Errorf("column name %q is not valid UTF-8", name)
	case len(name) > maxNameBytes:
		return fmt.Errorf("column name %.40q… is longer than %d bytes", name, maxNameBytes)
	case strings.HasPrefix(strings.ToLower(name), ReservedPrefix):
		return fmt.Errorf("column name %q starts with the reserved prefix %s; rename it (e.g. with --sql)", name, ReservedPrefix)
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("column name %q holds a control or format character; rename it (e.g. with --sql)", name)
		}
	}
	return nil
}

// checkValue is CheckName for a category value: the same printing rules,
// and empty values are allowed.
func checkValue(col, v string) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("a category of %q is not valid UTF-8", col)
	}
	for _, r := range v {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("category %q of %q holds a control or format character", v, col)
		}
	}
	return nil
}

var snapshotName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// validate checks the parts of a spec that need no data.
func (s *Spec) validate() error {
	if (s.From == "") == (strings.TrimSpace(s.SQL) == "") {
		return fmt.Errorf("snapshot: give exactly one of a source file and --sql")
	}
	switch s.BadRows {
	case "", "reject", "drop":
	default:
		return fmt.Errorf("snapshot: bad-rows must be reject or drop, not %q", s.BadRows)
	}
	if s.Label != "" && s.Label == s.UserColumn {
		return fmt.Errorf("snapshot: column %q cannot be both the label and the user column", s.Label)
	}
	for name, b := range s.Bounds {
		if !(b[0] < b[1]) || math.IsInf(b[0], 0) || math.IsInf(b[1], 0) {
			return fmt.Errorf("snapshot: bounds of %q must be finite with lo < hi, got %g:%g", name, b[0], b[1])
		}
		if _, ok := s.Categories[name]; ok {
			return fmt.Errorf("snapshot: column %q has both bounds and categories", name)
		}
		if name == s.UserColumn {
			return fmt.Errorf("snapshot: the user column %q cannot have bounds", name)
		}
	}
	for name, cats := range s.Categories {
		if name == s.Label || name == s.UserColumn {
			return fmt.Errorf("snapshot: the label or user column %q cannot be categorical", name)
		}
		if len(cats) == 0 || len(cats) > maxCategories {
			return fmt.Errorf("snapshot: column %q needs between 1 and %d categories, got %d", name, maxCategories, len(cats))
		}
		seen := make(map[string]bool, len(cats))
		for _, v := range cats {
			if err := checkValue(name, v); err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
			if seen[v] {
				return fmt.Errorf("snapshot: category %q of %q is listed twice", v, name)
			}
			seen[v] = true
		}
	}
	return nil
}

// format is a recognised source format.
type format int

const (
	fmtCSV format = iota + 1
	fmtParquet
	fmtJSONL
)

func (f format) String() string {
	return [...]string{"", "CSV", "Parquet", "JSON lines"}[f]
}

// detect tells a source file's format from its content and its name, and
// refuses a file whose two disagree or that it does not recognise: DuckDB
// would otherwise guess, and a guess (a binary file read as one text
// column, say) could register the wrong data.
func detect(path string) (format, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("snapshot: %w", err)
	}
	if !st.Mode().IsRegular() {
		return 0, false, fmt.Errorf("snapshot: %s is not a regular file", path)
	}
	if st.Size() == 0 {
		return 0, false, fmt.Errorf("snapshot: %s is empty", path)
	}
	head := make([]byte, 64<<10)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return 0, false, fmt.Errorf("snapshot: %w", err)
	}
	head = head[:n]
	truncated := int64(n) < st.Size()

	lower := strings.ToLower(path)
	gz := strings.HasSuffix(lower, ".gz")
	base := strings.TrimSuffix(lower, ".gz")
	var named format
	switch {
	case strings.HasSuffix(base, ".csv"):
		named = fmtCSV
	case strings.HasSuffix(base, ".parquet") && !gz:
		named = fmtParquet
	case strings.HasSuffix(base, ".jsonl"), strings.HasSuffix(base, ".ndjson"):
		named = fmtJSONL
	default:
		return 0, false, fmt.Errorf("snapshot: cannot tell the format of %s from its name: use .csv, .csv.gz, .parquet, .jsonl or .ndjson (optionally .gz), or --sql", path)
	}

	isGzip := len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b
	if isGzip != gz {
		if isGzip {
			return 0, false, fmt.Errorf("snapshot: %s is gzip-compressed but its name does not end in .gz", path)
		}
		return 0, false, fmt.Errorf("snapshot: %s is named .gz but is not gzip-compressed", path)
	}
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(head))
		if err != nil {
			return 0, false, fmt.Errorf("snapshot: %s: %v", path, err)
		}
		// Only the first compressed bytes are at hand, so the stream ends
		// early: its error is expected and what it gave is the sample.
		buf := make([]byte, 32<<10)
		k, err := io.ReadFull(zr, buf)
		head, truncated = buf[:k], err == nil || truncated
	}

	var found format
	switch {
	case len(head) >= 4 && string(head[:4]) == "PAR1":
		found = fmtParquet
		if named == fmtParquet {
			tail := make([]byte, 4)
			if _, err := f.ReadAt(tail, st.Size()-4); err != nil || string(tail) != "PAR1" {
				return 0, false, fmt.Errorf("snapshot: %s starts like Parquet but does not end like it (truncated?)", path)
			}
		}
	case !isText(head, truncated):
		return 0, false, fmt.Errorf("snapshot: %s is not Parquet and not UTF-8 text, so neither CSV nor JSON lines", path)
	case firstByte(head) == '{':
		found = fmtJSONL
	default:
		found = fmtCSV
	}
	if found != named {
		return 0, false, fmt.Errorf("snapshot: %s is named like %s but its content looks like %s", path, named, found)
	}
	return found, gz, nil
}

// isText reports whether b is UTF-8 without NUL bytes. When b is a cut
// sample (truncated), its last rune may be incomplete.
func isText(b []byte, truncated bool) bool {
	if len(b) == 0 || bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	if truncated {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	return utf8.Valid(b)
}

// firstByte returns the first byte that is not white space or a BOM.
func firstByte(b []byte) byte {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// Ref is the registry's record of the snapshot (ledger.Register with
// Registration.Snapshot): its file, hash, public schema and owner-only
// counts.
func (info *Info) Ref() *ledger.SnapshotRef {
	ref := &ledger.SnapshotRef{Path: info.Path, Hash: info.Hash, Label: info.Label, UserColumn: info.UserColumn,
		Rows: int(info.Rows), Users: info.Users, Dropped: int(info.Dropped)}
	for _, c := range info.Columns {
		switch c.Kind {
		case Numeric:
			ref.Columns = append(ref.Columns, c.Name)
			if c.HasBounds {
				if ref.Bounds == nil {
					ref.Bounds = map[string][2]float64{}
				}
				ref.Bounds[c.Name] = [2]float64{c.Lo, c.Hi}
			}
		case Categorical:
			if ref.Categorical == nil {
				ref.Categorical = map[string][]string{}
			}
			ref.Categorical[c.Name] = c.Categories
		}
	}
	return ref
}
