package snapshot

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

const (
	// metaKey is the Parquet key-value metadata key of the public schema.
	metaKey = "privnotes_schema"
	// unitColumn is the reserved column of the dense user index.
	unitColumn = "__pn_unit"
	// metaVersion is the schema version snapshots are written with. In
	// version 1 the schema also held the row count; version 2 leaves it
	// to the Parquet footer's row groups (covered by the hash as well),
	// so that a registration can write the file in the same pass that
	// reads the source, before the count is known. Readers open both.
	metaVersion = 2
)

// meta is the public schema a snapshot carries in its Parquet metadata,
// plus the owner-only counts.
type meta struct {
	Version    int      `json:"version"`
	Columns    []Column `json:"columns"`
	Label      *Column  `json:"label,omitempty"`
	UserColumn string   `json:"user_column,omitempty"`
	Rows       int64    `json:"rows,omitempty"` // version 1 only
	Users      int      `json:"users"`
	Dropped    int64    `json:"dropped"`
}

func metaOf(info *Info) meta {
	m := meta{Version: metaVersion, Columns: info.Columns, UserColumn: info.UserColumn,
		Users: info.Users, Dropped: info.Dropped}
	if info.Label != "" {
		l := info.LabelColumn
		m.Label = &l
	}
	return m
}

// check validates a schema read from a file: the hash says the file is
// the registered one, this says it is a snapshot the reader understands.
func (m *meta) check() error {
	switch m.Version {
	case 1:
		if m.Rows < 1 || m.Rows > MaxRows {
			return errors.New("an inconsistent schema")
		}
	case metaVersion:
		if m.Rows != 0 {
			return errors.New("an inconsistent schema")
		}
	default:
		return fmt.Errorf("schema version %d, not 1 or %d (a newer privnotes wrote it)", m.Version, metaVersion)
	}
	if len(m.Columns) == 0 || m.Users < 0 || (m.UserColumn == "") != (m.Users == 0) {
		return errors.New("an inconsistent schema")
	}
	cols := slices.Clone(m.Columns)
	if m.Label != nil {
		if m.Label.Kind != Numeric {
			return errors.New("a non-numeric label")
		}
		cols = append(cols, *m.Label)
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if err := CheckName(c.Name); err != nil {
			return err
		}
		if seen[strings.ToLower(c.Name)] {
			return errors.New("duplicate column names")
		}
		seen[strings.ToLower(c.Name)] = true
		switch c.Kind {
		case Numeric:
			if c.HasBounds && !(c.Lo < c.Hi && !math.IsInf(c.Lo, 0) && !math.IsInf(c.Hi, 0)) {
				return fmt.Errorf("invalid bounds for %q", c.Name)
			}
		case Categorical:
			if len(c.Categories) == 0 || c.HasBounds {
				return fmt.Errorf("an invalid categorical column %q", c.Name)
			}
		default:
			return fmt.Errorf("column %q of unknown kind", c.Name)
		}
	}
	return nil
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Verify recomputes the SHA-256 of the file at path and returns an error
// if it is not hash (lower-case hex). A process hashes a given file once:
// a later Verify of the same, unchanged file against the same hash is
// answered by the memo of verified files (cache_memo.go).
func Verify(path, hash string) error {
	if !hexHash.MatchString(hash) {
		return fmt.Errorf("snapshot: %q is not a lower-case hex SHA-256", hash)
	}
	var want [2][32]byte
	if _, err := hex.Decode(want[0][:], []byte(hash)); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	key, memo, hit := verifiedBefore(f, want)
	if hit {
		return nil
	}
	started := time.Now()
	snapshotHashes.Add(1)
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if hex.EncodeToString(h.Sum(nil)) != hash {
		return fmt.Errorf("snapshot: %s does not have its registered hash: it changed after registration", path)
	}
	remember(f, key, memo, started)
	return nil
}

// window is a range [lo, hi) of row numbers made of whole row groups.
type window struct{ lo, hi int64 }

// Reader is an opened, verified snapshot. Its sources may be scanned
// concurrently; Close waits for no one, but the DuckDB database is
// released only when the last open cursor closes.
type Reader struct {
	path    string
	info    Info
	db      *duckdb.Connector
	windows []window
	errRead error
	cache   *rowCache

	mu     sync.Mutex
	active int // open cursors
	closed bool
}

// Open verifies the snapshot's hash and opens it for reading. The
// private DuckDB it reads through may read this one file and nothing else.
func Open(path, hash string) (*Reader, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := Verify(abs, hash); err != nil {
		return nil, err
	}
	return openVerified(abs, hash)
}

// openVerified is Open of the absolute path abs once the file verified
// against hash.
func openVerified(abs, hash string) (*Reader, error) {
	r := &Reader{path: abs,
		errRead: fmt.Errorf("snapshot: reading the snapshot %s failed", filepath.Base(abs))}
	fail := func(why string) (*Reader, error) {
		return nil, fmt.Errorf("snapshot: cannot open %s: %s", abs, why)
	}
	var err error
	if r.db, err = openDuck(""); err != nil {
		return fail("DuckDB did not start")
	}
	opened := false
	defer func() { // after the connections below are closed
		if !opened {
			r.db.Close()
		}
	}()
	ctx := context.Background()
	if err := lockDown(ctx, r.db, []string{abs}, nil); err != nil {
		return fail("DuckDB could not be configured")
	}
	// The reader keeps the connector; the pool used to open it must not
	// close it.
	db := sql.OpenDB(keepOpen{r.db})
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fail("DuckDB did not start")
	}
	defer conn.Close()
	p := quoteString(abs)

	var raw []byte
	if err := queryRow(ctx, conn, "SELECT value FROM parquet_kv_metadata("+p+") WHERE CAST(key AS VARCHAR) = "+quoteString(metaKey), &raw); err != nil {
		return fail("it is not a privnotes snapshot (no schema)")
	}
	var m meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return fail("its schema is not readable")
	}
	if err := m.check(); err != nil {
		return fail("its schema is invalid: " + err.Error())
	}
	r.info = Info{Path: abs, Hash: hash, Columns: m.Columns, UserColumn: m.UserColumn,
		Users: m.Users, Dropped: m.Dropped} // Rows: from the row groups below
	if m.Label != nil {
		r.info.Label, r.info.LabelColumn = m.Label.Name, *m.Label
	}

	// The file's columns must be the schema's, with the types scans read.
	var want []srcCol
	for _, c := range m.Columns {
		t := "DOUBLE"
		if c.Kind == Categorical {
			t = "VARCHAR"
		}
		want = append(want, srcCol{c.Name, t})
	}
	if m.Label != nil {
		want = append(want, srcCol{m.Label.Name, "DOUBLE"})
	}
	if m.UserColumn != "" {
		want = append(want, srcCol{unitColumn, "INTEGER"})
	}
	b := &builder{ctx: ctx, conn: conn, desc: abs}
	got, err := b.describe("read_parquet(" + p + ")")
	if err != nil || !slices.Equal(got, want) {
		return fail("its columns do not match its schema")
	}

	rs, err := conn.QueryContext(ctx, "SELECT row_group_id, any_value(row_group_num_rows) FROM parquet_metadata("+p+") GROUP BY row_group_id ORDER BY row_group_id")
	if err != nil {
		return fail("its row groups are not readable")
	}
	defer rs.Close()
	// Windows of whole row groups: DuckDB decodes a window's row groups
	// in parallel, so a window has up to one group per thread (at most
	// 4, for memory), and small groups are merged so that each does not
	// cost a query.
	target := int64(rowGroupRows(len(want)+1) * min(max(runtime.GOMAXPROCS(0), 1), 4))
	var at int64
	for rs.Next() {
		var id, n int64
		if err := rs.Scan(&id, &n); err != nil || n < 0 {
			return fail("its row groups are not readable")
		}
		if k := len(r.windows); k > 0 && r.windows[k-1].hi-r.windows[k-1].lo+n <= target+target/4 {
			r.windows[k-1].hi += n
		} else if n > 0 {
			r.windows = append(r.windows, window{at, at + n})
		}
		at += n
	}
	if rs.Err() != nil || (m.Version == 1 && at != m.Rows) {
		return fail("its row count does not match its schema")
	}
	if at < 1 || at > MaxRows {
		return fail("its schema is invalid: an inconsistent schema")
	}
	r.info.Rows = at
	r.cache = &rowCache{path: CachePath(abs), layout: layoutOf(&r.info)}
	opened = true
	return r, nil
}

// keepOpen is a connector whose Close (by sql.DB.Close) leaves the
// DuckDB database open.
type keepOpen struct{ c *duckdb.Connector }

func (k keepOpen) Connect(ctx context.Context) (driver.Conn, error) { return k.c.Connect(ctx) }
func (k keepOpen) Driver() driver.Driver                            { return k.c.Driver() }

// Info returns the snapshot's description (its counts are owner-only).
func (r *Reader) Info() Info {
	i := r.info
	i.Columns = slices.Clone(i.Columns)
	return i
}

// Close releases the reader. Cursors still open keep the database until
// they close; new scans fail.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.active == 0 {
		return r.shut()
	}
	return nil
}

// shut releases the database and the cache file.
func (r *Reader) shut() error {
	if c := r.cache; c != nil {
		c.mu.Lock()
		c.resolved = true // no verification or write after the close
		if c.file != nil {
			c.file.close()
			c.file = nil
		}
		c.mu.Unlock()
	}
	return r.db.Close()
}

func (r *Reader) acquire() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("snapshot: the snapshot %s is closed", filepath.Base(r.path))
	}
	r.active++
	return nil
}

func (r *Reader) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active--
	if r.closed && r.active == 0 {
		r.shut()
	}
}

// Source returns the snapshot's rows with the given columns as features,
// in that order. A numeric column gives its values, clamped to its bounds
// when it has them; a categorical column gives its category's index
// (len(Categories) for "other"). The source implements rows.Labeled when
// the snapshot has a label (clamped to the label's bounds when given) and
// rows.Units when it has a user column.
//
// A pass reads the snapshot's row cache (cache.go) instead of its Parquet
// when the features are at least half of the columns and the cache is
// valid (the first such pass writes a missing one); the values are the
// same. A source of the numeric
// columns in schema order then also implements rows.Normed.
func (r *Reader) Source(features []string) (rows.Source, error) {
	return r.source(features, true)
}

// ParquetSource is Source reading the Parquet file only: it neither
// reads nor writes the row cache, for a single pass (the owner's notes at
// registration) that a cache would not repay.
func (r *Reader) ParquetSource(features []string) (rows.Source, error) {
	return r.source(features, false)
}

func (r *Reader) source(features []string, cache bool) (rows.Source, error) {
	if len(features) == 0 {
		return nil, errors.New("snapshot: a source needs at least one feature column")
	}
	s := &source{r: r, units: r.info.Users, cache: cache}
	for _, f := range features {
		i := slices.IndexFunc(r.info.Columns, func(c Column) bool { return c.Name == f })
		if i < 0 {
			return nil, fmt.Errorf("snapshot: the snapshot has no feature column %q", f)
		}
		s.cols = append(s.cols, r.info.Columns[i])
	}
	if r.info.Label != "" {
		l := r.info.LabelColumn
		s.label = &l
	}
	s.spec = newScanSpec(s)
	s.cscan = newCacheScan(s)
	switch {
	case s.label != nil && s.units > 0:
		return labeledUnitSource{s}, nil
	case s.label != nil:
		return labeledSource{s}, nil
	case s.units > 0:
		return unitSource{s}, nil
	}
	return s, nil
}

type source struct {
	r     *Reader
	cols  []Column // features
	label *Column
	units int
	spec  *scanSpec
	cache bool // passes may read the row cache
	cscan *cacheScan
}

type labeledSource struct{ *source }
type unitSource struct{ *source }
type labeledUnitSource struct{ *source }

func (labeledSource) HasLabels() bool     { return true }
func (labeledUnitSource) HasLabels() bool { return true }
func (s unitSource) NumUnits() int        { return s.units }
func (s labeledUnitSource) NumUnits() int { return s.units }
func (s *source) Dim() int                { return len(s.cols) }

// NumRows returns the snapshot's number of rows, which every pass of the
// source reads, without a pass: the count in its schema, which Open
// checked against the file's row groups (and the hash against the
// registration). It is private, as the rows are: a mechanism's input.
func (s *source) NumRows() int64 { return s.r.info.Rows }

// scanSpec is what a window scan converts: the value columns (features,
// then the label) and whether the unit index is read.
type scanSpec struct {
	vals  []valCol
	units bool
	// query returns the SQL of one window. It is built from the
	// registered column names and the snapshot path only.
	query func(w window) string
}

type valCol struct {
	categorical bool
	codes       map[string]float64 // category → index
	other       float64            // index of "other"
	clamp       bool
	lo, hi      float64
}

func newScanSpec(s *source) *scanSpec {
	sp := &scanSpec{units: s.units > 0}
	cols := slices.Clone(s.cols)
	if s.label != nil {
		cols = append(cols, *s.label)
	}
	sel := []string{"file_row_number"}
	for _, c := range cols {
		v := valCol{clamp: c.HasBounds, lo: c.Lo, hi: c.Hi}
		if c.Kind == Categorical {
			v.categorical, v.other = true, float64(len(c.Categories))
			v.codes = make(map[string]float64, len(c.Categories))
			for i, k := range c.Categories {
				v.codes[k] = float64(i)
			}
		}
		sp.vals = append(sp.vals, v)
		sel = append(sel, quoteIdent(c.Name))
	}
	if sp.units {
		sel = append(sel, unitColumn)
	}
	head := "SELECT " + strings.Join(sel, ", ") + " FROM read_parquet(" + quoteString(s.r.path) + ", file_row_number = true)"
	sp.query = func(w window) string {
		// Integers only: the window's bounds come from the file's row
		// groups. Row-group statistics of file_row_number let DuckDB read
		// only the groups of the window.
		return fmt.Sprintf("%s WHERE file_row_number >= %d AND file_row_number < %d", head, w.lo, w.hi)
	}
	return sp
}

// chunk is a run of rows of a window in columns: their row numbers, the
// value columns (categorical ones as indices) and the unit indices.
type chunk struct {
	n    int
	row  []int64
	val  [][]float64
	unit []int32
}

// windowScan reads one window's query result chunk by chunk; next returns
// io.EOF at its end. A chunk's slices stay valid until the next call.
type windowScan interface {
	next(c *chunk) error
	close() error
}

// Scan starts a pass over the rows, in the snapshot's order.
func (s *source) Scan(ctx context.Context) (rows.Cursor, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if file := s.useCache(ctx, true); file != nil {
		return s.scanCache(ctx, file)
	}
	if err := s.r.acquire(); err != nil {
		return nil, err
	}
	conn, err := s.r.db.Connect(ctx)
	if err != nil {
		s.r.release()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, s.r.errRead
	}
	return &cursor{s: s, ctx: ctx, conn: conn}, nil
}

type cursor struct {
	s    *source
	ctx  context.Context
	conn driver.Conn
	win  int        // next window to open
	ws   windowScan // the open window, or nil
	c    chunk
	off  int   // rows of c consumed
	row  int64 // row number of the next row
	done bool
	err  error // sticky failure
}

// Next fills dst with the next rows; see rows.Cursor.
func (c *cursor) Next(dst *rows.Batch) error {
	dst.N = 0
	if c.err != nil {
		return c.err
	}
	if c.conn == nil {
		return errors.New("snapshot: Next on a closed cursor")
	}
	if err := c.ctx.Err(); err != nil {
		return c.fail(err)
	}
	dim := c.s.Dim()
	room := dst.Cap(dim)
	if room < 1 {
		return rows.ErrDim
	}
	sp := c.s.spec
	for dst.N < room {
		if c.off == c.c.n {
			if c.done {
				break
			}
			if err := c.fill(); err != nil {
				return c.fail(err)
			}
			continue
		}
		k := min(room-dst.N, c.c.n-c.off)
		for j := range dim {
			v, col := sp.vals[j], c.c.val[j][c.off:c.off+k]
			x := dst.X[dst.N*dim+j:]
			for i, f := range col {
				if v.clamp {
					f = min(max(f, v.lo), v.hi)
				}
				x[i*dim] = f
			}
		}
		if c.s.label != nil && len(dst.Label) >= dst.N+k {
			v := sp.vals[dim]
			for i, f := range c.c.val[dim][c.off : c.off+k] {
				if v.clamp {
					f = min(max(f, v.lo), v.hi)
				}
				dst.Label[dst.N+i] = f
			}
		}
		if sp.units && len(dst.Unit) >= dst.N+k {
			copy(dst.Unit[dst.N:dst.N+k], c.c.unit[c.off:c.off+k])
		}
		c.off += k
		dst.N += k
	}
	if dst.N == 0 {
		return io.EOF
	}
	return nil
}

// fill reads the next chunk into c.c, opening windows as needed, and
// checks that its rows are the next ones of the file: the order is then
// verified, not assumed.
func (c *cursor) fill() error {
	for {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		if c.ws == nil {
			if c.win == len(c.s.r.windows) {
				if c.row != c.s.r.info.Rows {
					return errors.New("rows missing")
				}
				c.done, c.c.n, c.off = true, 0, 0
				return nil
			}
			ws, err := openWindow(c.ctx, c.conn, c.s.spec.query(c.s.r.windows[c.win]), c.s.spec)
			if err != nil {
				return err
			}
			c.ws = ws
			c.win++
		}
		err := c.ws.next(&c.c)
		if err == io.EOF {
			ws := c.ws
			c.ws = nil
			if err := ws.close(); err != nil {
				return err
			}
			if c.row != c.s.r.windows[c.win-1].hi {
				return errors.New("rows missing")
			}
			c.c.n, c.off = 0, 0
			continue
		}
		if err != nil {
			return err
		}
		for i, r := range c.c.row[:c.c.n] {
			if r != c.row+int64(i) {
				return errors.New("rows out of order")
			}
		}
		c.row += int64(c.c.n)
		c.off = 0
		if c.c.n > 0 {
			return nil
		}
	}
}

// fail turns any failure into ctx's error or the fixed reading error:
// DuckDB's messages may quote values.
func (c *cursor) fail(err error) error {
	if cerr := c.ctx.Err(); cerr != nil {
		c.err = cerr
	} else {
		c.err = c.s.r.errRead
	}
	c.release()
	return c.err
}

func (c *cursor) release() {
	if c.ws != nil {
		c.ws.close()
		c.ws = nil
	}
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
		c.s.r.release()
	}
}

// Close releases the pass's DuckDB connection and results.
func (c *cursor) Close() error {
	c.release()
	if c.err == nil {
		c.err = errors.New("snapshot: Next on a closed cursor")
	}
	return nil
}
