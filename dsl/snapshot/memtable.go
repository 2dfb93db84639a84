package snapshot

// Memory tables (issue 27, "one path"): a dataset held in the registry's
// memory format, or a cell's synthetic data, is loaded into a DuckDB of
// its own so that the column analyses' printed statements run on it as on
// a snapshot of the same rows. The table has the columns, types and row
// order a snapshot's table reference (Reader.Table) has for those rows:
// a DOUBLE per numeric column and for the label, and on user-level data
// the dense user index (INTEGER, as the snapshot's unit column) under the
// registered user column's name and each row's position as
// sqlplan.RowColumn (BIGINT, as file_row_number), so that the same
// statement gives the same exact aggregates. The rows may be private: the
// database is locked down before any row goes in, and Query's failures
// have a fixed text, as a snapshot's.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// memoryTableName is the table a memory table's rows are held in.
const memoryTableName = "__pn_memory"

// MemoryRows are the rows of a dataset held in memory, column by column
// as the registry's memory format has them.
type MemoryRows struct {
	// Columns name the numeric columns; X holds N rows of them, row
	// after row.
	Columns []string
	X       []float64
	N       int
	// Label names the label column (empty for none); Y holds its N values.
	Label string
	Y     []float64
	// UserColumn names the user column of user-level data (empty for
	// row-level data); Users holds each row's dense user index.
	UserColumn string
	Users      []int32
}

// MemoryTable is an in-memory, locked-down DuckDB holding one dataset's
// rows. It implements release's SQLReader.
type MemoryTable struct {
	c  *duckdb.Connector
	db *sql.DB
}

// OpenMemoryTable loads m into a new in-memory DuckDB. Column names
// must be distinct (and distinct from sqlplan.RowColumn on user-level
// data), and the slices must have m.N rows.
func OpenMemoryTable(ctx context.Context, m *MemoryRows) (*MemoryTable, error) {
	d := len(m.Columns)
	switch {
	case m.N < 0 || len(m.X) != m.N*d:
		return nil, fmt.Errorf("snapshot: a memory table of %d rows has %d values for %d columns", m.N, len(m.X), d)
	case m.Label != "" && len(m.Y) != m.N:
		return nil, fmt.Errorf("snapshot: a memory table of %d rows has %d labels", m.N, len(m.Y))
	case m.UserColumn != "" && len(m.Users) != m.N:
		return nil, fmt.Errorf("snapshot: a memory table of %d rows has %d users", m.N, len(m.Users))
	}
	names := append([]string(nil), m.Columns...)
	defs := make([]string, 0, d+3)
	for _, c := range m.Columns {
		defs = append(defs, quoteIdent(c)+" DOUBLE")
	}
	if m.Label != "" {
		names = append(names, m.Label)
		defs = append(defs, quoteIdent(m.Label)+" DOUBLE")
	}
	if m.UserColumn != "" {
		names = append(names, m.UserColumn, sqlplan.RowColumn)
		defs = append(defs, quoteIdent(m.UserColumn)+" INTEGER", sqlplan.RowColumn+" BIGINT")
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" || seen[n] {
			return nil, fmt.Errorf("snapshot: a memory table's column %q is empty or repeated", n)
		}
		seen[n] = true
	}
	c, err := openMemoryDuck()
	if err != nil {
		return nil, fmt.Errorf("snapshot: opening a memory table: %w", err)
	}
	t := &MemoryTable{c: c, db: sql.OpenDB(c)}
	if err := t.load(ctx, m, defs); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// openMemoryDuck opens an in-memory DuckDB as openDuck does, but without
// openDuck's memory limit and with nowhere to spill: the rows are already
// held by the process, and a table that cannot be held must fail the
// same way whatever the limit would have let through.
func openMemoryDuck() (*duckdb.Connector, error) {
	q := url.Values{}
	q.Set("threads", strconv.Itoa(runtime.GOMAXPROCS(0)))
	q.Set("autoinstall_known_extensions", "false")
	q.Set("autoload_known_extensions", "false")
	q.Set("preserve_insertion_order", "true")
	q.Set("temp_directory", "")
	q.Set("max_temp_directory_size", "0B")
	return duckdb.NewConnector("?"+q.Encode(), nil)
}

func (t *MemoryTable) load(ctx context.Context, m *MemoryRows, defs []string) error {
	// Locked first: no statement may reach a file or the network.
	if err := lockDown(ctx, t.c, nil, nil); err != nil {
		return fmt.Errorf("snapshot: locking a memory table: %w", err)
	}
	conn, err := t.c.Connect(ctx)
	if err != nil {
		return fmt.Errorf("snapshot: a memory table: %w", err)
	}
	defer conn.Close()
	ex := conn.(driver.ExecerContext)
	if _, err := ex.ExecContext(ctx, "CREATE TABLE "+memoryTableName+" ("+strings.Join(defs, ", ")+")", nil); err != nil {
		return fmt.Errorf("snapshot: creating a memory table: %w", err)
	}
	ap, err := duckdb.NewAppenderFromConn(conn, "", memoryTableName)
	if err != nil {
		return fmt.Errorf("snapshot: a memory table: %w", err)
	}
	d := len(m.Columns)
	vals := make([]driver.Value, len(defs))
	for i := range m.N {
		for j, v := range m.X[i*d : (i+1)*d] {
			vals[j] = v
		}
		k := d
		if m.Label != "" {
			vals[k] = m.Y[i]
			k++
		}
		if m.UserColumn != "" {
			vals[k], vals[k+1] = m.Users[i], int64(i)
		}
		if err := ap.AppendRow(vals...); err != nil {
			ap.Close()
			return errors.New("snapshot: filling a memory table failed") // the driver's message may quote a value
		}
	}
	if err := ap.Close(); err != nil {
		return errors.New("snapshot: filling a memory table failed")
	}
	return nil
}

// Table is the reference the printed statements read the rows through.
func (t *MemoryTable) Table() string { return memoryTableName }

// Query runs stmt on the rows and returns every row of its result as
// Reader.Query does. Any failure is ErrQuery.
func (t *MemoryTable) Query(ctx context.Context, stmt string) ([][]any, error) {
	rs, err := t.db.QueryContext(ctx, stmt)
	if err != nil {
		return nil, ErrQuery
	}
	defer rs.Close()
	_, out, err := scanRows(rs)
	if err != nil {
		return nil, ErrQuery
	}
	return out, nil
}

// Close closes the database; its rows are gone with it.
func (t *MemoryTable) Close() error {
	err := t.db.Close()
	if cerr := t.c.Close(); err == nil {
		err = cerr
	}
	return err
}
