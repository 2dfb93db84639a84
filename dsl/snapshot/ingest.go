package snapshot

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Build ingests spec's source once into the snapshot dir/<name>-<hash12>.parquet
// and returns its description. See the package documentation for the
// rules. The file appears whole or not at all (temporary file, then
// rename) and is read-only (0444). Intermediate files live in a private
// temporary directory under dir, removed on return, since they hold the
// owner's data.
func Build(ctx context.Context, spec Spec, dir, name string) (*Info, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if !snapshotName.MatchString(name) {
		return nil, fmt.Errorf("snapshot: name %q must be letters, digits, '.', '_' or '-' (at most 100, starting with a letter or digit)", name)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	b := &builder{ctx: ctx, spec: spec, desc: "the --sql query"}
	if spec.Desc != "" {
		b.desc = spec.Desc
	}
	if spec.BadRows == "drop" {
		b.drop = true
	}
	if spec.From != "" {
		if b.from, err = filepath.Abs(spec.From); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		if b.format, b.gz, err = detect(b.from); err != nil {
			return nil, err
		}
		b.desc = b.from
	}
	if b.work, err = os.MkdirTemp(dir, ".pn-build-"); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer os.RemoveAll(b.work)

	c, err := openDuck(filepath.Join(b.work, "spill"))
	if err != nil {
		return nil, fmt.Errorf("snapshot: starting DuckDB: %w", err)
	}
	db := sql.OpenDB(c) // closes c
	defer db.Close()
	if spec.From != "" {
		// A file source needs nothing but that file and the work
		// directory. The owner's --sql may name any file, so it runs
		// without this fence (but still without extensions or network).
		if err := lockDown(ctx, c, []string{b.from}, []string{b.work + string(filepath.Separator)}); err != nil {
			return nil, fmt.Errorf("snapshot: configuring DuckDB: %w", err)
		}
	}
	// One connection: the temporary tables (the CSV rejects, the user
	// map) belong to it.
	if b.conn, err = db.Conn(ctx); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer b.conn.Close()

	info, tmp, err := b.run()
	if err != nil {
		return nil, err
	}
	info.Path = filepath.Join(dir, fmt.Sprintf("%s-%s.parquet", name, info.Hash[:12]))
	if err := install(tmp, info.Path, dir); err != nil {
		return nil, err
	}
	// No row cache: the first pass that reads one writes it (cache.go).
	return info, nil
}

// Tests lower these to exercise the limit and scans of many windows.
var (
	maxRows          int64 = MaxRows
	testRowGroupRows int
)

type builder struct {
	ctx    context.Context
	conn   *sql.Conn
	spec   Spec
	drop   bool
	from   string // absolute source file, or "" for --sql
	format format
	gz     bool
	desc   string // the source, as messages name it
	work   string

	cols  []Column // typed columns in source order (features)
	label *Column
	unit  string // source name of the user column
	// source names in stage order, and what a bad-row code names
	badNames []string
}

func (b *builder) stagePath() string { return filepath.Join(b.work, "stage.parquet") }
func (b *builder) finalPath() string { return filepath.Join(b.work, "snapshot.parquet") }

// srcExpr is the FROM item reading the source; types overrides the CSV
// reader's column types by name.
func (b *builder) srcExpr(types map[string]string) string {
	// Compression is told, not guessed from the name; the readers spell
	// "none" differently.
	csvComp, jsonComp := "'none'", "'uncompressed'"
	if b.gz {
		csvComp, jsonComp = "'gzip'", "'gzip'"
	}
	switch b.format {
	case fmtCSV:
		opt := ""
		if len(types) > 0 {
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(types)) {
				kv = append(kv, quoteString(k)+": "+quoteString(types[k]))
			}
			opt = ", types = {" + strings.Join(kv, ", ") + "}"
		}
		// store_rejects in both modes: it changes how the sniffer reads
		// a ragged file, and the rejected lines (with their numbers) are
		// what reject reports and drop counts.
		return "read_csv(" + quoteString(b.from) + ", store_rejects = true, compression = " + csvComp + opt + ")"
	case fmtParquet:
		return "read_parquet(" + quoteString(b.from) + ")"
	case fmtJSONL:
		return "read_json(" + quoteString(b.from) + ", format = 'newline_delimited', compression = " + jsonComp + ")"
	}
	q := strings.TrimSpace(b.spec.SQL)
	q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	// As a subquery, the text can only be one query: a second statement
	// is a syntax error.
	return "(" + q + "\n)"
}

type srcCol struct{ name, typ string }

// describe returns the source's columns as DuckDB reads them.
func (b *builder) describe(from string) ([]srcCol, error) {
	rs, err := b.conn.QueryContext(b.ctx, "DESCRIBE SELECT * FROM "+from)
	if err != nil {
		return nil, fmt.Errorf("snapshot: DuckDB cannot read %s: %w", b.desc, err)
	}
	defer rs.Close()
	n, _ := rs.Columns()
	var out []srcCol
	for rs.Next() {
		vals := make([]any, len(n))
		ptr := make([]any, len(n))
		for i := range vals {
			ptr[i] = &vals[i]
		}
		if err := rs.Scan(ptr...); err != nil {
			return nil, err
		}
		name, _ := vals[0].(string)
		typ, _ := vals[1].(string)
		out = append(out, srcCol{name, typ})
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("snapshot: DuckDB cannot read %s: %w", b.desc, err)
	}
	return out, nil
}

// isNumericType reports whether DuckDB's type converts to DOUBLE exactly
// or with rounding only.
func isNumericType(t string) bool {
	switch strings.ToUpper(t) {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
		"UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
		"FLOAT", "DOUBLE":
		return true
	}
	return strings.HasPrefix(strings.ToUpper(t), "DECIMAL")
}

// plan types the source's columns by the owner's rules.
func (b *builder) plan(src []srcCol) error {
	names := make([]string, len(src))
	lower := map[string]string{}
	for i, c := range src {
		names[i] = c.name
		if err := CheckName(c.name); err != nil {
			return fmt.Errorf("snapshot: %s: %w", b.desc, err)
		}
		if prev, ok := lower[strings.ToLower(c.name)]; ok {
			return fmt.Errorf("snapshot: %s: columns %q and %q differ only in case, which DuckDB does not tell apart; rename one (e.g. with --sql)", b.desc, prev, c.name)
		}
		lower[strings.ToLower(c.name)] = c.name
	}
	has := func(n string) bool { return slices.Contains(names, n) }
	missing := func(what, n string) error {
		return fmt.Errorf("snapshot: %s has no column %q (%s); its columns are %s", b.desc, n, what, strings.Join(quoteAll(names), ", "))
	}
	if b.spec.Label != "" && !has(b.spec.Label) {
		return missing("the label", b.spec.Label)
	}
	if b.spec.UserColumn != "" && !has(b.spec.UserColumn) {
		return missing("the user column", b.spec.UserColumn)
	}
	for _, n := range slices.Sorted(maps.Keys(b.spec.Bounds)) {
		if !has(n) {
			return missing("given --bounds", n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(b.spec.Categories)) {
		if !has(n) {
			return missing("given --categories", n)
		}
	}
	var text []string
	for _, c := range src {
		if strings.ToUpper(c.typ) == "VARCHAR" && c.name != b.spec.UserColumn && c.name != b.spec.Label && b.spec.Categories[c.name] == nil {
			text = append(text, c.name)
		}
	}
	textNumeric, err := b.textNumeric(text)
	if err != nil {
		return err
	}
	for _, c := range src {
		col := Column{Name: c.name}
		if bd, ok := b.spec.Bounds[c.name]; ok {
			col.Lo, col.Hi, col.HasBounds = bd[0], bd[1], true
		}
		switch {
		case c.name == b.spec.UserColumn:
			b.unit = c.name
		case c.name == b.spec.Label:
			// The label is numeric by declaration: text values are
			// checked row by row like any malformed value.
			l := col
			b.label = &l
		case b.spec.Categories[c.name] != nil:
			col.Kind = Categorical
			col.Categories = slices.Clone(b.spec.Categories[c.name])
			b.cols = append(b.cols, col)
		case isNumericType(c.typ) || col.HasBounds || textNumeric[c.name]:
			b.cols = append(b.cols, col)
		default:
			why := "DuckDB reads it as " + c.typ
			if strings.ToUpper(c.typ) == "VARCHAR" {
				why = "most of its first values are not numbers"
			}
			return fmt.Errorf("snapshot: column %q of %s is not numeric (%s): give --categories %s=v1,v2,… for a categorical column, or drop it (e.g. with --sql)", c.name, b.desc, why, c.name)
		}
	}
	if len(b.cols) == 0 {
		return fmt.Errorf("snapshot: %s has no feature columns besides the label and the user column", b.desc)
	}
	return nil
}

// sniffRows is how many first rows decide whether a text column is
// numeric, as many as DuckDB's CSV and JSON sniffers sample.
const sniffRows = 20480

// textNumeric decides which columns DuckDB reads as text are numeric
// columns with some malformed values: those where at least half of the
// non-empty values in the first sniffRows rows are numbers ("nan" and
// "inf" count as numbers here, and are bad rows later). A column without
// values counts as numeric. The others are refused unless categorical.
func (b *builder) textNumeric(cols []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(cols) == 0 {
		return out, nil
	}
	var sel []string
	for i, c := range cols {
		q := quoteIdent(c)
		sel = append(sel, fmt.Sprintf("count(TRY_CAST(%s AS DOUBLE)) AS n%d, count(NULLIF(trim(CAST(%s AS VARCHAR)), '')) AS v%d", q, i, q, i))
	}
	q := fmt.Sprintf("SELECT %s FROM (SELECT * FROM %s LIMIT %d)", strings.Join(sel, ", "), b.srcExpr(nil), sniffRows)
	counts := make([]int64, 2*len(cols))
	ptr := make([]any, len(counts))
	for i := range counts {
		ptr[i] = &counts[i]
	}
	if err := queryRow(b.ctx, b.conn, q, ptr...); err != nil {
		return nil, fmt.Errorf("snapshot: DuckDB cannot read %s: %w", b.desc, err)
	}
	for i, c := range cols {
		out[c] = 2*counts[2*i] >= counts[2*i+1]
	}
	return out, nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// csvTypes are the CSV reader's types for the planned columns: DOUBLE for
// numeric ones, so that a value that is not a number is a rejected line
// with its line number (the sniffer's INTEGER would reject "1.5"), and
// VARCHAR for categorical and user columns, whose identity is their text.
func (b *builder) csvTypes() map[string]string {
	t := map[string]string{}
	for _, c := range b.cols {
		if c.Kind == Numeric {
			t[c.Name] = "DOUBLE"
		} else {
			t[c.Name] = "VARCHAR"
		}
	}
	if b.label != nil {
		t[b.label.Name] = "DOUBLE"
	}
	if b.unit != "" {
		t[b.unit] = "VARCHAR"
	}
	return t
}

// stage reads the source once into a Parquet file in source order, with
// the typed columns under positional names (__pn_c0, …, __pn_label,
// __pn_u) and __pn_bad: 0 for a good row, else 1 + the index in
// b.badNames of its first bad column.
func (b *builder) stage(from string) error {
	var inner, outer, bad []string
	check := func(expr, name string) {
		b.badNames = append(b.badNames, name)
		bad = append(bad, fmt.Sprintf("WHEN %s THEN %d", expr, len(b.badNames)))
	}
	for i, c := range b.cols {
		pos := fmt.Sprintf("__pn_c%d", i)
		if c.Kind == Numeric {
			inner = append(inner, fmt.Sprintf("TRY_CAST(%s AS DOUBLE) AS %s", quoteIdent(c.Name), pos))
			outer = append(outer, pos)
			check("NOT coalesce(isfinite("+pos+"), false)", c.Name)
		} else {
			// Out-of-domain and missing values become NULL, the "other"
			// bucket: the raw value is not kept.
			inner = append(inner, fmt.Sprintf("CAST(%s AS VARCHAR) AS %s", quoteIdent(c.Name), pos))
			outer = append(outer, fmt.Sprintf("CASE WHEN %s IN (%s) THEN %s END AS %s", pos, strings.Join(quoteStrings(c.Categories), ", "), pos, pos))
		}
	}
	if b.label != nil {
		inner = append(inner, fmt.Sprintf("TRY_CAST(%s AS DOUBLE) AS __pn_label", quoteIdent(b.label.Name)))
		outer = append(outer, "__pn_label")
		check("NOT coalesce(isfinite(__pn_label), false)", b.label.Name)
	}
	if b.unit != "" {
		inner = append(inner, quoteIdent(b.unit)+" AS __pn_u")
		outer = append(outer, "__pn_u")
		check("__pn_u IS NULL", b.unit)
	}
	badExpr := "0"
	if len(bad) > 0 {
		badExpr = "CASE " + strings.Join(bad, " ") + " ELSE 0 END"
	}
	q := fmt.Sprintf("COPY (SELECT %s, %s AS __pn_bad FROM (SELECT %s FROM %s)) TO %s (FORMAT parquet, COMPRESSION uncompressed)",
		strings.Join(outer, ", "), badExpr, strings.Join(inner, ", "), from, quoteString(b.stagePath()))
	if _, err := b.conn.ExecContext(b.ctx, q); err != nil {
		return fmt.Errorf("snapshot: reading %s: %w", b.desc, err)
	}
	return nil
}

func quoteStrings(v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = quoteString(s)
	}
	return out
}

// csvRejects returns the number of lines the CSV reader rejected and, in
// reject mode, an error naming the first.
func (b *builder) csvRejects() (int64, error) {
	var n int64
	if err := queryRow(b.ctx, b.conn, "SELECT count(*) FROM (SELECT DISTINCT file_id, line FROM reject_errors)", &n); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if n == 0 || b.drop {
		return n, nil
	}
	var line int64
	var col, typ string
	if err := queryRow(b.ctx, b.conn, "SELECT line, coalesce(column_name, ''), CAST(error_type AS VARCHAR) FROM reject_errors ORDER BY line LIMIT 1", &line, &col, &typ); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	what := strings.ToLower(typ)
	if typ == "CAST" {
		what = "a value that is not a number"
	}
	where := ""
	if col != "" {
		where = fmt.Sprintf(", column %q", col)
	}
	return 0, fmt.Errorf("snapshot: %s, line %d%s: %s; fix it or use --bad-rows drop (%d malformed lines in all)", b.desc, line, where, what, n)
}

type stageStats struct {
	total, bad, firstBad int64
	badCode              int
}

func (b *builder) stats() (stageStats, error) {
	var s stageStats
	q := fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE __pn_bad <> 0),
		coalesce(min(file_row_number) FILTER (WHERE __pn_bad <> 0), -1),
		coalesce(arg_min(__pn_bad, file_row_number) FILTER (WHERE __pn_bad <> 0), 0)
		FROM read_parquet(%s, file_row_number = true)`, quoteString(b.stagePath()))
	if err := queryRow(b.ctx, b.conn, q, &s.total, &s.bad, &s.firstBad, &s.badCode); err != nil {
		return s, fmt.Errorf("snapshot: %w", err)
	}
	return s, nil
}

// run ingests into b.finalPath and returns the description without Path.
func (b *builder) run() (*Info, string, error) {
	from := b.srcExpr(nil)
	src, err := b.describe(from)
	if err != nil {
		return nil, "", err
	}
	if err := b.plan(src); err != nil {
		return nil, "", err
	}
	if b.format == fmtCSV {
		from = b.srcExpr(b.csvTypes())
		again, err := b.describe(from)
		if err != nil {
			return nil, "", err
		}
		if len(again) != len(src) {
			return nil, "", fmt.Errorf("snapshot: DuckDB reads %s with other columns once they are typed; give the columns with --sql", b.desc)
		}
		for i := range again {
			if again[i].name != src[i].name {
				return nil, "", fmt.Errorf("snapshot: DuckDB reads %s with other columns once they are typed; give the columns with --sql", b.desc)
			}
		}
	}
	if !b.drop && b.unit == "" {
		info, ok, err := b.direct(from)
		if err != nil {
			return nil, "", err
		}
		if ok {
			return info, b.finalPath(), nil
		}
		// A bad row stopped the direct write: the staged path below
		// finds the first one and names it.
	}
	if err := b.stage(from); err != nil {
		return nil, "", err
	}
	var rejected int64
	if b.format == fmtCSV {
		if rejected, err = b.csvRejects(); err != nil {
			return nil, "", err
		}
	}
	st, err := b.stats()
	if err != nil {
		return nil, "", err
	}
	if st.bad > 0 && !b.drop {
		col := b.badNames[st.badCode-1]
		what := fmt.Sprintf("column %q is missing, not a number or not finite", col)
		if col == b.unit {
			what = fmt.Sprintf("the user column %q is missing", col)
		}
		row := "row"
		if b.format == fmtCSV {
			row = "data row" // counted after the header; blank lines do not count
		}
		return nil, "", fmt.Errorf("snapshot: %s, %s %d: %s; fix it or use --bad-rows drop (%d bad rows in all)", b.desc, row, st.firstBad+1, what, st.bad)
	}
	kept := st.total - st.bad
	switch {
	case kept == 0 && st.total+rejected == 0:
		return nil, "", fmt.Errorf("snapshot: %s has no rows", b.desc)
	case kept == 0:
		return nil, "", fmt.Errorf("snapshot: every row of %s is bad (%d dropped)", b.desc, st.bad+rejected)
	case kept > maxRows:
		return nil, "", fmt.Errorf("snapshot: %s has %d rows, more than the limit of %d", b.desc, kept, maxRows)
	}
	info := &Info{Columns: b.cols, Rows: kept, Dropped: st.bad + rejected, UserColumn: b.unit}
	if b.label != nil {
		info.Label, info.LabelColumn = b.label.Name, *b.label
	}
	if b.unit != "" {
		if info.Users, err = b.users(); err != nil {
			return nil, "", err
		}
	}
	if err := b.write(info); err != nil {
		return nil, "", err
	}
	if info.Hash, err = hashFile(b.finalPath()); err != nil {
		return nil, "", fmt.Errorf("snapshot: %w", err)
	}
	return info, b.finalPath(), nil
}

// direct writes the snapshot in one pass, source to final file, when
// bad rows are refused and there is no user column (the common case): a
// good source has nothing to drop and no users to number, so the stage,
// its statistics pass and the second copy only cost time (registration
// took 1.5–2× DuckDB's own CSV→Parquet COPY of the same file with them).
// The file has the same columns, values, order and row groups as write's.
// A bad row stops the copy (DuckDB's error(), raised inside the statement)
// and direct returns false: the staged path then reads the source again
// to name the first bad row, so a refused source costs two reads and a
// good one one. The row count is read back from the file's footer (the
// schema, written before the count is known, leaves it there: version 2).
func (b *builder) direct(from string) (*Info, bool, error) {
	var inner, outer, bad []string
	for i, c := range b.cols {
		pos := fmt.Sprintf("__pn_c%d", i)
		if c.Kind == Numeric {
			inner = append(inner, fmt.Sprintf("TRY_CAST(%s AS DOUBLE) AS %s", quoteIdent(c.Name), pos))
			outer = append(outer, pos+" AS "+quoteIdent(c.Name))
			bad = append(bad, "NOT coalesce(isfinite("+pos+"), false)")
		} else {
			inner = append(inner, fmt.Sprintf("CAST(%s AS VARCHAR) AS %s", quoteIdent(c.Name), pos))
			outer = append(outer, fmt.Sprintf("CASE WHEN %s IN (%s) THEN %s END AS %s", pos, strings.Join(quoteStrings(c.Categories), ", "), pos, quoteIdent(c.Name)))
		}
	}
	if b.label != nil {
		inner = append(inner, fmt.Sprintf("TRY_CAST(%s AS DOUBLE) AS __pn_label", quoteIdent(b.label.Name)))
		outer = append(outer, "__pn_label AS "+quoteIdent(b.label.Name))
		bad = append(bad, "NOT coalesce(isfinite(__pn_label), false)")
	}
	where := ""
	if len(bad) > 0 {
		where = " WHERE CASE WHEN " + strings.Join(bad, " OR ") + " THEN error('privnotes: a bad row') ELSE true END"
	}
	info := &Info{Columns: b.cols}
	if b.label != nil {
		info.Label, info.LabelColumn = b.label.Name, *b.label
	}
	m, err := json.Marshal(metaOf(info))
	if err != nil {
		return nil, false, fmt.Errorf("snapshot: %w", err)
	}
	q := fmt.Sprintf("COPY (SELECT %s FROM (SELECT %s FROM %s)%s) TO %s (FORMAT parquet, ROW_GROUP_SIZE %d, KV_METADATA {%s: %s})",
		strings.Join(outer, ", "), strings.Join(inner, ", "), from, where, quoteString(b.finalPath()),
		rowGroupRows(len(outer)+1), metaKey, quoteString(string(m)))
	if _, err := b.conn.ExecContext(b.ctx, q); err != nil {
		if b.ctx.Err() != nil {
			return nil, false, b.ctx.Err()
		}
		if err := os.Remove(b.finalPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("snapshot: %w", err)
		}
		return nil, false, nil
	}
	if b.format == fmtCSV {
		// Reject mode: a malformed line the CSV reader skipped is an
		// error naming it, as in the staged path.
		if _, err := b.csvRejects(); err != nil {
			return nil, false, err
		}
	}
	var kept int64
	if err := queryRow(b.ctx, b.conn, "SELECT num_rows FROM parquet_file_metadata("+quoteString(b.finalPath())+")", &kept); err != nil {
		return nil, false, fmt.Errorf("snapshot: %w", err)
	}
	switch {
	case kept == 0:
		return nil, false, fmt.Errorf("snapshot: %s has no rows", b.desc)
	case kept > maxRows:
		return nil, false, fmt.Errorf("snapshot: %s has %d rows, more than the limit of %d", b.desc, kept, maxRows)
	}
	info.Rows = kept
	if info.Hash, err = hashFile(b.finalPath()); err != nil {
		return nil, false, fmt.Errorf("snapshot: %w", err)
	}
	return info, true, nil
}

// users builds the map from user value to dense index, numbered in order
// of first appearance, and returns the number of users.
func (b *builder) users() (int, error) {
	q := fmt.Sprintf(`CREATE TEMP TABLE __pn_users AS
		SELECT __pn_u AS u, CAST(row_number() OVER (ORDER BY min(file_row_number)) - 1 AS INTEGER) AS idx
		FROM read_parquet(%s, file_row_number = true) WHERE __pn_bad = 0 GROUP BY __pn_u`, quoteString(b.stagePath()))
	if _, err := b.conn.ExecContext(b.ctx, q); err != nil {
		return 0, fmt.Errorf("snapshot: indexing the users: %w", err)
	}
	var n int
	if err := queryRow(b.ctx, b.conn, "SELECT count(*) FROM __pn_users", &n); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	return n, nil
}

// rowGroupRows sizes the snapshot's row groups so that a group of
// every column holds about 4M values (32 MB): a scan reads one group per
// query, so this bounds a reader's memory whatever the width.
func rowGroupRows(cols int) int {
	if testRowGroupRows > 0 {
		return testRowGroupRows
	}
	n := (1 << 22) / max(cols, 1)
	n = n / 2048 * 2048
	return min(max(n, 2048), 122880)
}

// write copies the good rows of the stage to the snapshot file, with the
// public schema in the Parquet key-value metadata, so a snapshot
// describes itself and its hash covers its schema.
func (b *builder) write(info *Info) error {
	var sel []string
	for i, c := range b.cols {
		sel = append(sel, fmt.Sprintf("s.__pn_c%d AS %s", i, quoteIdent(c.Name)))
	}
	if b.label != nil {
		sel = append(sel, "s.__pn_label AS "+quoteIdent(b.label.Name))
	}
	from := fmt.Sprintf("read_parquet(%s, file_row_number = true) s", quoteString(b.stagePath()))
	tail := ""
	if b.unit != "" {
		sel = append(sel, "m.idx AS "+unitColumn)
		// The join scrambles the order; sorting by the stage's row number
		// restores the source's.
		from += " JOIN __pn_users m ON s.__pn_u = m.u"
		tail = " ORDER BY s.file_row_number"
	}
	m, err := json.Marshal(metaOf(info))
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	q := fmt.Sprintf("COPY (SELECT %s FROM %s WHERE s.__pn_bad = 0%s) TO %s (FORMAT parquet, ROW_GROUP_SIZE %d, KV_METADATA {%s: %s})",
		strings.Join(sel, ", "), from, tail, quoteString(b.finalPath()), rowGroupRows(len(sel)+1), metaKey, quoteString(string(m)))
	if _, err := b.conn.ExecContext(b.ctx, q); err != nil {
		return fmt.Errorf("snapshot: writing the snapshot: %w", err)
	}
	return nil
}

// hashFile returns the hex SHA-256 of a file's bytes.
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// install makes tmp read-only, flushes it and renames it to dst, then
// flushes the directory, so a crash leaves the old state or the new one.
func install(tmp, dst, dir string) error {
	f, err := os.Open(tmp)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Chmod(tmp, 0o444); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
